"""scripts/lock_worker_env.py's refusals, which keep the GPU lock one CUDA major with every
package's declared dependencies as declared: an overrides file beside the spec, and a
resolution whose CUDA libraries span two majors (plain ``xgboost`` 3.2.0 brings
``nvidia-nccl-cu12`` into a CUDA 13 environment: what made the lock take ``xgboost-cu13``)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import lock_worker_env  # noqa: E402

sys.path.pop(0)


def test_an_overrides_file_is_refused(tmp_path, monkeypatch):
    overrides = tmp_path / "overrides.txt"
    overrides.write_text("nvidia-nvjitlink-cu12>=12.9,<13\n")
    monkeypatch.setattr(lock_worker_env, "OVERRIDES", overrides)
    monkeypatch.setattr(lock_worker_env, "REPO", tmp_path)
    with pytest.raises(SystemExit) as refused:
        lock_worker_env.refuse_overrides()
    assert "overrides.txt is refused: a lock takes every package's declared dependencies as declared" in str(
        refused.value)


def test_there_is_no_overrides_file():
    lock_worker_env.refuse_overrides()  # the repository's spec needs none


@pytest.mark.parametrize("pins, majors", [
    (["cuda-toolkit==13.0.3.0", "nvidia-cufft==12.0.0.61", "cudf-cu13==26.10.2", "cupy-cuda13x==14.2.0"], {13}),
    (["nvidia-cuda-runtime==13.0.96", "nvidia-nccl-cu12==2.32.3"], {12, 13}),
    (["nvidia-nvjitlink-cu12==12.9.86", "torch==2.10.0"], {12}),
    (["pandas==3.0.6"], set()),
])
def test_the_cuda_majors_of_a_resolution(pins, majors):
    """cuFFT 12.0 is CUDA 13's cuFFT (libraries keep their own versions): only suffixes and the
    toolkit or runtime's version say the CUDA major."""
    assert lock_worker_env.cuda_majors(pins) == majors


def test_the_lock_matches_its_spec_and_is_one_cuda_major():
    from components.artifacts import worker_lock

    assert lock_worker_env.recorded_digest(lock_worker_env.lock_path("cu13")) == lock_worker_env.spec_digest("cu13")
    assert lock_worker_env.cuda_majors([f"{n}=={v}" for n, v in worker_lock.pins(worker_lock.lock_text()).items()]) \
        == {lock_worker_env.CUDA_MAJOR}
