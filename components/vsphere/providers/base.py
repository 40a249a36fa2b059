"""What every vCenter dynamic resource shares: one connection argument, the password kept
secret, and the provider's plumbing around its own spec.

Each resource takes the connection as one ``vcenter`` argument (:class:`VCenterAccess`) and
stores it among its inputs next to its spec, because a dynamic provider holds no live
connection: every call logs in again from its properties (``session``). Those inputs echo
into the outputs, so the password is a secret input and a secret output.

Pulumi pickles a provider into its resource's ``__provider`` input by module, class name and
instance attributes (``pulumi.dynamic.dynamic.serialize_provider``, pulumi 3.x); these bases
add no instance attribute of their own, so a provider pickles the same whatever its base.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi.dynamic as dyn

from ..access import VCenterAccess
from .session import CONNECTION_KEYS, VCenterConnection, changed_keys, is_unknown

logger = logging.getLogger(__name__)


class VCenterProvider(dyn.ResourceProvider):
    """A provider that reaches vCenter from the connection stored among its properties."""

    @staticmethod
    def connection(props: Mapping[str, Any]) -> VCenterConnection:
        """The connection the properties hold (every call logs in anew)."""
        return VCenterConnection.from_props(props)

    @staticmethod
    def stored(props: Mapping[str, Any], *keys: str) -> dict[str, Any]:
        """The connection (and ``keys``) of ``props``, kept in the outputs for later calls."""
        return {k: props.get(k) for k in (*CONNECTION_KEYS, *keys)}

    @staticmethod
    def validated(news: Mapping[str, Any], key: str, validate: Callable[[Mapping[str, Any]], Any]) -> dyn.CheckResult:
        """``check``: ``validate`` the known inputs; a ``ValueError`` fails on ``key``."""
        try:
            if not any(is_unknown(v) for v in news.values()):
                validate(news)
        except ValueError as exc:
            return dyn.CheckResult(dict(news), [dyn.CheckFailure(key, str(exc))])
        return dyn.CheckResult(dict(news), [])

    @staticmethod
    def diff_result(olds: Mapping[str, Any], news: Mapping[str, Any], replaces: list[str], changes: Sequence[str],
                    **options: Any) -> dyn.DiffResult:
        """``diff``: a new connection is a change too; it is stored for later calls, nothing on vCenter."""
        reconnect = changed_keys(olds, news, CONNECTION_KEYS)
        return dyn.DiffResult(changes=bool(replaces or changes or reconnect), replaces=replaces, **options)

    @staticmethod
    def leaves_adopted(props: Mapping[str, Any], what: str) -> bool:
        """``delete``: whether ``what`` was adopted (found, not created by this stack), and so stays."""
        if props.get("adopted"):
            logger.info("%s was adopted, not created by this stack: leaving it", what)
            return True
        return False


class PollingVCenterProvider(VCenterProvider):
    """A provider that waits on vCenter (a namespace, a task, a library's sync): ``timeout_s``
    bounds each wait and ``poll_s`` spaces its reads; tests pass short ones."""

    TIMEOUT_S = 600.0
    POLL_S = 5.0

    def __init__(self, timeout_s: float | None = None, poll_s: float | None = None):
        super().__init__()
        self.timeout_s = self.TIMEOUT_S if timeout_s is None else timeout_s
        self.poll_s = self.POLL_S if poll_s is None else poll_s


class VCenterResource(dyn.Resource):
    """A dynamic resource on one vCenter: its spec's properties and the connection's.

    Subclasses name their type (``module="vsphere", name=...``) and pass their provider,
    their spec's properties (outputs the provider fills in declared as ``None``) and ``vcenter``.
    """

    def __init__(self, provider: VCenterProvider, name: str, opts: pulumi.ResourceOptions | None,
                 props: Mapping[str, Any], vcenter: VCenterAccess) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["password"])
        super().__init__(provider, name, {**props, **vcenter.inputs()}, pulumi.ResourceOptions.merge(opts, secret))


def plain_list(value: Any) -> Any:
    """A list or tuple as a list (what the properties hold); an Output or ``None`` as it is."""
    return list(value) if isinstance(value, (list, tuple)) else value
