"""The program under mocks: on Cluster API stacks ``pulumi up`` waits for the GPU pools' machines
(``GpuPoolsReady``) after the Cluster and before the GPU operator and Dask; the paper's stacks
(TanzuKubernetesCluster) declare no such wait."""
from __future__ import annotations

import pytest

from tests.program.graph import SECRETS, run_program

WAIT_TYPE = "GpuPoolsReady"
# stack -> (namespace, cluster, GPU pool -> replicas, timeout in seconds)
CURRENT = {
    "dev": ("dask-dev", "vks-dask-dev", {"gpu-worker": 2}, 3600),
    "full": ("dask", "vks-dask", {"gpu-worker": 8}, 3600),
}


def _wait(graph):
    found = [r for r in graph.resources if r.type.endswith(f":{WAIT_TYPE}")]
    assert len(found) == 1, [r.type for r in graph.resources if r.type.startswith("pulumi-python")]
    return found[0]


@pytest.fixture(scope="module", params=list(CURRENT))
def graph(request):
    g = run_program(request.param)
    assert g.error is None, g.traceback
    g.expected = CURRENT[request.param]
    return g


def test_the_wait_reads_the_gpu_pools_of_the_cluster(graph):
    namespace, cluster, pools, timeout = graph.expected
    inputs = _wait(graph).inputs
    assert (inputs["namespace"], inputs["cluster_name"], inputs["timeout_seconds"]) == (namespace, cluster, timeout)
    assert {p["name"]: p["replicas"] for p in inputs["pools"]} == pools


def test_the_wait_comes_after_the_cluster(graph):
    (cluster,) = graph.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster")
    assert graph.depends_on(_wait(graph), cluster)


def test_the_gpu_operator_and_dask_wait_for_the_gpu_pools(graph):
    wait = _wait(graph)
    (operator,) = [r for r in graph.of_type("Release") if r.inputs["name"] == "gpu-operator"]
    (dask_cluster,) = graph.of_type("kubernetes:kubernetes.dask.org/v1:DaskCluster")
    assert graph.depends_on(operator, wait)
    assert graph.depends_on(dask_cluster, wait)


def test_the_supervisor_kubeconfig_stays_a_secret(graph):
    raw = _wait(graph).raw
    assert raw["inputs"]["kubeconfig"] == {"__secret__": SECRETS["supervisorKubeconfig"]}
    assert "kubeconfig" in raw["additional_secret_outputs"]


@pytest.mark.parametrize("stack", ["reference", "reference-dev"])
def test_the_papers_stacks_declare_no_wait(stack):
    g = run_program(stack)
    assert g.error is None, g.traceback
    assert [r for r in g.resources if r.type.endswith(f":{WAIT_TYPE}")] == []
