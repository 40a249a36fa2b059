#!/usr/bin/env python3
"""Install the Dask pods' GPU lock in a clean virtual environment here, as the environment Job
does (``pip install --require-hashes --no-deps --only-binary=:all:``), then check that every
installed package's declared dependencies hold (``pip check``: the lock overrides none) and
that the GPU packages import on a machine without a GPU. Writes the figures to
docs/results/worker-lock-install.json.

Not a CI test: it downloads the lock's wheels (about 7.7 GB installed) from the index.

Usage: scripts/check_worker_lock.py [--index-url URL] [--keep]
"""
from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from components.artifacts import worker_lock  # noqa: E402

RESULT = REPO / "docs" / "results" / "worker-lock-install.json"
IMPORTS = ("cudf", "dask_cudf", "dask_cuda", "torch", "xgboost", "cupy")
PROBE = ("import importlib, json, torch\n"
         f"mods = {{m: importlib.import_module(m) for m in {IMPORTS!r}}}\n"
         "print(json.dumps({'versions': {m: getattr(v, '__version__', '') for m, v in mods.items()},"
         " 'torch_cuda': torch.version.cuda, 'cuda_available': torch.cuda.is_available()}))\n")


def run(command: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, check=False, **kw)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-url", default="https://pypi.org/simple")
    parser.add_argument("--keep", action="store_true", help="keep the environment (its path is printed)")
    a = parser.parse_args(argv)
    lock = worker_lock.lock_path()
    home = Path(tempfile.mkdtemp(prefix="worker-lock-"))
    venv = home / "venv"
    try:
        if run([sys.executable, "-m", "venv", str(venv)]).returncode:
            sys.exit("python -m venv failed")
        python = str(venv / "bin" / "python")
        started = time.monotonic()
        install = run([python, "-m", "pip", "install", "--no-input", "--disable-pip-version-check", "--isolated",
                       "--no-cache-dir", "--require-hashes", "--no-deps", "--only-binary=:all:",
                       "--index-url", a.index_url, "-r", str(lock)])
        seconds = round(time.monotonic() - started, 1)
        if install.returncode:
            sys.exit(f"the lock does not install:\n{install.stderr[-3000:]}")
        check = run([python, "-m", "pip", "check"])
        probe = run([python, "-c", PROBE], cwd=home)
        size = int(run(["du", "-sb", str(venv)]).stdout.split()[0])
        record = {
            "what": "pip install --require-hashes --no-deps --only-binary=:all: of the GPU lock in a clean venv"
                    " (CPython 3.11, x86_64, no GPU), pip check, and the GPU packages imported",
            "measured_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "lock": lock.name, "lock_sha256": worker_lock.lock_digest(lock.read_text()),
            "packages": len(worker_lock.pins(lock.read_text())), "install_seconds": seconds,
            "installed_bytes": size, "pip_check": check.stdout.strip() or check.stderr.strip(),
            "pip_check_ok": check.returncode == 0,
            "imports": json.loads(probe.stdout) if probe.returncode == 0 else {"error": probe.stderr[-2000:]},
        }
        RESULT.write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps(record, indent=1))
        return 0 if check.returncode == 0 and probe.returncode == 0 else 1
    finally:
        if a.keep:
            print(f"kept: {venv}")
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
