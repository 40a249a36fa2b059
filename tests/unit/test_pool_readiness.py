"""The GPU-pool wait's pure parts: the kubeconfig it reads, a MachineDeployment's readiness, the
provider's diff. The reads themselves run against a real API server in
tests/apiserver/test_gpu_pools_ready.py."""
from __future__ import annotations

import base64

import pytest
import yaml

from components.cluster.providers.kube_api import KubeconfigError, parse_kubeconfig
from components.cluster.providers.pool_readiness import GpuPoolsReadyProvider, pool_state

CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def config(user: dict, cluster: dict | None = None, current: str = "sv") -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": "c", "cluster": cluster or {
            "server": "https://10.0.0.1:6443/", "certificate-authority-data": base64.b64encode(CA.encode()).decode()}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "sv", "context": {"cluster": "c", "user": "u", "namespace": "dask"}}]})


def test_the_current_context_gives_server_ca_and_token():
    target = parse_kubeconfig(config({"token": "t0k"}))
    assert (target.server, target.ca_pem, target.token, target.insecure) == ("https://10.0.0.1:6443", CA, "t0k", False)
    assert "t0k" not in repr(target)


def test_insecure_skip_tls_verify_is_read():
    target = parse_kubeconfig(config({"token": "t"}, {"server": "https://s:6443", "insecure-skip-tls-verify": True}))
    assert target.insecure and target.ca_pem is None


@pytest.mark.parametrize("text, expected", [
    (config({"exec": {"command": "kubectl-vsphere"}}), "authenticates through 'exec'"),
    (config({"token": "t"}, current="other"), "no context named 'other'"),
    ("- a list", "not a mapping"),
])
def test_an_unusable_kubeconfig_is_refused_without_its_text(text, expected):
    with pytest.raises(KubeconfigError, match=expected) as caught:
        parse_kubeconfig(text)
    assert "10.0.0.1" not in str(caught.value)


def deployment(replicas, ready, generation=1, observed=1):
    return {"metadata": {"name": "md-1", "generation": generation}, "spec": {"replicas": replicas},
            "status": {"readyReplicas": ready, "observedGeneration": observed, "phase": "ScalingUp"}}


@pytest.mark.parametrize("wanted, md, ready", [
    (2, deployment(2, 2), True),
    (2, deployment(2, 1), False),
    (2, deployment(3, 2), False),  # the MachineDeployment wants more than the program declared
    (4, deployment(2, 2), False),  # the topology controller has not copied the new count yet
    (2, deployment(2, 2, generation=2), False),
    (2, None, False),
])
def test_a_pool_is_ready_when_its_replicas_are_and_its_spec_is_seen(wanted, md, ready):
    assert pool_state("gpu-worker", wanted, md).ready is ready


def test_a_new_token_is_no_reason_to_wait_again():
    olds = {"kubeconfig": "a", "namespace": "n", "cluster_name": "c", "pools": [{"name": "g", "replicas": 2}],
            "revision": "r1", "timeout_seconds": 3600}
    provider = GpuPoolsReadyProvider()
    assert not provider.diff("id", olds, {**olds, "kubeconfig": "b"}).changes
    assert provider.diff("id", olds, {**olds, "revision": "r2"}).changes
    assert provider.diff("id", olds, {**olds, "cluster_name": "d"}).replaces == ["cluster_name"]
