"""The access list and storage limits of a vSphere 8/9 namespace that ``vsphere.Namespace`` owns.

pulumi-vsphere's ``Namespace`` (terraform-provider-vsphere's ``vsphere_namespace``) creates
the namespace with ``POST /api/vcenter/namespaces/instances/v2``, whose ``CreateSpecV2``
carries no access list and storage policies without limits (vmware/govmomi@fd061606:
vapi/namespace/namespace_v2.go, NamespaceInstanceCreateSpecV2). This resource adds both
once the namespace exists, with

- ``GET /api/vcenter/namespaces/instances/{namespace}`` (``Instances.Info``: ``access_list``,
  ``storage_specs``) and
- ``PATCH /api/vcenter/namespaces/instances/{namespace}`` (``Instances.UpdateSpec``:
  ``access_list`` of ``Instances.Access`` {subject_type USER|GROUP, subject, domain, role
  OWNER|EDIT|VIEW, identity_provider (8.0.0.1, optional)}; ``storage_specs`` of
  ``Instances.StorageSpec`` {policy, limit in MiB}; "missing or null fields in spec will
  leave those parts of configuration as-is").

Source: vSphere Automation API, latest (9.x) reference, "Vcenter Namespaces Instances
update" (developer.broadcom.com/xapis/vsphere-automation-api/latest/api/vcenter/namespaces/
instances/namespace/patch), an operation "added in vSphere API 7.0.0.0" whose UpdateSpec
still carries both lists; terraform-provider-vsphere updates a vSphere 8 namespace with the
same PATCH (vmware/terraform-provider-vsphere@b45b5b41: vsphere/resource_vsphere_namespace.go,
resourceVSphereNamespaceUpdate -> govmomi ``UpdateNamespace``). The per-subject Access
service (``POST/PUT/DELETE .../instances/{namespace}/access/{domain}/{subject}?type=``,
``Access.CreateSpec`` {role, identity_provider}) exists as well; one PATCH carries both
lists, as the vSphere 7 resource (``namespace_rest``) does.

Ownership: the namespace, its policies and VM classes belong to ``vsphere.Namespace``. This
resource owns only the program's access entries and the limits on the program's policies:
a list in the UpdateSpec replaces the server's, so the PATCH sends the server's lists with
just those entries changed, and delete takes them out again, leaving the namespace.
pulumi-vsphere's update PATCHes ``storage_specs`` without limits whenever it changes the
namespace, so ``namespace_spec`` (what ``vsphere.Namespace`` holds) is an input: a change
there re-applies the limits in the same deployment.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic as dyn

from ..access import VCenterAccess
from .base import PollingVCenterProvider, VCenterResource, plain_list
from .namespace_entries import (
    ACCESS_FIELDS,
    access_key,
    canonical,
    is_namespace_name,
    merge_entries,
    sorted_access,
    storage_entry,
)
from .namespace_rest import NamespaceClient
from .session import VCenterConnection, VCenterError, changed_keys, is_unknown, rest_api

logger = logging.getLogger(__name__)

SPEC_KEYS = ("access_list", "storage_limits", "namespace_spec")
REPLACE_KEYS = ("namespace", "supervisor")


@dataclass(frozen=True)
class AccessAndLimits:
    """What the program wants on the namespace: its access entries and per-policy limits (MiB)."""

    namespace: str
    access_list: tuple[Mapping[str, str], ...] = ()
    limits: tuple[Mapping[str, Any], ...] = ()  # {"policy", "limit"}, sorted by policy

    @property
    def limit_by_policy(self) -> dict[str, int]:
        return {entry["policy"]: entry["limit"] for entry in self.limits}

    def values(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "access_list": [dict(a) for a in self.access_list],
            "storage_limits": [dict(s) for s in self.limits],
        }


def _limit(entry: Mapping[str, Any], i: int) -> dict[str, Any]:
    out = storage_entry(entry, i)
    if "limit" not in out:
        raise ValueError(f"storage_limits[{i}].limit: a limit in MiB is required (omit the policy for no limit)")
    return out


def build_wanted(props: Mapping[str, Any]) -> AccessAndLimits:
    """Validate provider properties into :class:`AccessAndLimits`; ``ValueError`` names the property."""
    name = props.get("namespace") or ""
    if not is_namespace_name(name):
        raise ValueError(f"namespace: {name!r} must be an RFC 1123 label of at most 63 characters")
    access = sorted_access(props.get("access_list") or [])
    limits = sorted((_limit(s, i) for i, s in enumerate(props.get("storage_limits") or [])),
                    key=lambda s: s["policy"])
    return AccessAndLimits(namespace=name, access_list=tuple(access), limits=tuple(limits))


def _storage_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A StorageSpec as sent: the policy, and the limit only when there is one."""
    limit = entry.get("limit")
    return {"policy": entry["policy"], **({"limit": limit} if limit is not None else {})}


def limited_storage(server: Sequence[Mapping[str, Any]], limits: Mapping[str, int],
                    limited_before: Iterable[str]) -> list[dict[str, Any]]:
    """The server's storage specs with the program's limits set and the limits it dropped
    cleared; every policy stays (the policies belong to vsphere.Namespace)."""
    dropped = set(limited_before) - set(limits)
    out = []
    for entry in server:
        policy = entry["policy"]
        if policy in limits:
            out.append({"policy": policy, "limit": limits[policy]})
        elif policy in dropped:
            out.append({"policy": policy})
        else:
            out.append(_storage_entry(entry))
    present = {entry["policy"] for entry in server}
    out += [{"policy": policy, "limit": limit} for policy, limit in limits.items() if policy not in present]
    return out


def update_body(info: Mapping[str, Any], wanted: AccessAndLimits,
                previous: AccessAndLimits | None = None) -> dict[str, Any]:
    """The ``Instances.UpdateSpec`` that brings ``info`` to ``wanted``: only the lists that change."""
    body: dict[str, Any] = {}
    server_access = [dict(a) for a in info.get("access_list") or []]
    access = merge_entries(server_access, wanted.access_list, previous.access_list if previous else (), access_key)
    if canonical(access) != canonical(server_access):
        body["access_list"] = access
    server_storage = [_storage_entry(s) for s in info.get("storage_specs") or []]
    limited_before = previous.limit_by_policy if previous else {}
    storage = limited_storage(server_storage, wanted.limit_by_policy, limited_before)
    if canonical(storage) != canonical(server_storage):
        body["storage_specs"] = storage
    return body


def owned_on_server(info: Mapping[str, Any], wanted: AccessAndLimits) -> AccessAndLimits:
    """What the server holds of the program's entries (a refresh sees a removed entry or limit)."""
    keys = {access_key(a) for a in wanted.access_list}
    access = [{k: a.get(k) for k in ACCESS_FIELDS} for a in info.get("access_list") or [] if access_key(a) in keys]
    policies = set(wanted.limit_by_policy)
    limits = [{"policy": s["policy"], "limit": s["limit"]}
              for s in info.get("storage_specs") or [] if s["policy"] in policies and s.get("limit") is not None]
    return build_wanted({"namespace": wanted.namespace, "access_list": access, "storage_limits": limits})


class NamespaceAccessAndLimitsProvider(PollingVCenterProvider):
    """Sets, updates and removes the program's access entries and limits on one namespace."""

    def _outs(self, props: Mapping[str, Any], applied: AccessAndLimits) -> dict[str, Any]:
        outs = self.stored(props, "supervisor", "namespace_spec")
        outs.update(applied.values())
        return outs

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> dyn.CheckResult:
        return self.validated(news, "namespace", build_wanted)

    def _running_info(self, client: NamespaceClient, conn: VCenterConnection, namespace: str) -> dict[str, Any]:
        info = client.get(namespace)
        if info is None:
            raise VCenterError(f"namespace {namespace!r} does not exist on vCenter {conn.server}: vsphere.Namespace"
                               " creates it before its access list and limits are set; run `pulumi refresh`")
        if info.get("config_status") == "RUNNING":
            return info
        return client.wait_running(namespace, self.timeout_s, self.poll_s)

    def _apply(self, props: Mapping[str, Any], wanted: AccessAndLimits,
               previous: AccessAndLimits | None) -> None:
        conn = self.connection(props)
        with rest_api(conn, f"setting the access list and storage limits of namespace {wanted.namespace!r}") as http:
            client = NamespaceClient(http, conn.base_url)
            body = update_body(self._running_info(client, conn, wanted.namespace), wanted, previous)
            if body:
                client.patch(wanted.namespace, body)
                client.wait_running(wanted.namespace, self.timeout_s, self.poll_s)
                logger.info("namespace %r: set %s", wanted.namespace, ", ".join(sorted(body)))

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        wanted = build_wanted(props)
        self._apply(props, wanted, None)
        return dyn.CreateResult(f"{wanted.namespace}:access-and-limits", self._outs(props, wanted))

    def read(self, id_: str, props: dict[str, Any]) -> dyn.ReadResult:
        wanted = build_wanted(props)
        conn = self.connection(props)
        with rest_api(conn, f"reading namespace {wanted.namespace!r}") as http:
            info = NamespaceClient(http, conn.base_url).get(wanted.namespace)
        if info is None:
            return dyn.ReadResult("", {})
        return dyn.ReadResult(id_, self._outs(props, owned_on_server(info, wanted)))

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        def canonical(props: Mapping[str, Any]) -> dict[str, Any]:
            try:
                return {**props, **build_wanted(props).values()}
            except (ValueError, TypeError, KeyError):
                return dict(props)

        old_values, new_values = canonical(olds), canonical(news)
        new_values.update({k: news[k] for k in news if is_unknown(news[k])})
        replaces = changed_keys(old_values, new_values, REPLACE_KEYS)
        changes = changed_keys(old_values, new_values, SPEC_KEYS)
        return self.diff_result(olds, news, replaces, changes)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        wanted = build_wanted(news)
        self._apply(news, wanted, build_wanted(olds))
        return dyn.UpdateResult(self._outs(news, wanted))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """Take the program's access entries and limits out; the namespace stays (vsphere.Namespace's)."""
        owned = build_wanted(props)
        conn = self.connection(props)
        with rest_api(conn, f"removing the access list and storage limits of namespace {owned.namespace!r}") as http:
            client = NamespaceClient(http, conn.base_url)
            info = client.get(owned.namespace)
            if info is None:
                logger.info("namespace %r is already gone", owned.namespace)
                return
            body = update_body(info, AccessAndLimits(owned.namespace), owned)
            if body:
                client.patch(owned.namespace, body)
                client.wait_running(owned.namespace, self.timeout_s, self.poll_s)


class NamespaceAccessAndLimits(VCenterResource, module="vsphere", name="NamespaceAccessAndLimits"):
    """The access list and per-policy storage limits of a vSphere 8/9 namespace.

    ``access_list`` is ``[{"subject_type": USER|GROUP, "subject", "domain", "role": OWNER|EDIT|VIEW}]``;
    ``storage_limits`` is ``[{"policy": <SPBM profile id>, "limit": <MiB>}]``; ``supervisor`` is
    the namespace's Supervisor (a new one replaces this resource with the namespace);
    ``namespace_spec`` is what vsphere.Namespace holds (a change re-applies the limits).
    """

    namespace: pulumi.Output[str]
    access_list: pulumi.Output[list[dict[str, str]]]
    storage_limits: pulumi.Output[list[dict[str, Any]]]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *, namespace: pulumi.Input[str],
                 supervisor: pulumi.Input[str], access_list: pulumi.Input[Sequence[Mapping[str, str]]] = (),
                 storage_limits: pulumi.Input[Sequence[Mapping[str, Any]]] = (),
                 namespace_spec: pulumi.Input[Any] = None, vcenter: VCenterAccess) -> None:
        props = {
            "namespace": namespace,
            "supervisor": supervisor,
            "access_list": plain_list(access_list),
            "storage_limits": plain_list(storage_limits),
            "namespace_spec": namespace_spec,
        }
        super().__init__(NamespaceAccessAndLimitsProvider(), name, opts, props, vcenter)
