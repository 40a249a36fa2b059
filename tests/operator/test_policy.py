"""The policy pack on the operator backend: the program's operator stacks pass every rule, and
each rule the Helm release obeys fails on the operator's resources when broken (cases made
from the program's own resources, fed to the rules as the engine does)."""
from __future__ import annotations

import pytest

from policy.rules.dask_operator import (
    operator_gpu_worker_one_gpu,
    operator_one_image_everywhere,
    operator_one_pinned_image,
    operator_scheduler_off_gpu,
)
from tests.operator.support import OPERATOR
from tests.policy.support import graph_violations, inputs, resource_args, stack_args, violations
from tests.program.graph import Graph, run_program


@pytest.fixture(scope="module")
def graph() -> Graph:
    g = run_program("reference", config={**OPERATOR, "cpuWorkers": 2})
    assert g.error is None, g.traceback
    return g


def changed(graph: Graph, name: str, change):
    resource = graph.named(name)
    props = inputs(resource)
    change(props)
    return resource_args(resource, inputs=props)


def gpu_container(props: dict) -> dict:
    return props["spec"]["worker"]["spec"]["containers"][0]


# topology B without TLS, so not exposed (preview refuses an exposure without TLS)
@pytest.mark.parametrize("config", [{}, {"cpuWorkers": 2}, {"jupyterGpu": True, "gpuWorkers": 0, "daskTls": False,
                                                           "schedulerServiceType": "ClusterIP",
                                                           "jupyterServiceType": "ClusterIP"}],
                         ids=["reference", "cpu-group", "topology-b"])
def test_the_programs_operator_stacks_pass_every_policy(config):
    g = run_program("reference", config={**OPERATOR, **config})
    assert g.error is None, g.traceback
    assert graph_violations(g) == {}


def test_two_gpus_per_worker_fail(graph):
    def two(props):
        for kind in ("limits", "requests"):
            gpu_container(props)["resources"][kind]["nvidia.com/gpu"] = "2"

    [message] = violations(operator_gpu_worker_one_gpu, changed(graph, "dask-cluster", two))
    assert message.startswith("DaskCluster 'dask' (Pulumi resource 'dask-cluster'): ")
    assert "spec.worker.spec.containers[0].resources.limits asks for '2'" in message and "exactly 1" in message


def test_a_gpu_worker_without_a_gpu_fails(graph):
    def none(props):
        for kind in ("limits", "requests"):
            del gpu_container(props)["resources"][kind]["nvidia.com/gpu"]

    [message] = violations(operator_gpu_worker_one_gpu, changed(graph, "dask-cluster", none))
    assert "requests no nvidia.com/gpu although these pods are GPU workers" in message


def test_cpu_worker_group_needs_no_gpu(graph):
    assert violations(operator_gpu_worker_one_gpu, resource_args(graph.named("dask-cpu-workers"))) == []


def test_scheduler_on_gpu_nodes_fails(graph):
    def on_gpu(props):
        props["spec"]["scheduler"]["spec"]["nodeSelector"] = {"dask-tkg.io/pool-role": "gpu"}

    [message] = violations(operator_scheduler_off_gpu, changed(graph, "dask-cluster", on_gpu))
    assert "spec.scheduler.spec.nodeSelector selects the GPU nodes" in message


def test_latest_and_mixed_images_fail(graph):
    def latest(props):
        gpu_container(props)["image"] = "ghcr.io/dask/dask:latest"

    messages = violations(operator_one_pinned_image, changed(graph, "dask-cluster", latest))
    assert len(messages) == 2
    assert "spec.worker.spec.containers[0].image" in messages[0] and "latest" in messages[0]
    assert "scheduler and workers run different images" in messages[1]


def test_one_image_across_groups_and_jupyter(graph):
    assert violations(operator_one_image_everywhere, stack_args(graph)) == []
    group = graph.named("dask-cpu-workers")
    state = dict(group.raw["state"])
    state["spec"] = {**state["spec"], "worker": {**state["spec"]["worker"]}}
    state["spec"]["worker"]["spec"] = {**state["spec"]["worker"]["spec"], "containers": [
        {**state["spec"]["worker"]["spec"]["containers"][0], "image": "ghcr.io/dask/dask:2024.1.1"}]}
    [message] = violations(operator_one_image_everywhere, stack_args(graph, state={"dask-cpu-workers": state}))
    assert "run different images" in message
    assert "dask-cpu-workers:spec.worker.spec.containers[0].image=ghcr.io/dask/dask:2024.1.1" in message
    assert f"dask-jupyter-release:jupyter.image={OPERATOR['daskImage']}" in message
