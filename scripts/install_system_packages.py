#!/usr/bin/env python3
"""Install the Debian packages that set-up and the tests need (scripts/system-packages.toml).

Only what is missing is installed (``dpkg-query``), with ``apt-get install
--no-install-recommends``; a failed install is retried once after ``apt-get update`` (a
new machine has no package lists yet). As root directly, else through sudo; with neither,
it stops naming the command to run.

Standard library only: it runs before the project's virtual environment exists (the venv
itself needs one of these packages on Debian).

Usage: scripts/install_system_packages.py [--for FILE ...] [--list]
  --for FILE   only the packages FILE needs (their ``used_by``); default: all
  --list       print the selected package names and install nothing
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_FILE = REPO / "scripts" / "system-packages.toml"


def declared(path: Path = PACKAGE_FILE) -> list[dict]:
    with path.open("rb") as f:
        return tomllib.load(f).get("package", [])


def selected(consumers: list[str] | None) -> list[dict]:
    """The packages ``consumers`` need (all when None), in file order; a package with
    ``only_without = "module"`` only where this interpreter cannot import that module
    (python3.11-venv: only for a Debian Python without ensurepip)."""
    packages = declared()
    if consumers:
        unknown = set(consumers) - {user for p in packages for user in p["used_by"]}
        if unknown:
            raise SystemExit(f"install_system_packages: no package is used by {sorted(unknown)} "
                             f"({PACKAGE_FILE.relative_to(REPO)})")
        packages = [p for p in packages if set(p["used_by"]) & set(consumers)]
    return [p for p in packages if not (p.get("only_without") and importlib.util.find_spec(p["only_without"]))]


def dpkg_installed(name: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True)
    return done.returncode == 0 and "install ok installed" in done.stdout


def missing(packages: list[dict]) -> list[str]:
    """The names of the packages to install: not installed, and (for a package declared for
    its programs) not every one of its programs on PATH already, from another source (a
    machine with NodeSource's nodejs has npm, and Debian's npm conflicts with it)."""
    def present(package: dict) -> bool:
        programs = package["programs"]
        return (bool(programs) and all(shutil.which(p) for p in programs)) or dpkg_installed(package["name"])

    return [p["name"] for p in packages if not present(p)]


def _apt(prefix: list[str], *args: str) -> int:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run([*prefix, "apt-get", "-q", "-y", *args], env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL).returncode


def install(packages: list[dict]) -> None:
    if not packages:
        print("install_system_packages: none needed here")
        return
    if shutil.which("dpkg-query") is None:
        raise SystemExit("install_system_packages: this is not a Debian system (no dpkg-query); install the"
                         f" equivalents of: {' '.join(p['name'] for p in packages)}")
    todo = missing(packages)
    if not todo:
        print(f"install_system_packages: {len(packages)} packages present")
        return
    prefix = [] if os.geteuid() == 0 else ["sudo"] if shutil.which("sudo") else None
    if prefix is None:
        raise SystemExit("install_system_packages: need root to install "
                         f"{' '.join(todo)}: run `apt-get install --no-install-recommends {' '.join(todo)}` as root")
    print(f"install_system_packages: installing {' '.join(todo)}", flush=True)
    install_args = ("install", "--no-install-recommends", *todo)
    if _apt(prefix, *install_args) != 0:
        if _apt(prefix, "update") != 0 or _apt(prefix, *install_args) != 0:
            raise SystemExit(f"install_system_packages: apt-get could not install {' '.join(todo)}")
    still = missing([p for p in packages if p["name"] in todo])
    if still:
        raise SystemExit(f"install_system_packages: still missing after the install: {' '.join(still)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--for", dest="consumers", action="append", metavar="FILE")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    packages = selected(args.consumers)
    if args.list:
        print("\n".join(p["name"] for p in packages))
    else:
        install(packages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
