"""The prepared environment's check (components/dask/environment/env_manifest.py), run as every
pod's ``verify-environment`` init container runs it: ``python -I -S -c <the script> verify ROOT``
with ``EXPECTED_DIGEST``, on a small tree made here (a venv's shape: a package, a script, a link
to the interpreter). Each change a writer of the share could make stops it with a message
naming the path; nothing of the environment or of ``PYTHON*`` is imported first.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import components.kube.prepared_env as prepared_env
from components.artifacts import worker_lock

sys.path.insert(0, str(worker_lock.ENV_DIR))
import env_manifest

sys.path.pop(0)


def make_tree(root: Path) -> Path:
    site = root / "lib" / "python3.11" / "site-packages"
    (site / "dask").mkdir(parents=True)
    (site / "dask" / "__init__.py").write_text("VERSION = '1'\n")
    (root / "bin").mkdir()
    (root / "bin" / "dask").write_text("#!/opt/dask-env/bin/python\nimport dask\n")
    (root / "bin" / "dask").chmod(0o755)
    (root / "bin" / "python").symlink_to(sys.base_prefix + "/bin/python3")
    (root / "pyvenv.cfg").write_text("home = /usr/local/bin\n")
    return root


def record(root: Path) -> str:
    """What the Job does after pip: the manifest beside the tree, its digest recorded."""
    text = env_manifest.manifest(str(root))
    (root / env_manifest.MANIFEST).write_text(text)
    (root / ".complete").write_text("lock\n")
    return env_manifest.digest(text)


def check(root: Path, expected: str, **env) -> subprocess.CompletedProcess:
    command = prepared_env.verify_container("image", "environments/0123456789abcdef")["command"]
    assert command[:5] == ["python", "-I", "-S", "-c", prepared_env.script("env_manifest.py")]
    return subprocess.run([sys.executable, *command[1:-1], str(root)], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "EXPECTED_DIGEST": expected, **env}, check=False)


@pytest.fixture()
def tree(tmp_path):
    root = make_tree(tmp_path / "env")
    return root, record(root)


def test_the_recorded_tree_passes(tree):
    root, digest = tree
    done = check(root, digest)
    assert done.returncode == 0, done.stderr
    assert f"match the recorded digest {digest[:16]}" in done.stdout


def test_the_manifest_is_the_same_however_often_it_is_made(tree):
    root, digest = tree
    assert env_manifest.digest(env_manifest.manifest(str(root))) == digest


@pytest.mark.parametrize("change, kind, path", [
    (lambda r: (r / "lib/python3.11/site-packages/dask/__init__.py").write_text("import os\n"), "changed",
     "lib/python3.11/site-packages/dask/__init__.py"),
    (lambda r: (r / "lib/python3.11/site-packages/evil.pth").write_text("import os\n"), "added",
     "lib/python3.11/site-packages/evil.pth"),
    (lambda r: (r / "bin/dask").unlink(), "missing", "bin/dask"),
    (lambda r: (r / "pyvenv.cfg").chmod(0o777), "changed", "pyvenv.cfg"),
    (lambda r: ((r / "bin/python").unlink(), (r / "bin/python").symlink_to("/tmp/python")), "changed", "bin/python"),
    (lambda r: (r / "lib/python3.11/site-packages/dask/sub").mkdir(), "added", "lib/python3.11/site-packages/dask/sub"),
])
def test_each_change_stops_the_pod_naming_the_path(tree, change, kind, path):
    root, digest = tree
    change(root)
    done = check(root, digest)
    assert done.returncode == 1, done.stdout
    assert "is not the one the environment Job recorded" in done.stderr and "nothing from it ran" in done.stderr
    assert f"{kind}: {path}" in done.stderr, done.stderr


def test_a_rewritten_manifest_is_no_cover(tree):
    """Whoever changes a file and rewrites the manifest on the share does not change the record."""
    root, digest = tree
    (root / "bin/dask").write_text("#!/bin/sh\necho owned\n")
    (root / env_manifest.MANIFEST).write_text(env_manifest.manifest(str(root)))
    done = check(root, digest)
    assert done.returncode == 1
    assert "Its manifest (.manifest) is changed or gone as well" in done.stderr


def test_nothing_of_the_environment_or_python_variables_runs_first(tree, tmp_path):
    """``-I -S``: no PYTHONPATH, no sitecustomize, no .pth of any site directory."""
    root, digest = tree
    hook = tmp_path / "hook"
    hook.mkdir()
    witness = tmp_path / "ran"
    (hook / "sitecustomize.py").write_text(f"open({str(witness)!r}, 'w').write('ran')\n")
    (root / "lib/python3.11/site-packages/evil.pth").write_text(f"import os; open({str(witness)!r}, 'w')\n")
    done = check(root, digest, PYTHONPATH=str(hook), PYTHONSTARTUP=str(hook / "sitecustomize.py"))
    assert done.returncode == 1 and "added: lib/python3.11/site-packages/evil.pth" in done.stderr
    assert not witness.exists()


def test_a_missing_record_is_a_clear_error(tree):
    root, _ = tree
    done = check(root, "")
    assert done.returncode == 2 and "EXPECTED_DIGEST is not a sha256 digest" in done.stderr
