"""Collect, on a machine with network access, the wheels that ``bench/gpu.sh`` installs
offline on a GPU machine, and check that they fit what may travel with the run.

The GPU machine has torch, torchvision, numpy, pandas, pyarrow and PIL but no network; the
folder gets dask and distributed at this project's pinned versions with everything they
need, tqdm, and nvImageCodec with its nvJPEG library (``nvidia-nvimgcodec-cu13[nvjpeg]``),
for the GPU machine's Python and platform. torch, torchvision, xgboost and cuDF are never
collected (far too large to carry; the machine brings its own torch). The folder also
gets ``requirements.txt`` (what gpu.sh installs), and the total size is checked against
what may travel with the run (``--max-mib``).
Exit codes: 0 collected and within the limit, 1 over the limit or holding a wheel that
must not travel, else pip's own exit code.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

PACKAGES = ("dask", "distributed")
EXTRAS = ("tqdm",)  # imported by the workloads; not a dependency of dask
NVIMGCODEC = "nvidia-nvimgcodec-cu13[nvjpeg]"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
DEFAULT_DEST = Path(__file__).with_name("wheels")
ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
GPU_REQUIREMENTS = ROOT / "requirements-gpu.txt"
MAX_MIB = 64
NEVER = ("torch", "torchvision", "xgboost", "cudf", "nvidia-cudnn", "nvidia-cublas", "triton")


def pinned(requirements: Path = REQUIREMENTS, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """``name==version`` for ``packages`` as the project pins them (bare names where it does not)."""
    pins = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        name, sep, version = text.partition("==")
        name = name.split("[", 1)[0].strip()  # dask[dataframe] -> dask: the GPU machine has pandas
        if sep and name.lower() in packages:
            pins[name.lower()] = f"{name}=={version.strip()}"
    return [pins.get(name, name) for name in packages]


def nvimgcodec_pin(gpu_requirements: Path = GPU_REQUIREMENTS) -> str:
    """The CUDA 13 build of the nvImageCodec version ``requirements-gpu.txt`` pins (for CUDA 12)."""
    for line in gpu_requirements.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if text.startswith("nvidia-nvimgcodec-cu12") and "==" in text:
            return f"{NVIMGCODEC}=={text.split('==', 1)[1].strip()}"
    return NVIMGCODEC


def requirements_for_gpu(requirements: Path = REQUIREMENTS, gpu_requirements: Path = GPU_REQUIREMENTS) -> list[str]:
    extras = pinned(requirements, EXTRAS)
    return pinned(requirements) + extras + [nvimgcodec_pin(gpu_requirements)]


def download_command(dest: Path, requirements: list[str], python_version: str,
                     platforms: tuple[str, ...] = PLATFORMS) -> list[str]:
    """The ``pip download`` command line: binary wheels only, for that Python and platform."""
    command = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--dest", str(dest),
               "--python-version", python_version, "--implementation", "cp"]
    for platform in platforms:
        command += ["--platform", platform]
    return command + list(requirements)


def check_folder(dest: Path, max_mib: float = MAX_MIB) -> list[str]:
    """Problems with the collected folder: too large to travel, or holding a wheel that
    must never be carried (the machine's own builds)."""
    wheels = sorted(dest.glob("*.whl"))
    problems = []
    total = sum(path.stat().st_size for path in wheels)
    if total > max_mib * 2**20:
        largest = sorted(wheels, key=lambda p: -p.stat().st_size)[:3]
        problems.append(f"{dest} holds {total / 2**20:.1f} MiB of wheels, over the {max_mib:g} MiB that may travel"
                        f" (largest: {', '.join(f'{p.name} {p.stat().st_size / 2**20:.1f} MiB' for p in largest)})")
    for path in wheels:
        project = path.name.split("-", 1)[0].lower().replace("_", "-")
        if any(project == never or project.startswith(never + "-") for never in NEVER):
            problems.append(f"{path.name} must not be carried: the GPU machine brings its own {project}")
    return problems


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dest", default=str(DEFAULT_DEST), help="wheels folder (default: bench/wheels)")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default: 3.12)")
    parser.add_argument("--max-mib", type=float, default=MAX_MIB, help=f"size limit (default: {MAX_MIB} MiB)")
    parser.add_argument("--dry-run", action="store_true", help="print the pip command, download nothing")


def run(args: argparse.Namespace) -> int:
    dest = Path(args.dest)
    requirements = requirements_for_gpu()
    command = download_command(dest, requirements, args.python_version)
    print(" ".join(command))
    if args.dry_run:
        return 0
    dest.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(command, check=False)  # its exit status is reported below
    if result.returncode != 0:
        print(f"bench.wheels: pip download failed (exit {result.returncode})", file=sys.stderr)
        return result.returncode
    (dest / "requirements.txt").write_text("\n".join(requirements) + "\n", encoding="utf-8")
    wheels = sorted(dest.glob("*.whl"))
    total = sum(p.stat().st_size for p in wheels) / 2**20
    print(f"bench.wheels: {len(wheels)} wheels, {total:.1f} MiB in {dest}: {', '.join(p.name for p in wheels)}")
    problems = check_folder(dest, args.max_mib)
    for problem in problems:
        print(f"bench.wheels: error: {problem}", file=sys.stderr)
    return 1 if problems else 0
