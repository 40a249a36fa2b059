"""Suite-wide fixtures, the ``gpu`` marker that skips cleanly without a GPU, and the markers
of what a test needs beyond the venv (``stand_in`` and the one naming the stand-in), assigned
here by the fixture or the module that needs it, so that ``pytest -m "not stand_in"`` runs
everything that needs only the venv (docs/testing.md)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.hardware import HAS_GPU
from tests.kube.versions import (  # noqa: F401 - hooks, registered by name
    pytest_report_header,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_terminal_summary,
)
from workloads.core.config import cache_dir

REPO = Path(__file__).resolve().parents[1]
CACHE = cache_dir()
# No test downloads: the program takes its pinned chart archives from the cache that
# scripts/fetch_artifacts.py fills (from the offline mirror where there is one).
os.environ.setdefault("DASK_TKG__OFFLINE", "1")
ARTIFACTS = REPO / "test-artifacts"




# What `make test` builds, fetches or installs beyond the venv, by the marker that names it.
# Every test carrying one of these also gets `stand_in`.
STAND_IN_MARKERS = ("vcsim", "apiserver", "kube_node", "helm", "artifacts", "browser", "nginx", "system_packages",
                    "promtool")
# A fixture that starts a stand-in -> its marker.
STAND_IN_FIXTURES = {"vcsim": "vcsim", "kube_apiserver": "apiserver", "paper_apiserver": "apiserver",
                     "apiserver_for": "apiserver", "kube_cluster": "kube_node",
                     "helm": "helm"}
# Modules whose tests reach a stand-in through helpers rather than fixtures (the charts rendered
# by tests/render/program.py, the CRDs of tests/artifacts.py), and whole folders.
STAND_IN_MODULES = {
    "tests/cluster/": ("kube_node", "apiserver", "helm", "artifacts"),
    "tests/paper_cluster/": ("kube_node", "apiserver", "helm", "artifacts"),
    "tests/render/": ("helm", "artifacts"),
    "tests/security/test_stack_pod_security.py": ("helm", "artifacts"),
    "tests/security/test_stack_network_policy.py": ("helm", "artifacts"),
    "tests/security/test_pss_admission.py": ("helm", "artifacts"),
    "tests/operator/test_render.py": ("helm", "artifacts"),
    "tests/operator/test_apiserver_crs.py": ("artifacts",),
    "tests/operator/test_controller.py": ("helm", "artifacts"),
    "tests/operator/test_operator_rbac.py": ("helm", "artifacts"),
    "tests/apiserver/test_tkc_crd.py": ("artifacts",),
    "tests/apiserver/test_capi_cluster.py": ("artifacts",),
    "tests/apiserver/test_gpu_pools_ready.py": ("artifacts",),
    "tests/apiserver/test_supervisor_releases.py": ("artifacts",),
    "tests/apiserver/test_supervisor_kubernetes_releases.py": ("artifacts",),
    "tests/prepare/test_nginx.py": ("nginx",),
    "tests/report/test_browser.py": ("browser",),
    "tests/report/test_usage_browser.py": ("browser",),
    "tests/monitoring/test_recording_rules.py": ("promtool",),
    "tests/setup/test_system_programs.py::test_each_package_installs_the_programs_declared_for_it":
        ("system_packages",),
}


def _module_markers(nodeid: str) -> tuple[str, ...]:
    nodeid = "tests/" + nodeid.removeprefix("tests/")  # rooted at the repository either way
    return tuple(m for prefix, names in STAND_IN_MODULES.items() if nodeid.startswith(prefix) for m in names)


def _deselected_by_markers(config, markers: tuple[str, ...]) -> bool:
    """Whether the run's ``-m`` expression deselects a test that carries these markers."""
    expression = config.getoption("markexpr", default="")
    if not expression or not markers:
        return False
    from _pytest.mark.expression import Expression

    carried = {"stand_in", *markers}
    def matches(name: str, /, **_: str | int | bool | None) -> bool:
        return name in carried

    return not Expression.compile(expression).evaluate(matches)


# Modules that render the stacks' charts while they are collected (their parameters come from
# them), so that without the stand-ins they cannot even be collected.
NEEDED_TO_COLLECT = ("tests/security/test_stack_pod_security.py",)


def pytest_ignore_collect(collection_path, config):
    """Such a module is not collected when ``-m`` deselects its tests anyway."""
    try:
        nodeid = collection_path.relative_to(REPO).as_posix()
    except ValueError:
        return None
    if nodeid in NEEDED_TO_COLLECT and _deselected_by_markers(config, _module_markers(nodeid)):
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before -m deselects by them
def pytest_collection_modifyitems(config, items):
    for item in items:
        needs = set(_module_markers(item.nodeid))
        needs |= {marker for fixture, marker in STAND_IN_FIXTURES.items()
                  if fixture in getattr(item, "fixturenames", ())}
        needs |= {name for name in STAND_IN_MARKERS if item.get_closest_marker(name) is not None}
        for name in sorted(needs):
            if item.get_closest_marker(name) is None:
                item.add_marker(getattr(pytest.mark, name))
        if needs and item.get_closest_marker("stand_in") is None:
            item.add_marker(pytest.mark.stand_in)
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# A nanny writes its pre-spawn environment (LD_PRELOAD, OMP_NUM_THREADS=1, ...) into its own
# process every time it (re)starts a worker, so a test that kills workers of an in-process
# cluster leaves them in this process. Restore them after every test.
_WORKER_ENV = ("LD_PRELOAD", "MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "OPENBLAS_NUM_THREADS", "PYTHONHASHSEED")


@pytest.fixture(autouse=True)
def _restore_worker_environment():
    from workloads.observe.environment import patched_environ

    with patched_environ({name: os.environ.get(name) for name in _WORKER_ENV}):  # as it is now
        yield


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where tests leave files a human may want to look at (screenshots, reports)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
