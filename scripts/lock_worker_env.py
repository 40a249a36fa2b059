#!/usr/bin/env python3
"""Regenerate the Dask pods' locked environment: components/dask/environment/worker-cu13.lock
(the GPU pods') and worker-cpu.lock (its CPU flavour, for the tests), from the gathered spec:
worker.in in the same folder (the shared base) and each benchmark's own worker.in, found
through the registry (``workloads/runs/benchmarks.py``: a benchmark is one folder).

Two steps, neither downloads a wheel:

1. resolve: ``uv pip compile`` for CPython 3.11 on manylinux_2_28 x86_64, wheels only. No
   override of any package's declared dependency is taken: an ``overrides.txt`` beside the spec
   is refused (the last CUDA 12 lock needed one, torch's exact CUDA 12.8 pins against cuDF's
   nvJitLink >= 12.9, so the lock contradicted what its packages declare). uv reads each
   candidate's metadata from the index (PEP 658). Then every CUDA library must be of one major
   (``cuda_majors``), or the lock is refused.
2. pick the files: ``pip install --dry-run --ignore-installed --no-deps --report -`` of the
   resolved pins for the same target; the report names the one wheel pip would install there
   and its sha256, which become the lock's ``--hash`` (one per package: the pods install
   exactly these files).

The CPU flavour is the same spec with the lines marked ``# gpu-only`` left out and a line
marked ``# cpu: <requirement>`` replaced by that requirement.

A lock records the digest of its flavour's requirements (each requirement line of the gathered
spec, comments dropped, sorted): which file a line sits in, its comments and its order do not
change what is resolved, so they do not make a lock stale.

Usage: scripts/lock_worker_env.py [--index-url URL] [--flavour cu13|cpu] [--keep-pins] [--check]
``--check`` resolves nothing and needs no network: exit 1 when a lock's recorded digest is not
its gathered requirements' (a package added, removed or changed since the lock was made).
``--keep-pins`` resolves with the current lock's pins as constraints (``uv pip compile
--constraint``), so a regeneration for changed inputs moves no pin that upstream releases
alone would move. Needs uv in this interpreter's environment (``pip install uv``: run as
``python -m uv``) and the index (PyPI) reachable.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from components.artifacts import worker_lock  # noqa: E402 (the repository's own module)
from workloads.runs import benchmarks  # noqa: E402 (the registry: standard library only)

ENV_DIR = REPO / "components" / "dask" / "environment"
SPEC = ENV_DIR / "worker.in"  # the shared base; each benchmark's folder holds its own FRAGMENT
FRAGMENT = "worker.in"
OVERRIDES = ENV_DIR / "overrides.txt"  # refused: a lock takes every declared dependency as declared
FLAVOURS = ("cu13", "cpu")
CUDA_MAJOR = 13
PYTHON_VERSION = "3.11"
UV_PLATFORM = "x86_64-manylinux_2_28"
# pip takes each accepted platform tag on its own: manylinux_2_28 and every older glibc's
PIP_PLATFORMS = [f"manylinux_2_{m}_x86_64" for m in range(28, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
DEFAULT_INDEX = "https://pypi.org/simple"
_MARK = re.compile(r"#\s*(gpu-only|cpu:\s*(?P<cpu>\S.*))\s*$")


def lock_path(flavour: str) -> Path:
    return ENV_DIR / f"worker-{flavour}.lock"


def flavour_spec(text: str, flavour: str) -> str:
    """worker.in for ``flavour``: cu13 as written (marks dropped), cpu without the gpu-only lines."""
    out = []
    for line in text.splitlines():
        mark = _MARK.search(line)
        requirement = line[:mark.start()].rstrip() if mark else line
        if mark and flavour == "cpu":
            if mark.group("cpu") is None:
                continue
            requirement = mark.group("cpu").strip()
        out.append(requirement)
    return "\n".join(out) + "\n"


def fragments() -> dict[str, Path]:
    """``{benchmark: its worker.in}``, in registry order."""
    return benchmarks.declared_files(FRAGMENT)


def gathered_spec() -> str:
    """The spec a lock is made from: the base, then each benchmark's fragment under a line naming it."""
    parts = [SPEC.read_text()]
    for name, path in fragments().items():
        where = path.resolve().relative_to(REPO.resolve())
        parts.append(f"# --- {name}'s packages: {where}\n{path.read_text()}")
    return "\n".join(parts)


def requirements(flavour: str) -> list[str]:
    """The flavour's requirement lines, comments dropped, sorted: what a resolution depends on."""
    spec = flavour_spec(gathered_spec(), flavour)
    lines = (re.sub(r"\s+#.*$", "", line).strip() for line in spec.splitlines())
    return sorted(line for line in lines if line and not line.startswith("#"))


def spec_digest(flavour: str) -> str:
    """What a lock was made from: its flavour's gathered requirements."""
    return hashlib.sha256(("\n".join(requirements(flavour)) + "\n").encode()).hexdigest()


def refuse_overrides() -> None:
    if OVERRIDES.exists():
        sys.exit(f"{OVERRIDES.relative_to(REPO)} is refused: a lock takes every package's declared dependencies as"
                 " declared. Change worker.in until uv resolves it without one (docs/dask.md, 'The Python environment')")


def cuda_majors(pins: list[str]) -> set[int]:
    """The CUDA majors of resolved ``name==version`` pins (``worker_lock.cuda_majors_of``, which
    the program's preview checks use too)."""
    found = {re.sub(r"[-_.]+", "-", name).lower(): version for name, _, version in (p.partition("==") for p in pins)}
    return worker_lock.cuda_majors_of(found)


def recorded_digest(path: Path) -> str | None:
    for line in path.read_text().splitlines() if path.exists() else ():
        if line.startswith("# spec-sha256: "):
            return line.split(": ", 1)[1].strip()
    return None


def _clean_env() -> dict[str, str]:
    """No site pip or uv configuration (find-links, extra indexes, constraints) leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _uv() -> list[str]:
    """uv through this interpreter (``python -m uv``: the uv wheel from PyPI, ``pip install uv``)."""
    import importlib.util

    if importlib.util.find_spec("uv") is None:
        sys.exit(f"uv is needed to resolve: {sys.executable} -m pip install uv")
    return [sys.executable, "-m", "uv"]


def kept_pins(flavour: str, workdir: Path) -> list[str]:
    """``--constraint`` arguments holding the current lock's pins (none without a lock)."""
    if not lock_path(flavour).exists():
        return []
    pins = worker_lock.pins(lock_path(flavour).read_text())
    (workdir / "kept.txt").write_text("".join(f"{name}=={version}\n" for name, version in pins.items()))
    return ["--constraint", str(workdir / "kept.txt")]


def resolve(spec: str, index_url: str, workdir: Path, constraints: list[str] | None = None) -> list[str]:
    """``name==version`` of every package the spec needs on the target."""
    (workdir / "spec.in").write_text(spec)
    out = subprocess.run([*_uv(), "pip", "compile", "--quiet", "--no-config", "--no-header", "--no-annotate",
                          "--index-url", index_url, "--python-platform", UV_PLATFORM, "--python-version",
                          PYTHON_VERSION, "--only-binary", ":all:", *(constraints or []), str(workdir / "spec.in")],
                         capture_output=True, text=True, env=_clean_env(), check=False)
    if out.returncode != 0:
        sys.exit(f"uv pip compile failed:\n{out.stderr}")
    return [line.strip() for line in out.stdout.splitlines() if line.strip() and not line.startswith("#")]


def pick_files(pins: list[str], index_url: str, workdir: Path) -> list[dict]:
    """For each pin, the wheel pip installs on the target: name, version, url, sha256."""
    (workdir / "pins.txt").write_text("\n".join(pins) + "\n")
    platforms = [arg for p in PIP_PLATFORMS for arg in ("--platform", p)]
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--isolated", "--quiet", "--dry-run",
                          "--ignore-installed", "--no-deps", "--report", "-", "--index-url", index_url,
                          "--target", str(workdir / "target"),  # pip before 24 wants it with --platform
                          "--only-binary=:all:", *platforms, "--python-version", PYTHON_VERSION,
                          "--implementation", "cp", "-r", str(workdir / "pins.txt")],
                         capture_output=True, text=True, env=_clean_env(), check=False)
    if out.returncode != 0:
        sys.exit(f"pip's dry run failed:\n{out.stderr}")
    files = []
    for item in json.loads(out.stdout)["install"]:
        info = item["download_info"]
        files.append({"name": item["metadata"]["name"], "version": item["metadata"]["version"],
                      "url": info["url"], "sha256": info["archive_info"]["hashes"]["sha256"]})
    return sorted(files, key=lambda f: re.sub(r"[-_.]+", "-", f["name"]).lower())


def render(flavour: str, files: list[dict], index_url: str) -> str:
    lines = [
        f"# The Dask pods' environment, flavour {flavour}: CPython {PYTHON_VERSION}, manylinux_2_28 x86_64, wheels only.",
        "# Generated by scripts/lock_worker_env.py from worker.in: do not edit.",
        f"# Install: pip install --require-hashes --no-deps --only-binary=:all: -r worker-{flavour}.lock",
        f"# spec-sha256: {spec_digest(flavour)}",
        f"# resolved-from: {index_url}",
    ]
    for f in files:
        lines.append(f"{f['name']}=={f['version']} \\")
        lines.append(f"    --hash=sha256:{f['sha256']}")
        lines.append(f"    # {f['url'].rsplit('/', 1)[1]}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-url", default=DEFAULT_INDEX)
    parser.add_argument("--flavour", choices=FLAVOURS, action="append")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--keep-pins", action="store_true")
    a = parser.parse_args(argv)
    flavours = a.flavour or list(FLAVOURS)
    if a.check:
        stale = [f for f in flavours if recorded_digest(lock_path(f)) != spec_digest(f)]
        for f in stale:
            print(f"{lock_path(f).relative_to(REPO)} is not the gathered worker.in's lock (the base's and the"
                  f" benchmarks': {', '.join(fragments())}): run scripts/lock_worker_env.py", file=sys.stderr)
        return 1 if stale else 0
    refuse_overrides()
    for flavour in flavours:
        with tempfile.TemporaryDirectory() as tmp:
            kept = kept_pins(flavour, Path(tmp)) if a.keep_pins else []
            pins = resolve(flavour_spec(gathered_spec(), flavour), a.index_url, Path(tmp), kept)
            majors = cuda_majors(pins)
            if majors - {CUDA_MAJOR}:
                sys.exit(f"{flavour}: CUDA libraries of majors {sorted(majors)} resolved; one, {CUDA_MAJOR}, is"
                         f" allowed: {', '.join(p for p in pins if cuda_majors([p]) - {CUDA_MAJOR})}")
            files = pick_files(pins, a.index_url, Path(tmp))
        lock_path(flavour).write_text(render(flavour, files, a.index_url))
        print(f"{lock_path(flavour).relative_to(REPO)}: {len(files)} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
