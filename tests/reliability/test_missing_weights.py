"""A weights file the workers do not have, or cannot use: the real runner on its local cluster,
with ``--weights`` naming a file that is not there, a directory, or a file that holds no PyTorch
weights. The run fails in one line that names the file, the worker and why, at once (loading the
model again reads the same file), and no worker traceback reaches the console."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .support import REPO


def run_with_weights(data_root: Path, tmp_path: Path, weights: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-m", "workloads.run", "--local", "--workers", "2", "--dashboard-address", ":0",
         "--data-dir", str(data_root), "--output", str(tmp_path / "out"), "--no-report", "--no-performance-report",
         "--benchmark", "images", "--device", "cpu", "--weights", str(weights)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, check=False)


def the_line(text: str, weights: Path) -> str:
    """The one line of the output that names the weights file (the run's own summary aside)."""
    said = [line for line in text.splitlines() if str(weights) in line and not line.startswith("images ")]
    assert len(said) == 1, text
    assert "Traceback" not in text and "loading it again" not in text, text
    return said[0]


def test_a_missing_weights_file_is_one_line_naming_it_and_the_worker(data_root, tmp_path):
    missing = tmp_path / "nope.pt"
    done = run_with_weights(data_root, tmp_path, missing)
    assert done.returncode == 1, done.stdout
    line = the_line(done.stdout, missing)
    assert re.fullmatch(rf"images: failed in [0-9.]+ s: ModelNotLoaded: weights file {re.escape(str(missing))} does"
                        r" not exist on worker tcp://127\.0\.0\.1:\d+: give --weights a path every worker sees",
                        line), line


@pytest.mark.parametrize(("kind", "why"), [
    ("directory", r"cannot be read \(Is a directory\)"),
    ("text", r"is not a PyTorch weights file \(\w+: .+\)"),
])
def test_a_weights_file_the_workers_cannot_use_is_one_line_saying_why(data_root, tmp_path, kind, why):
    weights = tmp_path / "weights.pt"
    if kind == "directory":
        weights.mkdir()
    else:
        weights.write_text("a page of HTML a proxy served instead of the weights\n", encoding="utf-8")
    done = run_with_weights(data_root, tmp_path, weights)
    assert done.returncode == 1, done.stdout
    line = the_line(done.stdout, weights)
    assert re.fullmatch(rf"images: failed in [0-9.]+ s: ModelNotLoaded: weights file {re.escape(str(weights))} on"
                        rf" worker tcp://127\.0\.0\.1:\d+ {why}: give --weights a torchvision state dict every"
                        r" worker can read", line), line
