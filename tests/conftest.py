"""Suite-wide fixtures and the ``gpu`` marker that skips cleanly without a GPU."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from workloads.core.config import cache_dir

REPO = Path(__file__).resolve().parents[1]
CACHE = cache_dir()
ARTIFACTS = REPO / "test-artifacts"


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config, items):
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
