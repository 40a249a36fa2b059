"""A weights file the workers do not have: the real runner on its local cluster, with
``--weights`` naming a file that is not there. The run fails in one line that names the file
and the worker, at once (loading the model again cannot help), and no worker traceback
reaches the console."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from .support import REPO


def test_a_missing_weights_file_is_one_line_naming_it_and_the_worker(data_root, tmp_path):
    missing = tmp_path / "nope.pt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-m", "workloads.run", "--local", "--workers", "2", "--dashboard-address", ":0",
         "--data-dir", str(data_root), "--output", str(tmp_path / "out"), "--no-report", "--no-performance-report",
         "--benchmark", "images", "--device", "cpu", "--weights", str(missing)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600, check=False)

    text = done.stdout
    assert done.returncode == 1, text
    said = [line for line in text.splitlines() if str(missing) in line and not line.startswith("images ")]
    assert len(said) == 1, text
    assert re.fullmatch(rf"images: failed in [0-9.]+ s: ModelNotLoaded: weights file {re.escape(str(missing))} does"
                        r" not exist on worker tcp://127\.0\.0\.1:\d+: give --weights a path every worker sees",
                        said[0]), said[0]
    assert "Traceback" not in text and "loading it again" not in text, text
