"""KubeCluster's dial of a TLS-only scheduler (workloads/cluster/kube_tls.py), with a real
local distributed scheduler listening on TLS with a person's cluster's certificate: upstream's
own ``rpc(address)``, as ``KubeCluster`` calls it (no connection arguments), reaches it under
the ``kubetls://`` scheme with the runner's client certificate and the scheduler's name
checked; upstream's ``tcp://`` cannot."""
from __future__ import annotations

import asyncio

import pytest
from dask_kubernetes.operator import networking
from distributed import Scheduler
from distributed.comm.core import FatalCommClosedError
from distributed.core import rpc
from distributed.security import Security

from workloads.cluster import endpoint, kr8s_compat, kube_tls, own_spec, own_tls

NAME = own_spec.scheduler_host("alice-run", "dask-alice")


def pems() -> dict[str, str]:
    return own_tls.issue(own_spec.scheduler_names("alice-run", "dask-alice"))


async def tls_scheduler(material: dict[str, str]) -> Scheduler:
    security = Security(tls_ca_file=material["ca.crt"], tls_scheduler_cert=material["scheduler.crt"],
                        tls_scheduler_key=material["scheduler.key"], require_encryption=True)
    return await Scheduler(security=security, protocol="tls", host="127.0.0.1", port=0,
                           dashboard_address="127.0.0.1:0")


def client_security(material: dict[str, str]):
    return endpoint.security_from_pems(material["ca.crt"], material["client.crt"], material["client.key"])


async def versions(address: str, timeout: float = 5) -> dict:
    async with rpc(address, timeout=timeout) as scheduler:
        return await asyncio.wait_for(scheduler.versions(), timeout)


def test_upstreams_rpc_reaches_a_tls_scheduler_under_the_runner_s_scheme_and_checks_its_name():
    material = pems()

    async def main():
        async with await tls_scheduler(material) as scheduler:
            location = scheduler.address.split("://", 1)[1]  # 127.0.0.1:<port>: a name the certificate lacks
            address = kube_tls.register(location, client_security(material).for_server(NAME))
            try:
                assert address == f"kubetls://{location}"
                found = await versions(address)
                assert found["packages"]["distributed"]
                await asyncio.wait_for(networking.wait_for_scheduler_comm(address), 10)  # upstream's own wait
                kube_tls.register(location, client_security(material).for_server("another-scheduler.dask-bob"))
                with pytest.raises(OSError) as refused:  # rpc says why in the cause
                    await versions(address)
                assert isinstance(refused.value.__cause__, FatalCommClosedError)
                assert "does not match" in kube_tls.LAST_ERRORS[location]
                kube_tls.register(location, client_security(pems()).for_server(NAME))  # another cluster's CA
                with pytest.raises(OSError):
                    await versions(address)
            finally:
                kube_tls.unregister(location)
            with pytest.raises(ValueError, match="no TLS credentials"):
                await versions(address)
            with pytest.raises(OSError):  # what KubeCluster dials without the runner: tcp:// to a TLS listener
                await versions(f"tcp://{location}", timeout=2)

    asyncio.run(main())


def test_the_subclass_is_upstreams_kubecluster_with_two_hooks():
    from dask_kubernetes.operator import KubeCluster

    overridden = {name for name, value in vars(kube_tls.TlsKubeCluster).items() if callable(value)}
    assert issubclass(kube_tls.TlsKubeCluster, KubeCluster)
    assert overridden == {"__init__", "_wait_for_controller", "_get_scheduler_address", "_close", "last_error"}
    assert all(hasattr(KubeCluster, name) for name in overridden - {"last_error"})


def test_kr8s_finds_built_in_kinds_on_a_server_that_gives_no_singular_names():
    """A 1.20 API server's discovery (empty ``singularName``, as tests/cluster's node answers):
    kr8s's lookup of ``pods`` names the ``Pod`` class once the runner's shim is in (kr8s 0.20.15
    alone answers ``/v1``, and ``Service.ready_pods`` then raises TypeError)."""
    from kr8s._api import Api
    from kr8s._objects import Pod, get_class

    discovery = [{"version": "v1", "name": "pods", "singularName": "", "kind": "Pod", "namespaced": True},
                 {"version": "kubernetes.dask.org/v1", "name": "daskclusters", "singularName": "daskcluster",
                  "kind": "DaskCluster", "namespaced": True}]

    class Server(Api):
        def __init__(self):  # no kubeconfig: only discovery is asked
            pass

    async def uncached(self):
        return [dict(r) for r in discovery]

    original = Api.async_api_resources_uncached
    assert not kr8s_compat.applied(), "importing the runner's KubeCluster must not patch kr8s"
    try:
        Api.async_api_resources_uncached = uncached
        kr8s_compat.apply()
        kind, plural, namespaced = asyncio.run(Server().async_lookup_kind("pods", skip_cache=True))
    finally:
        Api.async_api_resources_uncached = original
    assert (kind, plural, namespaced) == ("pod/v1", "pods", True)
    assert issubclass(get_class(kind), Pod)
    assert kr8s_compat.fill_singular_names(discovery)[1]["singularName"] == "daskcluster"


# /api/v1 discovery as each server answers it (trimmed): 1.20 names no built-in kind's singular,
# 1.27 and later name every one; subresources have none on either.
DISCOVERY_1_20 = [{"name": "pods", "singularName": "", "kind": "Pod"},
                  {"name": "pods/log", "singularName": "", "kind": "Pod"}]
DISCOVERY_1_33 = [{"name": "pods", "singularName": "pod", "kind": "Pod"},
                  {"name": "pods/log", "singularName": "", "kind": "Pod"}]


def test_only_a_server_without_singular_names_needs_the_shim():
    assert kr8s_compat.lacks_singular_names(DISCOVERY_1_20)
    assert not kr8s_compat.lacks_singular_names(DISCOVERY_1_33)
