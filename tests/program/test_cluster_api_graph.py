"""The program under mocks on the current platform (vSphere 8 U3 / VCF 9): one Cluster API
Cluster on a VMware ClusterClass, and no TanzuKubernetesCluster; the paper's stack keeps its
TanzuKubernetesCluster."""
from __future__ import annotations

import pytest

from tests.program.graph import run_program

VKR = "v1.32.3---vmware.1-fips-vkr.2"
CURRENT = {"vsphereVersion": 8, "supervisorId": "domain-c8", "clusterApi": "cluster.x-k8s.io/v1beta1", "tkr": VKR}


@pytest.fixture(scope="module", params=[8, 9])
def graph(request):
    g = run_program("dev", config={**CURRENT, "vsphereVersion": request.param})
    assert g.error is None, g.traceback
    return g


def test_one_cluster_on_the_class_and_no_tkc(graph):
    assert graph.of_type("TanzuKubernetesCluster") == []
    (cluster,) = graph.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster")
    m = cluster.manifest()
    topology = m["spec"]["topology"]
    assert (topology["class"], topology["version"]) == ("builtin-generic-v3.4.0", VKR)
    pools = {d["name"]: d for d in topology["workers"]["machineDeployments"]}
    assert (pools["gpu-worker"]["replicas"], pools["cpu-worker"]["replicas"]) == (2, 1)  # the dev stack's
    gpu_overrides = {v["name"]: v["value"] for v in pools["gpu-worker"]["variables"]["overrides"]}
    assert gpu_overrides["vmClass"] == "16cpu-64gram-ts-20c-vmxnet3"
    assert pools["gpu-worker"]["metadata"]["annotations"] == {"run.tanzu.vmware.com/resolve-os-image": "os-name=ubuntu"}
    assert m["metadata"]["namespace"] == "dask-dev"


def test_the_guest_provider_reads_the_kubeconfig_cluster_api_writes(graph):
    (cluster,) = graph.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster")
    secret = graph.named("tkc-kubeconfig")
    assert secret.raw["read"] and secret.raw["id"] == "dask-dev/tkg-dask-dev-kubeconfig"
    assert graph.depends_on(secret, cluster)
    assert graph.depends_on(graph.named("guest"), secret)


def test_the_papers_stack_still_declares_its_tkc():
    g = run_program("reference")
    assert g.error is None, g.traceback
    (tkc,) = g.of_type("TanzuKubernetesCluster")
    assert tkc.manifest()["apiVersion"] == "run.tanzu.vmware.com/v1alpha2"
    assert g.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster") == []


def test_the_papers_stack_says_once_what_is_out_of_support():
    g = run_program("reference")
    notices = [w for w in g.warnings if w.startswith("out of support today")]
    assert len(notices) == 1, g.warnings
    (notice,) = notices
    for part in ("vSphere 7", "TKR v1.20.8---vmware.1-tkg.2", "GPU operator v1.9.1",
                 "policy/v1beta1 PodSecurityPolicy", "node.k8s.io/v1beta1 RuntimeClass"):
        assert part in notice, notice


def test_the_current_platform_cluster_is_not_called_out_of_support(graph):
    notices = [w for w in graph.warnings if w.startswith("out of support today")]
    # the GPU operator default stays v1.9.1 until the add-ons follow the platform
    assert all("end of general support" not in n and "TKR" not in n for n in notices), notices
