"""Prometheus' promtool, built from the Go module proxy by ``scripts/build_promtool.sh`` (its pins:
``scripts/promtool/go.mod``, ``go.sum``) into ``$CACHE/promtool/bin``, and the calls the tests make.

A missing build is made once before the first test that needs it; a failed build raises
:class:`PromtoolBuildError` with its log's tail.
"""
from __future__ import annotations

import os
import re
import subprocess
from functools import cache
from pathlib import Path

from tests.kube.processes import log_tail
from workloads.core.config import cache_dir

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "build_promtool.sh"
MODULE_FILE = REPO / "scripts" / "promtool" / "go.mod"
CACHE = cache_dir() / "promtool"
BINARY = CACHE / "bin" / "promtool"
BUILD_LOG = CACHE / "build.log"
BUILD_TIMEOUT_S = 30 * 60
RUN_TIMEOUT_S = 120


class PromtoolBuildError(RuntimeError):
    """The build script failed or left no binary."""


def pinned_version() -> str:
    """Prometheus' version the build pins (module v0.316.0 -> 3.16.0), read from go.mod."""
    match = re.search(r"^\s*(?:require\s+)?github\.com/prometheus/prometheus v0\.3(\d\d)\.(\d+)\b",
                      MODULE_FILE.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{MODULE_FILE.relative_to(REPO)}: no github.com/prometheus/prometheus v0.3xx.y")
    return f"3.{int(match.group(1))}.{match.group(2)}"


@cache
def promtool() -> Path:
    """The binary, built first when missing or built from other pins (the script checks its stamp;
    once a session)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with BUILD_LOG.open("w") as log:
        try:
            rc = subprocess.run(["bash", str(BUILD_SCRIPT)], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S, cwd=REPO, check=False).returncode
        except subprocess.TimeoutExpired:
            rc = -1
    if rc != 0 or not (BINARY.is_file() and os.access(BINARY, os.X_OK)):
        raise PromtoolBuildError(f"{BUILD_SCRIPT.relative_to(REPO)} failed (exit {rc}); full log: {BUILD_LOG}\n"
                                 f"--- last lines ---\n{log_tail(BUILD_LOG, 15)}")
    return BINARY


def invoke(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``promtool ARGS``, its output captured (never raises on a non-zero exit)."""
    return subprocess.run([str(promtool()), *map(str, args)], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, cwd=cwd, check=False)
