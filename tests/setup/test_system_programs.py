"""Every program that set-up and the tests start is installed by set-up, or is on the
machine the README asks for (a minimal Debian bookworm with Python 3.11 and make).

A program that only the machine a script was written on has (``debootstrap`` once) makes
``make test`` stop on a new machine before any test runs, while CI on a machine that has it
stays green. So the programs are read off the source (``tests/setup/programs.py``) and each
must be in the minimal system's list or declared in ``scripts/system-packages.toml``, whose
installer ``make test`` runs first; and each declaration must be true of the package.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.setup import programs

HERE = Path(__file__).resolve().parent
PACKAGES = programs.REPO / "scripts" / "system-packages.toml"
MINIMAL_SYSTEM = HERE / "bookworm-minbase-python3.11-make.txt"


def _declared() -> dict:
    with PACKAGES.open("rb") as f:
        return tomllib.load(f)


def _minimal_system() -> set[str]:
    return {line.strip() for line in MINIMAL_SYSTEM.read_text().splitlines() if line and not line.startswith("#")}


def test_every_started_program_is_installed_by_set_up_or_on_a_minimal_debian():
    declared = _declared()
    installed = {program for package in declared["package"] for program in package["programs"]}
    optional = {entry["program"] for entry in declared.get("optional", [])}
    starts = programs.started_programs()
    unprovided = [start for start in starts if start.program not in _minimal_system() | installed | optional]
    assert not unprovided, (
        "programs started that no install step provides and a minimal Debian bookworm with python3.11 lacks "
        f"(declare each in {PACKAGES.name} under the package that has it):\n  "
        + "\n  ".join(map(str, unprovided)))


def test_the_reader_finds_the_programs_it_must():
    """Controls, one per way a program is started: a shell command (behind sudo and after
    ``&&``), a command substitution, a Python argv list, a forwarding helper (``run("ip",
    ...)``), a helper through ``ip netns exec`` and a ``shutil.which``; and none of the
    shell's builtins, functions, assignments or variables."""
    script = ('f() { true; }\nX=$(gzip -c a)\nA=(not a command)\n[[ -x /y ]] && "${sudo[@]}" debootstrap x\n'
              'f; exec 9>lock; echo "$(( 1 + 2 ))" 1>&2; "$cache/bin/helm" version; $python -m venv v\n')
    assert sorted({s.program for s in programs.shell_starts(script, "s.sh")}) == ["debootstrap", "gzip"]
    source = ('import subprocess, shutil\n'
              'def run(*args):\n    return subprocess.run(list(args))\n'
              'def ns(*args):\n    return run("ip", "netns", "exec", "n", *args)\n'
              'def openssl(*args):\n    subprocess.run(["openssl", *args])\n'
              'subprocess.run(["debootstrap", "x"]); run("ctr", "images"); ns("sysctl", "-w")\n'
              'openssl("req"); shutil.which("nginx"); subprocess.run([sys.executable, "-c", "pass"])\n')
    found = sorted({s.program for s in programs.python_starts(source, "f.py")})
    assert found == ["ctr", "debootstrap", "ip", "nginx", "openssl", "sysctl"]


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian system: the packages cannot be asked")
def test_each_package_installs_the_programs_declared_for_it():
    """The declarations are checked against the packages themselves (``dpkg -L``), which
    ``make test`` installed before the tests: a program listed under the wrong package
    would leave the guard above satisfied and the machine without it."""
    wrong, checked = [], 0
    for package in _declared()["package"]:
        listed = subprocess.run(["dpkg", "-L", package["name"]], check=False, capture_output=True, text=True)
        if listed.returncode != 0:  # the installer took its programs from elsewhere on PATH
            assert package["programs"] and all(shutil.which(p) for p in package["programs"]), (
                f"{package['name']} is not installed and its programs are not on PATH: run"
                " scripts/install_system_packages.py")
            continue
        checked += 1
        files = [line for line in listed.stdout.splitlines() if "/bin/" in line or "/sbin/" in line]
        names = {Path(line).name for line in files}
        real = {os.path.realpath(line) for line in files}  # through alternatives: iptables -> iptables-nft

        def provides(program: str, names: set[str] = names, real: set[str] = real) -> bool:
            found = shutil.which(program)
            return program in names or (found is not None and os.path.realpath(found) in real)

        wrong += [f"{package['name']} has no {program}" for program in package["programs"] if not provides(program)]
    assert not wrong, wrong
    assert checked >= len(_declared()["package"]) - 2  # npm from NodeSource, say: not most of them


def test_every_package_says_why_and_who_needs_it():
    for package in _declared()["package"]:
        assert package.get("why") and package.get("used_by"), package["name"]
        missing = [path for path in package["used_by"] if not (programs.REPO / path).is_file()]
        assert not missing, f"{package['name']}: used_by names files that do not exist: {missing}"
