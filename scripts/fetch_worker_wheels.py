#!/usr/bin/env python3
"""Fetch the wheels of the prepared environment's CPU flavour
(components/dask/environment/worker-cpu.lock) into the test cache, sha256-verified, for the
package index that tests/cluster/test_prepared_environment.py serves to the real node (the
tests themselves reach nothing but loopback and the cluster's bridge). With ``--flavour cu13``
the GPU lock's (about 4 GB, for the measurement of its cost on the real node, never make test).

``pip download --require-hashes --no-deps --only-binary=:all:`` for CPython 3.11 on manylinux
x86_64 from PyPI: pip checks every file against the lock's sha256, and this script checks them
again (a file already in the cache is only hashed). The wheels land in
``$DASK_TKG__CACHE/worker-wheels/<lock sha256, 16 hex>/``; older locks' folders are removed
(the disk is shared). A complete fetch is marked by ``.complete``.

Usage: scripts/fetch_worker_wheels.py [--check] [--flavour cpu|cu13]
Prints one JSON line: {"wheels", "lock", "files", "bytes", "cached"}. ``--check`` fetches
nothing: exit 1 when the wheels are not all there (what the test calls).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from fetch_artifacts import cache_root, file_sha256  # this folder: the same cache and hashing

REPO = Path(__file__).resolve().parents[1]
ENV_DIR = REPO / "components" / "dask" / "environment"
INDEX = "https://pypi.org/simple"
PLATFORMS = [f"manylinux_2_{m}_x86_64" for m in range(28, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]


def expected(lock_text: str) -> dict[str, str]:
    """{wheel file name: sha256} of the lock (each requirement's hash and its file comment)."""
    found, digest = {}, None
    for line in lock_text.splitlines():
        match = re.search(r"--hash=sha256:([0-9a-f]{64})", line)
        if match:
            digest = match.group(1)
        match = re.match(r"\s+#\s(\S+\.whl)$", line)
        if match and digest:
            found[match.group(1)] = digest
            digest = None
    return found


def problems(folder: Path, wanted: dict[str, str]) -> list[str]:
    out = []
    for name, digest in sorted(wanted.items()):
        path = folder / name
        if not path.is_file():
            out.append(f"{name} is missing")
        elif file_sha256(path) != digest:
            out.append(f"{name} is not the lock's file (sha256)")
    return out


def main(argv: list[str]) -> int:
    flavour = argv[argv.index("--flavour") + 1] if "--flavour" in argv else "cpu"
    lock = ENV_DIR / f"worker-{flavour}.lock"
    text = lock.read_text()
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    root = cache_root() / ("worker-wheels" if flavour == "cpu" else f"worker-wheels-{flavour}")
    folder = root / key
    wanted = expected(text)
    cached = (folder / ".complete").is_file()
    if not cached:
        if "--check" in argv:
            print(f"the {flavour} flavour's wheels are not in {folder}: run {Path(__file__).name}"
                  f"{'' if flavour == 'cpu' else ' --flavour ' + flavour} (make test does for cpu)", file=sys.stderr)
            return 1
        for old in root.glob("*") if root.is_dir() else ():
            if old.is_dir() and old.name != key:
                shutil.rmtree(old)
        folder.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env.update(PIP_CONFIG_FILE=os.devnull)
        platforms = [a for p in PLATFORMS for a in ("--platform", p)]
        subprocess.run([sys.executable, "-m", "pip", "download", "--isolated", "--quiet", "--disable-pip-version-check",
                        "--require-hashes", "--no-deps", "--only-binary=:all:", *platforms, "--python-version", "3.11",
                        "--implementation", "cp", "--index-url", INDEX, "--dest", str(folder), "-r", str(lock)],
                       check=True, env=env)
        wrong = problems(folder, wanted)
        if wrong:
            print("; ".join(wrong), file=sys.stderr)
            return 1
        (folder / ".complete").write_text(json.dumps({"files": len(wanted)}))
    size = sum((folder / name).stat().st_size for name in wanted if (folder / name).exists())
    print(json.dumps({"wheels": str(folder), "lock": str(lock), "files": len(wanted), "bytes": size,
                      "cached": cached}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
