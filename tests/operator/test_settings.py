"""The operator backend's settings: the backend choice, the image's Dask version the pinned
operator needs (refused at preview, naming the key, the version and why), and the
autoscaler's bounds against the GPU nodes."""
from __future__ import annotations

import pytest

from components.settings.operator import MIN_OPERATOR_DASK, dask_version
from tests.operator.support import OPERATOR, operator_settings
from tests.unit.support import problems, settings


def test_the_papers_stack_keeps_helm_and_its_image():
    s = settings()  # the paper's platform (tests/unit/test_settings.py PAPER_PLATFORM)
    assert s.dask.backend == "helm" and s.dask.operator is None
    assert s.dask.dask_version == "2021.09.1"  # the RAPIDS 21.10 image: fine with Helm


def test_operator_settings_resolve_to_one_gpu_worker_per_free_gpu_node():
    op = operator_settings().dask.operator
    assert (op.chart_version, op.namespace, op.autoscale, op.min_workers, op.max_workers) == (
        "2026.3.0", "dask-operator", True, 1, 8)
    assert operator_settings(jupyterGpu=True).dask.operator.max_workers == 7  # topology B: Jupyter takes one


def test_the_papers_image_is_refused_with_the_operator_saying_why():
    # daskImageDaskVersion defaults to the paper's 2021.09.1; the image way (its own packages)
    error = problems(daskBackend="operator", workerEnvironment="image")
    [problem] = error.problems
    assert problem.key == "daskImageDaskVersion"
    text = str(error)
    assert "dask-tkg:daskImageDaskVersion: 2021.09.1 is older than 2022.10.0" in text
    assert "pinned operator (2026.3.0)" in text
    assert "/api/v1/retire_workers" in text and "distributed >= 2022.05.1" in text
    assert "dask scheduler" in text and "daskBackend=helm" in text


@pytest.mark.parametrize("version, ok", [
    ("2022.9.2", False), ("2022.10.0", True), ("2024.1.1", True), ("2026.7.1", True), ("2022.05.1", False)])
def test_the_version_limit_is_exact(version, ok):
    if ok:
        assert operator_settings(daskImageDaskVersion=version).dask.operator is not None
    else:
        assert problems(**{**OPERATOR, "daskImageDaskVersion": version}).problems[0].key == "daskImageDaskVersion"


def test_version_parsing():
    assert dask_version("2021.09.1") == (2021, 9, 1) < MIN_OPERATOR_DASK
    assert dask_version("2024.1.0rc1") == (2024, 1, 0)
    with pytest.raises(ValueError, match="must be a Dask version"):
        dask_version("latest")
    error = problems(**{**OPERATOR, "daskImageDaskVersion": "latest"})
    assert "dask-tkg:daskImageDaskVersion: must be a Dask version such as 2024.1.1 (got 'latest')" in str(error)


@pytest.mark.parametrize("overrides, key, words", [
    ({"autoscaleMaxWorkers": 9}, "autoscaleMaxWorkers", "9 GPU workers need 9 GPU nodes but only 8 are free"),
    ({"jupyterGpu": True, "autoscaleMaxWorkers": 8}, "autoscaleMaxWorkers", "only 7 are free for workers (8 in"
                                                                              " role=gpu pools, one taken by Jupyter)"),
    ({"autoscaleMinWorkers": 5, "autoscaleMaxWorkers": 4}, "autoscaleMinWorkers",
     "5 is more than autoscaleMaxWorkers (4)"),
    ({"autoscaleMinWorkers": -1}, "autoscaleMinWorkers", "must be >= 0"),
    ({"daskOperatorChartVersion": "2025.7.0"}, "daskOperatorChartVersion", "not the pinned 2026.3.0"),
    ({"daskBackend": "kubernetes"}, "daskBackend", "must be one of helm, operator"),
], ids=["max-over-gpu-nodes", "max-with-jupyter-gpu", "min-over-max", "negative-min", "other-chart", "bad-backend"])
def test_bad_operator_settings_name_the_key(overrides, key, words):
    error = problems(**{**OPERATOR, **overrides})
    assert [p.key for p in error.problems] == [key]
    assert words in str(error)


def test_cpu_workers_need_the_operator_and_a_cpu_pool():
    error = problems(cpuWorkers=2)
    assert "dask-tkg:cpuWorkers: is read only with daskBackend=operator" in str(error)
    pools = ["name=gpu-worker,role=gpu,replicas=8,vmClass=16cpu-64gram-ts-20c-vmxnet3,storageClass=vsan-r1-sw8",
             "name=sched,role=scheduler,replicas=1,vmClass=best-effort-xlarge,storageClass=vsan-r5"]
    error = problems(**{**OPERATOR, "cpuWorkers": 2, "nodePools": pools})
    assert "dask-tkg:cpuWorkers: CPU workers need a node pool with role=cpu" in str(error)


@pytest.mark.parametrize("key, value, message", [
    ("autoscaleMinWorkers", -1, "dask-tkg:autoscaleMinWorkers: must be >= 0"),
    ("autoscaleMaxWorkers", -1, "dask-tkg:autoscaleMaxWorkers: must be >= 0"),
    ("cpuWorkerCpu", -1, "dask-tkg:cpuWorkerCpu: must be >= 1"),
    ("cpuWorkerMemory", "lots", "dask-tkg:cpuWorkerMemory: must be a Kubernetes quantity"),
    ("daskOperatorNamespace", "Dask_Operator", "dask-tkg:daskOperatorNamespace: must be an RFC 1123 label"),
])
def test_an_operator_setting_is_checked_with_the_helm_backend_too(key, value, message):
    """A stack on the Helm backend that holds a bad operator setting fails at preview, not
    on the day someone switches it to the operator."""
    error = problems(**{key: value})  # daskBackend: the default, helm
    assert [p.key for p in error.problems] == [key]
    assert message in str(error)


def test_every_declared_setting_is_read_with_the_default_settings(monkeypatch):
    """A declared setting that ``load`` never reads is one that no check ever sees: it must
    be read (and so checked) whatever the other settings choose."""
    from components.settings import build
    from components.settings.schema import project

    read = set()
    original = build._Reader.__call__
    monkeypatch.setattr(build._Reader, "__call__", lambda self, key: read.add(key) or original(self, key))
    settings()
    assert sorted(set(project()[1]) - read) == []
