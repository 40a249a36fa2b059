"""The stand-in's binaries: Debian's ``etcd`` 3.4 and a ``kube-apiserver`` v1.20.2 built from
Debian bookworm's ``kubernetes`` source package by ``scripts/build_kube_apiserver.sh``, cached
under ``${DASK_TKG_CACHE:-~/.cache/dask-tkg}/kube/bin`` (the real node's other components are
built into the same folder by ``scripts/build_kube_node.sh``).

A missing binary is built once, about 6-7 minutes on 2 cores (root and Debian's package archive
needed); a failed build raises :class:`KubeBuildError` with the build log's tail.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

from tests.kube.processes import log_tail
from workloads.core.config import cache_dir

REPO = Path(__file__).resolve().parents[2]
KUBE_CACHE = cache_dir() / "kube"
BIN_DIR = KUBE_CACHE / "bin"
KUBE_APISERVER_BIN = BIN_DIR / "kube-apiserver"
ETCD_BIN = BIN_DIR / "etcd"
BUILD_SCRIPT = REPO / "scripts" / "build_kube_apiserver.sh"
BUILD_LOG = KUBE_CACHE / "build.log"
BUILD_TIMEOUT_S = 45 * 60


class KubeBuildError(RuntimeError):
    """scripts/build_kube_apiserver.sh failed or left no binaries."""


def binaries_present() -> bool:
    return all(p.is_file() and os.access(p, os.X_OK) for p in (KUBE_APISERVER_BIN, ETCD_BIN))


def ensure_binaries() -> None:
    """Run the build script when the cached binaries are missing; raise KubeBuildError on failure."""
    if binaries_present():
        return
    started = time.monotonic()
    log_path = BUILD_LOG
    try:
        KUBE_CACHE.mkdir(parents=True, exist_ok=True)
    except OSError:
        # the script reports why it cannot use the cache; keep its log elsewhere
        log_path = Path(tempfile.mkstemp(prefix="build_kube_apiserver-", suffix=".log")[1])
    rc: int | str
    try:
        with log_path.open("w") as log:
            rc = subprocess.run(
                ["bash", str(BUILD_SCRIPT)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT_S, cwd=REPO,
            ).returncode
    except subprocess.TimeoutExpired:
        rc = f"timeout after {BUILD_TIMEOUT_S} s"
    except OSError as exc:
        rc = f"could not run: {exc}"
    if rc != 0 or not binaries_present():
        raise KubeBuildError(
            f"{BUILD_SCRIPT.relative_to(REPO)} failed (exit {rc}) after {time.monotonic() - started:.0f} s; "
            f"kube-apiserver and etcd are needed in {BIN_DIR}. Full log: {log_path}\n"
            f"--- last lines ---\n{log_tail(log_path, 15)}"
        )
