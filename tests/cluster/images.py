"""The images the test cluster runs, built here by scripts/build_images.py (no registry is reachable)."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "build_images.py"
IMAGES = ("pause", "dask-runtime")


@dataclass(frozen=True)
class Image:
    name: str
    ref: str
    archive: Path


def ensure_images(names: tuple[str, ...] = IMAGES) -> dict[str, Image]:
    """Build (or find cached) OCI archives; {name: Image}. Raises with the script's output on failure."""
    result = subprocess.run([sys.executable, str(BUILD_SCRIPT), *names], check=False, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, cwd=REPO)
    if result.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT.name} {' '.join(names)} failed (exit {result.returncode}):\n"
                           f"{result.stdout}\n{result.stderr}")
    built = {}
    for line in result.stdout.splitlines():
        info = json.loads(line)
        built[info["name"]] = Image(info["name"], info["ref"], Path(info["archive"]))
    return built
