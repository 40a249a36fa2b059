"""Placement at preview: the pods that share a pool role, summed per node against the VM
class (an error naming pods, pool and shortfall), and a rollout's extra pod (a warning);
and the other settings the rendered charts showed to be wrong."""
from __future__ import annotations

import pytest

from components.settings import SettingsError
from tests.render.stacks import stack_settings

# The dev stack's sizes before they were fitted: the paper's 3 CPU scheduler and Jupyter.
OLD_DEV_SIZES = {"schedulerCpu": "3", "schedulerMemory": "8Gi", "jupyterCpu": "3", "jupyterMemory": "8Gi"}


def refused(stack: str, **config) -> SettingsError:
    with pytest.raises(SettingsError) as info:
        stack_settings(stack, config)
    return info.value


def test_scheduler_and_jupyter_that_do_not_fit_one_node_together_fail_preview():
    error = refused("reference-dev", **OLD_DEV_SIZES)
    [problem] = error.problems
    assert problem.key == "nodePools"
    assert "dask-jupyter (3 CPU, 8 GiB)" in problem.message and "pool 'cpu-worker'" in problem.message
    assert "node 1: dask-scheduler#1" in problem.message and "short by 2 CPU" in problem.message
    assert "jupyterCpu" in problem.message


def test_the_fitted_dev_stack_passes_with_room_for_both_rollouts():
    from components.settings.placement import placement_warnings

    s = stack_settings("reference-dev", {})
    assert placement_warnings(s) == []


def test_a_rollout_that_cannot_get_a_node_is_warned_about():
    from components.settings.placement import placement_warnings

    warnings = placement_warnings(stack_settings("reference", {}))
    assert len(warnings) == 1
    assert "dask-scheduler (rollout's extra pod)" in warnings[0] and "role=cpu" in warnings[0]
    assert "short by 2 CPU" in warnings[0] and "fixed RollingUpdate" in warnings[0]


def test_topology_b_warns_that_jupyter_cannot_roll_without_a_free_gpu():
    from components.settings.placement import DaskPlacement

    s = stack_settings("reference", {"jupyterGpu": True, "gpuWorkers": 0})
    [warning] = DaskPlacement.from_settings(s).warnings
    assert "dask-jupyter (3 CPU, 8 GiB, 1 GPU)" in warning and "pool 'gpu-worker'" in warning
    assert "short by 1 GPU" in warning


def test_topology_b_on_the_reference_stack_says_what_to_set():
    [problem] = refused("reference", jupyterGpu=True).problems
    assert problem.key == "gpuWorkers"
    assert "set gpuWorkers to 7, or to 0 to follow the GPU nodes" in problem.message


def test_a_driver_version_with_the_os_suffix_fails_preview():
    [problem] = refused("reference", vgpuDriverVersion="470.63.01-ubuntu20.04").problems
    assert problem.key == "vgpuDriverVersion"
    assert "470.63.01-ubuntu20.04-ubuntu20.04" in problem.message and "give '470.63.01'" in problem.message


@pytest.mark.parametrize("replicas, strategy, extra", [
    (1, None, 1),  # Kubernetes' defaults: maxSurge 25 % rounded up
    (8, None, 2),
    (8, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}, 0),
    (3, {"type": "Recreate"}, 0),
    (4, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%"}}, 2),
])
def test_surge_pods_follow_the_deployment_strategy(replicas, strategy, extra):
    from components.settings.placement import surge_pods

    assert surge_pods(replicas, strategy) == extra


@pytest.mark.parametrize("version, words", [
    ("latest", "must be a Dask version such as 2024.1.1"),
    ("2020.1.0", "no fact recorded for Dask 2020.1.0"),
])
def test_a_dask_version_without_a_recorded_nanny_fact_fails_preview(version, words):
    [problem] = refused("reference-dev", daskImageDaskVersion=version).problems
    assert problem.key == "daskImageDaskVersion" and words in problem.message
