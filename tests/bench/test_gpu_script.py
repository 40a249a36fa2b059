"""The GPU script without a GPU: argument parsing, its self-checks failing clearly, the
wheel collection step, and the same flow as a dry run on the CPU."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import gpu, wheels
from tests.conftest import HAS_GPU

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "gpu.sh"


def test_arguments_and_defaults():
    args = gpu.build_parser().parse_args([])
    assert args.precisions == ["bf16", "fp16"] and args.batch == 256 and args.device == "cuda"
    assert gpu.build_parser().parse_args(["--precisions", "fp16"]).precisions == ["fp16"]
    with pytest.raises(SystemExit):
        gpu.build_parser().parse_args(["--precisions", "fp8"])


@pytest.mark.skipif(HAS_GPU, reason="checks the failure without a GPU")
def test_self_check_names_what_is_missing_without_cuda(capsys):
    assert any("torch.cuda.is_available() is False" in p for p in gpu.self_check("cuda"))
    assert gpu.self_check("cpu") == []
    assert gpu.main(["--output", "unused"]) == 2
    assert "bench.gpu: error: torch.cuda.is_available() is False" in capsys.readouterr().err


@pytest.mark.skipif(HAS_GPU, reason="checks the failure without a GPU")
def test_shell_script_fails_clearly_without_a_gpu(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHON": sys.executable}
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("bench/gpu.sh: error: ")
    assert "nvidia-smi" in result.stderr or "cuda" in result.stderr.lower()


def test_shell_script_says_how_to_get_wheels_when_dask_is_missing(tmp_path):
    """A fake nvidia-smi and a python without dask: the script stops at the install step
    and names the command that collects the wheels."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: fake'\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    fake_python = bin_dir / "python-without-dask"
    fake_python.write_text("#!/bin/sh\ncase \"$2\" in *'import dask'*) exit 1;; esac\nexit 0\n")
    fake_python.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHON": str(fake_python)}
    result = subprocess.run(["bash", str(SCRIPT), "--wheels", str(tmp_path / "none")], capture_output=True,
                            text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert "python -m bench.wheels --dest" in result.stderr


def test_wheel_collection_command_pins_the_project_versions(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("numpy==2.4.6\ndask[dataframe]==2026.7.1  # pinned\ndistributed==2026.7.1\n")
    pins = wheels.pinned(requirements)
    assert pins == ["dask==2026.7.1", "distributed==2026.7.1"]
    command = wheels.download_command(tmp_path / "w", pins, "3.12")
    assert command[1:4] == ["-m", "pip", "download"] and "--only-binary=:all:" in command
    assert command[command.index("--python-version") + 1] == "3.12"
    assert "manylinux2014_x86_64" in command and command[-2:] == pins
    assert not any(name in " ".join(command) for name in ("torch", "xgboost", "cudf"))


def test_wheels_dry_run_prints_and_downloads_nothing(tmp_path, capsys):
    assert wheels.main(["--dest", str(tmp_path / "w"), "--dry-run"]) == 0
    assert "pip download" in capsys.readouterr().out and not (tmp_path / "w").exists()


@pytest.mark.slow
def test_dry_run_of_the_whole_flow_on_the_cpu(tmp_path):
    """``--device cpu`` runs the same steps (data, local cluster, GPU-decode path falling
    back to the CPU, model-only rate, figures, JSON) with a tiny model."""
    result = subprocess.run(
        [sys.executable, "-m", "bench.gpu", "--device", "cpu", "--model", "workloads.synth.images:colour_classifier",
         "--breeds", "2", "--unique-per-breed", "2", "--copies", "2", "--batch", "4", "--repeats", "1",
         "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out")],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "decoders ['cpu']" in result.stdout  # decode gpu fell back: no CUDA
    [written] = (tmp_path / "out").glob("gpu-*.json")
    names = [record["name"] for record in json.loads(written.read_text())]
    assert names == ["gpu_bf16_pipeline_vs_model", "gpu_bf16_images_per_second"]
    shutil.rmtree(tmp_path / "data")
