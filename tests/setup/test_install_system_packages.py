"""What the system-package installer selects: by the file that needs the packages, and
python3.11-venv only for an interpreter without ensurepip (Debian's python3.11 alone)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.setup.programs import REPO

SCRIPT = REPO / "scripts" / "install_system_packages.py"


def _list(*consumers: str) -> subprocess.CompletedProcess:
    args = [arg for consumer in consumers for arg in ("--for", consumer)]
    return subprocess.run([sys.executable, str(SCRIPT), "--list", *args], check=False, capture_output=True, text=True)


def test_the_venv_package_only_for_a_python_without_ensurepip():
    """With ensurepip (this interpreter) the Makefile needs nothing, and that is no error:
    make run on a machine whose Python has its own ensurepip installs no package."""
    assert importlib.util.find_spec("ensurepip") is not None
    done = _list("Makefile")
    assert done.returncode == 0 and done.stdout.split() == [], done.stderr


def test_a_build_script_gets_its_own_packages():
    done = _list("scripts/build_vcsim.sh")
    assert done.returncode == 0 and done.stdout.split() == [
        "util-linux", "golang-go", "golang-github-vmware-govmomi-dev", "openssl"]


@pytest.mark.parametrize("consumer", ["scripts/nothing.sh"])
def test_a_file_that_needs_no_package_is_named(consumer):
    done = _list(consumer)
    assert done.returncode == 1 and "no package is used by ['scripts/nothing.sh']" in done.stderr


def test_a_package_whose_programs_are_on_path_already_is_not_installed():
    """NodeSource's nodejs brings npm, and Debian's npm conflicts with it: apt-get refused
    the whole install on such a machine (this one, CI's) until the programs on PATH counted."""
    spec = importlib.util.spec_from_file_location("install_system_packages", SCRIPT)
    installer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installer)
    on_path = {"name": "not-a-debian-package", "programs": ["sh"]}
    absent = {"name": "not-a-debian-package-either", "programs": ["no-such-program-here"]}
    library = {"name": "not-a-debian-library", "programs": []}
    assert installer.missing([on_path, absent, library]) == ["not-a-debian-package-either", "not-a-debian-library"]
