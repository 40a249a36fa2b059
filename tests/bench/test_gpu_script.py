"""The GPU script without a GPU: argument parsing, its self-checks failing clearly, the
wheel collection step and the offline install, and the whole flow as a dry run on the CPU."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bench import cli, wheels
from bench.images.gpu import command as gpu
from bench.images.gpu import limits as gpu_limits
from tests.hardware import HAS_GPU

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "gpu.sh"


def gpu_parser():
    return cli.command_parser("gpu")[0]


def test_arguments_and_defaults():
    args = gpu_parser().parse_args([])
    assert args.precisions == ["bf16", "fp16"] and args.batches == [128, 256, 512]
    assert args.graphs == ["eager", "cudagraph", "compile"] and args.cpu_workers == [1, 2, 4, 8]
    assert args.cpu_threads == 2 and args.budget_s < 600  # the whole run must stay under 10 minutes
    assert gpu_parser().parse_args(["--graphs", "compile,eager"]).graphs == ["eager", "compile"]
    for bad in (["--precisions", "fp8"], ["--batches", "0"], ["--graphs", "jit"]):
        with pytest.raises(SystemExit):
            gpu_parser().parse_args(bad)


@pytest.mark.skipif(HAS_GPU, reason="checks the failure without a GPU")
def test_self_check_names_what_is_missing_without_cuda(capsys):
    assert any("torch.cuda.is_available() is False" in p for p in gpu.self_check("cuda"))
    assert gpu.self_check("cpu") == []
    assert cli.main(["gpu", "--output", "unused"]) == 2
    assert "bench.gpu: error: torch.cuda.is_available() is False" in capsys.readouterr().err


@pytest.mark.skipif(HAS_GPU, reason="checks the failure without a GPU")
def test_shell_script_fails_clearly_without_a_gpu(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHON": sys.executable}
    result = subprocess.run(["bash", str(SCRIPT)], check=False, capture_output=True, text=True, env=env, timeout=120)
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
    result = subprocess.run(["bash", str(SCRIPT), "--wheels", str(tmp_path / "none")], check=False, capture_output=True,
                            text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert "dask-tkg bench wheels --dest" in result.stderr


def make_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel (PEP 427 layout: the package, METADATA, WHEEL, RECORD)."""
    files = {f"{name}/__init__.py": f"VERSION = {version!r}\n",
             f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                                  "Tag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{name}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


@pytest.mark.slow
def test_offline_install_of_the_wheels_folder_into_a_venv(tmp_path):
    """gpu.sh installs what requirements.txt in the wheels folder names, with no index
    (no network), into a venv; a fake nvidia-smi stands in for the GPU checks it passes
    first (the dry run skips them; this checks the install step alone)."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    make_wheel(folder, "offline_probe_pkg", "1.2.3")
    (folder / "requirements.txt").write_text("offline_probe_pkg==1.2.3\n")
    venv = tmp_path / "venv"
    env = {**os.environ, "PYTHON": sys.executable, "PIP_INDEX_URL": "http://127.0.0.1:9/none"}
    result = subprocess.run(["bash", str(SCRIPT), "--cpu-dry-run", "--install-only", "--wheels", str(folder),
                             "--venv", str(venv)], check=False, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    if f"python: {venv}/bin/python" in result.stdout:  # the venv sees this python's torch
        python, path = str(venv / "bin" / "python"), ""
    else:  # this python is itself a venv: the wheels went to a --target folder on PYTHONPATH
        assert f"does not see {sys.executable}'s torch" in result.stdout
        python, path = sys.executable, str(venv / "target")
        assert f"PYTHONPATH: {path}" in result.stdout
    imported = subprocess.run([python, "-c", "import offline_probe_pkg as p; print(p.VERSION)"],
                              check=True, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": path})
    assert imported.stdout.strip() == "1.2.3"


def test_wheel_collection_command_pins_the_project_versions(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("numpy==2.4.6\ndask[dataframe]==2026.7.1  # pinned\ndistributed==2026.7.1\ntqdm==4.70.1\n")
    gpu_requirements = tmp_path / "requirements-gpu.txt"
    gpu_requirements.write_text("-r requirements.txt\nnvidia-nvimgcodec-cu12[nvjpeg]==0.9.0.20  # why\n")
    pins = wheels.requirements_for_gpu(requirements, gpu_requirements)
    assert pins == ["dask==2026.7.1", "distributed==2026.7.1", "tqdm==4.70.1",
                    "nvidia-nvimgcodec-cu13[nvjpeg]==0.9.0.20"]
    command = wheels.download_command(tmp_path / "w", pins, "3.12")
    assert command[1:4] == ["-m", "pip", "download"] and "--only-binary=:all:" in command
    assert command[command.index("--python-version") + 1] == "3.12"
    assert "manylinux2014_x86_64" in command and command[-4:] == pins
    assert not any(name in " ".join(command) for name in ("torch", "xgboost", "cudf"))


def test_the_project_pins_nvimgcodec_for_the_gpu_image():
    assert wheels.nvimgcodec_pin().startswith("nvidia-nvimgcodec-cu13[nvjpeg]==")


def test_the_wheels_folder_is_held_to_the_size_that_travels(tmp_path):
    (tmp_path / "dask-2026.7.1-py3-none-any.whl").write_bytes(b"\0" * 2**20)
    assert wheels.check_folder(tmp_path, max_mib=64) == []
    (tmp_path / "big-1.0-py3-none-any.whl").write_bytes(b"\0" * 3 * 2**20)
    [problem] = wheels.check_folder(tmp_path, max_mib=2)
    assert "4.0 MiB of wheels, over the 2 MiB" in problem and "big-1.0-py3-none-any.whl 3.0 MiB" in problem
    (tmp_path / "torch-2.11.0-cp312-cp312-linux_x86_64.whl").write_bytes(b"\0")
    assert any("brings its own torch" in p for p in wheels.check_folder(tmp_path, max_mib=64))


def test_wheels_dry_run_prints_and_downloads_nothing(tmp_path, capsys):
    assert cli.main(["wheels", "--dest", str(tmp_path / "w"), "--dry-run"]) == 0
    assert "pip download" in capsys.readouterr().out and not (tmp_path / "w").exists()


def test_the_simplest_graph_mode_wins_a_near_tie():
    sweep = gpu_limits.Sweep([gpu_limits.ModelRate("bf16", 256, "eager", 10_000, 1),
                              gpu_limits.ModelRate("bf16", 256, "compile", 10_200, 60),
                              gpu_limits.ModelRate("bf16", 512, "cudagraph", 11_000, 2),
                              gpu_limits.ModelRate("fp16", 256, "eager", 9_000, 1)])
    assert (sweep.best("bf16").graph, sweep.best("bf16").batch) == ("cudagraph", 512)
    sweep.rates.append(gpu_limits.ModelRate("bf16", 256, "eager", 10_900, 1))
    assert (sweep.best("bf16").graph, sweep.best("bf16").batch) == ("eager", 256)  # within 3 %: simpler
    assert sweep.best("fp32") is None


@pytest.mark.slow
def test_dry_run_of_the_whole_flow_on_the_cpu(tmp_path):
    """``bench/gpu.sh --cpu-dry-run`` runs every section (data, model-only sweep,
    decode-only per backend, end to end through a local Dask cluster with the prefetch
    pipeline, figure 9, the profiler) with a tiny model and writes one JSON."""
    env = {**os.environ, "PYTHON": sys.executable}
    result = subprocess.run(["bash", str(SCRIPT), "--cpu-dry-run", "--wheels", str(tmp_path / "no-wheels"),
                             "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out")],
                            check=False, cwd=REPO, capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    [written] = (tmp_path / "out").glob("gpu-*.json")
    figures = {record["name"]: record for record in json.loads(written.read_text())}
    assert list(figures) == [
        "gpu_model_only_bf16_images_per_second",
        "gpu_decode_only_nvimgcodec_hw_images_per_second", "gpu_decode_only_nvimgcodec_cuda_images_per_second",
        "gpu_decode_only_nvimgcodec_hybrid_images_per_second", "gpu_decode_only_torchvision_cuda_images_per_second",
        "gpu_decode_only_nvimgcodec_cpu_images_per_second", "cpu_decode_only_all_cores_images_per_second",
        "gpu_bf16_end_to_end_images_per_second", "gpu_bf16_end_to_end_vs_limit", "cpu_figure9_2x1_vs_linear"]
    assert figures["gpu_decode_only_nvimgcodec_hw_images_per_second"]["error"].startswith("not available: ")
    ratio = figures["gpu_bf16_end_to_end_vs_limit"]
    assert ratio["holds"] is not None and ratio["numerator"]["samples"] and ratio["denominator"]["samples"]
    notes = ratio["notes"]
    assert notes["images_failed"] == 3 and notes["images_converted"] == 3  # the broken files, counted
    assert sum(notes["decode_backends"].values()) + notes["images_failed"] == notes["files"]
    assert notes["worker_decoder_probe"]["chain"] == ["torchvision-cpu"] and notes["prefetch"] == 2
    assert notes["profile"]["top_host_ops"] and Path(notes["profile"]["tables"]).exists()
    scaling = figures["cpu_figure9_2x1_vs_linear"]
    assert scaling["goal"] == ">= 0.9" and len(scaling["denominator"]["samples"]) == 1
    assert ratio["run"]["decoders"]["device"] == "cpu" and ratio["run"]["dry_run"] is True


def test_the_runtime_image_installs_the_pinned_nvimgcodec():
    """The deployed workers decode with what the GPU benchmark measured: the Dockerfile
    installs requirements-gpu.txt's nvImageCodec pin (CUDA 12 build, nvJPEG extra)."""
    pin = next(line.split("#", 1)[0].strip() for line in (REPO / "requirements-gpu.txt").read_text().splitlines()
               if line.startswith("nvidia-nvimgcodec-cu12"))
    assert f'"{pin}"' in (REPO / "images" / "dask-runtime" / "Dockerfile").read_text()
