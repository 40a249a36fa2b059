"""The Dask pods' locked Python environment, as pinned: the lock files
(``components/dask/environment/worker-<flavour>.lock``, made by scripts/lock_worker_env.py from
``environment/worker.in``) and what they say: every package a wheel for CPython 3.11 on manylinux
x86_64 with its sha256, one CUDA major (13) and one source of CUDA libraries (NVIDIA's CUDA 13
wheels), no package's declared dependency overridden.

A pinned artifact like the charts and images beside it: the settings check against it, the
prepared environment (``components/kube/prepared_env.py``) installs it. Pure functions on the
lock's text; standard library only.
"""
from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

ENV_DIR = Path(__file__).resolve().parents[1] / "dask" / "environment"  # beside the Dask components that use it
FLAVOUR = "cu13"  # the pods' lock; "cpu" is its CPU flavour, for the tests
CUDA_MAJOR = 13
PYTHON = "3.11"  # the locks' interpreter (CPython, scripts/lock_worker_env.py)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")
_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}\b")


def lock_path(flavour: str = FLAVOUR) -> Path:
    return ENV_DIR / f"worker-{flavour}.lock"


@functools.cache
def lock_text(flavour: str = FLAVOUR) -> str:
    """The lock's text, read once per process (the settings checks and the program all ask)."""
    return lock_path(flavour).read_text(encoding="utf-8")


def lock_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pins(text: str) -> dict[str, str]:
    """``{normalised name: version}`` of a lock."""
    found = {}
    for line in text.splitlines():
        match = _PIN.match(line)
        if match:
            found[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return found


def requirement_blocks(text: str) -> list[str]:
    """Each requirement of a lock with its continuation lines (comments left out)."""
    blocks: list[str] = []
    for line in text.splitlines():
        if _PIN.match(line):
            blocks.append(line)
        elif line.startswith("    --") and blocks:
            blocks[-1] += "\n" + line
    return blocks


def unhashed(text: str) -> list[str]:
    """The requirements of a lock that carry no sha256 (``--require-hashes`` refuses them)."""
    return [block.splitlines()[0].split(" ")[0] for block in requirement_blocks(text) if not _HASH.search(block)]


def cuda_majors(text: str) -> set[int]:
    """The CUDA majors the lock's CUDA libraries are built for (``cuda_majors_of``)."""
    return cuda_majors_of(pins(text))


def cuda_majors_of(found: dict[str, str]) -> set[int]:
    """The CUDA majors of ``{normalised name: version}``: a ``-cu<N>`` or ``-cuda<N>x`` name, or the
    version of ``cuda-toolkit`` / ``nvidia-cuda-runtime`` (NVIDIA's CUDA 13 wheels drop the suffix;
    their other libraries carry their own version numbers, not CUDA's). Also the lock script's."""
    majors = set()
    for name, version in found.items():
        match = re.search(r"-cu(\d+)$", name) or re.search(r"-cuda(\d+)x$", name)
        if match:
            majors.add(int(match.group(1)))
        elif name in ("cuda-toolkit", "nvidia-cuda-runtime"):
            majors.add(int(version.split(".")[0]))
    return majors


def rapids_release(text: str) -> str | None:
    """The RAPIDS release (``26.10``) of a lock's cuDF, or None (the CPU flavour holds none)."""
    version = pins(text).get(f"cudf-cu{CUDA_MAJOR}")
    return ".".join(version.split(".")[:2]) if version else None
