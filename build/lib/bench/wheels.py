"""``python -m bench.wheels``: collect, on a machine with network access, the wheels that
``bench/gpu.sh`` installs offline on a GPU machine: dask and distributed at this
project's pinned versions and everything they need, for the GPU machine's Python and
platform. torch, torchvision, xgboost and cuDF are not collected: the GPU machine brings
its own builds. The folder also gets ``requirements.txt`` (what gpu.sh installs).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

PACKAGES = ("dask", "distributed")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
DEFAULT_DEST = Path(__file__).with_name("wheels")
REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"


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


def download_command(dest: Path, requirements: list[str], python_version: str,
                     platforms: tuple[str, ...] = PLATFORMS) -> list[str]:
    """The ``pip download`` command line: binary wheels only, for that Python and platform."""
    command = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--dest", str(dest),
               "--python-version", python_version, "--implementation", "cp"]
    for platform in platforms:
        command += ["--platform", platform]
    return command + list(requirements)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.wheels", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", default=str(DEFAULT_DEST), help="wheels folder (default: bench/wheels)")
    parser.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default: 3.12)")
    parser.add_argument("--dry-run", action="store_true", help="print the pip command, download nothing")
    args = parser.parse_args(argv)
    dest = Path(args.dest)
    requirements = pinned()
    command = download_command(dest, requirements, args.python_version)
    print(" ".join(command))
    if args.dry_run:
        return 0
    dest.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(command)
    if result.returncode != 0:
        print(f"bench.wheels: pip download failed (exit {result.returncode})", file=sys.stderr)
        return result.returncode
    (dest / "requirements.txt").write_text("\n".join(requirements) + "\n", encoding="utf-8")
    wheels = sorted(p.name for p in dest.glob("*.whl"))
    print(f"bench.wheels: {len(wheels)} wheels in {dest}: {', '.join(wheels)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
