"""The scheduler of the current stacks follows RAPIDS' guidance on its software: the workers'
environment, cuDF included (it unpickles graphs whose tasks name cudf and dask_cudf); it has no
GPU (docs/dask.md, "The scheduler"). The paper's stacks are untouched
(tests/program/test_paper_stacks.py)."""
from __future__ import annotations

import pytest

import components.kube.prepared_env as prepared_env
from tests.program.graph import run_program


def _container(spec: dict) -> dict:
    [container] = spec["spec"]["containers"]
    return container


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


@pytest.fixture(scope="module", params=["dev", "full"])
def cluster(request) -> dict:
    g = run_program(request.param)
    assert g.error is None, g.traceback
    [resource] = g.of_type("DaskCluster")
    return resource.manifest()["spec"]


def test_the_scheduler_runs_the_workers_environment_without_a_gpu(cluster):
    scheduler, worker = _container(cluster["scheduler"]), _container(cluster["worker"])
    assert _env(scheduler)["PATH"] == _env(worker)["PATH"] == f"{prepared_env.ENV_MOUNT}/bin:{prepared_env.SYSTEM_PATH}"
    assert {m["mountPath"]: m.get("subPath") for m in scheduler["volumeMounts"]}[prepared_env.ENV_MOUNT] == \
        {m["mountPath"]: m.get("subPath") for m in worker["volumeMounts"]}[prepared_env.ENV_MOUNT]
    assert "nvidia.com/gpu" not in str(scheduler.get("resources", {}))


def test_the_workers_hold_the_gpus(cluster):
    assert "nvidia.com/gpu" in str(_container(cluster["worker"]).get("resources", {}))
