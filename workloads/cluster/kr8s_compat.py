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
"""
from __future__ import annotations

from typing import Any

_MARK = "_dask_tkg_fills_singular_names"


def fill_singular_names(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The discovery answer with each empty ``singularName`` set to the lower-cased kind."""
    return [r if r.get("singularName") else {**r, "singularName": str(r.get("kind", "")).lower()}
            for r in resources]


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
