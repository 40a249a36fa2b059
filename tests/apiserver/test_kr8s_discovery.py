"""kr8s (under dask-kubernetes' ``KubeCluster``, which a person's own cluster runs) against both
servers' real discovery: on the current stacks' 1.33 it finds a built-in kind's class as
upstream ships it, and the runner leaves it unpatched; on the paper's 1.20, whose discovery names
no singular, upstream's lookup yields a nameless kind and the runner's shim goes in
(workloads/cluster/kr8s_compat.py, kr8s-org/kr8s#652)."""
from __future__ import annotations

import asyncio

import pytest

from tests.kube.binaries import CURRENT, PAPER
from workloads.cluster import kr8s_compat

pytestmark = pytest.mark.apiserver


@pytest.fixture
def kr8s_as_shipped(monkeypatch):
    """kr8s's discovery call as upstream ships it, put back after the test (a shim applied here
    must not outlive it)."""
    from kr8s._api import Api

    monkeypatch.setattr(Api, "async_api_resources_uncached", Api.async_api_resources_uncached)
    assert not kr8s_compat.applied(), "kr8s was already patched before this test"
    return Api


def lookup_pods(server) -> tuple[str, str, bool]:
    import kr8s.asyncio

    async def lookup():
        api = await kr8s.asyncio.api(kubeconfig=str(server.kubeconfig))
        return await api.async_lookup_kind("pods", skip_cache=True)

    return asyncio.run(lookup())


def test_on_the_current_server_kr8s_runs_unpatched(kube_apiserver, kr8s_as_shipped):
    assert kube_apiserver.version["gitVersion"] == CURRENT.version
    assert lookup_pods(kube_apiserver)[0] == "pod/v1"  # upstream's lookup works here as shipped
    assert kr8s_compat.apply_for(kube_apiserver.api_client) is False
    assert not kr8s_compat.applied()


def test_on_the_paper_server_the_shim_goes_in_and_the_lookup_works(paper_apiserver, kr8s_as_shipped):
    assert paper_apiserver.version["gitVersion"] == PAPER.version
    assert lookup_pods(paper_apiserver)[0] == "/v1"  # the defect the shim is for: no class name
    assert kr8s_compat.apply_for(paper_apiserver.api_client) is True
    assert lookup_pods(paper_apiserver)[0] == "pod/v1"
