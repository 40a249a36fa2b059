"""Whether this machine has an NVIDIA GPU the tests can use: the ``gpu`` marker's skip
(tests/conftest.py) and the tests that choose a device read it from here."""
from __future__ import annotations

import shutil
import subprocess


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], check=False, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


HAS_GPU = _has_gpu()
