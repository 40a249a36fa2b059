"""kr8s, under ``KubeCluster``, on API servers older than Kubernetes 1.27.

kr8s 0.20.15 finds a resource's class by the ``singularName`` the API server's discovery gives
(kr8s/_api.py ``async_lookup_kind`` returns ``f"{resource['singularName']}/{version}"``).
Before 1.27 the API server leaves it empty for every built-in resource (the Kubernetes 1.20
node of tests/cluster answers ``{"name": "pods", "singularName": ""}``), so ``get("pods")``
yields objects of a nameless class and ``Service.ready_pods`` raises ``TypeError: Unexpected
type <class 'list'> returned from API`` (kr8s/_objects.py). ``KubeCluster`` calls it while
it waits for the scheduler's Service (kubecluster.py ``wait_for_service``) and kr8s again
before each port-forward: every person's cluster on a 1.20-1.26 workload cluster would fail.
kr8s-org/kr8s#652 reports exactly this with ``KubeCluster`` on 1.26 and not on 1.27; the
maintainers support only current Kubernetes releases and left it (a fix, kr8s-org/kr8s#651,
was closed unmerged).

The shim fills an empty ``singularName`` with the lower-cased kind, as kopf does for the same
gap (nolar/kopf#629: "fall back to lowercased kinds for empty singulars") and as later API
servers give it for built-in kinds; a name the server gives is left alone. It wraps kr8s's
one uncached discovery call, so its six-hour cache holds the filled answer.

It goes in only for a server that needs it (:func:`apply_for`: the runner asks the server's
core discovery first), so that on the clusters people run today (VKS: Kubernetes 1.27 and
later) kr8s runs as upstream ships it.
"""
from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

_MARK = "_dask_tkg_fills_singular_names"


def fill_singular_names(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The discovery answer with each empty ``singularName`` set to the lower-cased kind."""
    return [r if r.get("singularName") else {**r, "singularName": str(r.get("kind", "")).lower()}
            for r in resources]


def lacks_singular_names(resources: list[dict[str, Any]]) -> bool:
    """Whether a discovery answer leaves a resource's ``singularName`` empty (subresources such
    as ``pods/log`` have none on any server, and are not looked up by kind)."""
    return any(not r.get("singularName") for r in resources if "/" not in str(r.get("name", "")))


def applied() -> bool:
    from kr8s._api import Api

    return bool(getattr(Api.async_api_resources_uncached, _MARK, False))


def apply_for(api_client: Any) -> bool:
    """Apply the shim when the server behind ``api_client`` (a kubernetes ``ApiClient``) gives no
    singular names for its core resources; return whether the shim is in."""
    from kubernetes import client

    found = client.CoreV1Api(api_client).get_api_resources(_request_timeout=30).resources or []
    core = [{"name": r.name, "singularName": r.singular_name, "kind": r.kind} for r in found]
    if lacks_singular_names(core):
        logger.info("the API server gives no singular names (Kubernetes before 1.27): kr8s's lookup filled in")
        apply()
    return applied()


def apply() -> None:
    """Wrap ``kr8s.Api.async_api_resources_uncached`` once (idempotent)."""
    from kr8s._api import Api

    original = Api.async_api_resources_uncached
    if getattr(original, _MARK, False):
        return

    async def async_api_resources_uncached(self) -> list[dict]:
        return fill_singular_names(await original(self))

    setattr(async_api_resources_uncached, _MARK, True)
    async_api_resources_uncached.__doc__ = original.__doc__
    Api.async_api_resources_uncached = async_api_resources_uncached
