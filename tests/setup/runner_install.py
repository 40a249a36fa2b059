"""What `pip install .` gives the runner, without a network: the distributions the wheel's
requirements resolve to (followed through every dependency, markers and extras evaluated),
taken from those installed in this venv, which `make test` installed from the pins the
wheel's ranges admit.

:func:`install_offline` builds the project's wheel (setuptools, no build isolation, no
index), makes a venv without site packages, installs the wheel into it with pip (no
dependencies, no index), and links in, file by file from each distribution's RECORD, exactly
the distributions of :func:`closure`: a package the wheel does not ask for, directly or
through a dependency, is not there, as after a real install. pip's own ``check`` then
confirms every requirement of everything in that venv is met, so the closure hides nothing.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
# What the wheel is built from: the packages pyproject.toml's find includes, and its metadata.
SOURCES = ("pyproject.toml", "README.md", "workloads", "bench")


def runtime_requirements() -> list[str]:
    """``[project] dependencies`` of pyproject.toml: what `pip install .` installs."""
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]


def closure(requirements: list[str]) -> tuple[dict[str, metadata.Distribution], list[str]]:
    """The installed distributions ``requirements`` resolve to, by canonical name, and the
    requirements nothing installed here satisfies (name missing, or a version outside the range)."""
    found: dict[str, metadata.Distribution] = {}
    extras: dict[str, set[str]] = {}
    unmet: list[str] = []
    todo = [(Requirement(text), "") for text in requirements]
    while todo:
        requirement, context = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": context}):
            continue
        name = canonicalize_name(requirement.name)
        wanted = set(requirement.extras) | {""}
        new = wanted - extras.get(name, set())
        if not new:
            continue
        try:
            dist = found.get(name) or metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            unmet.append(f"{requirement} (not installed)")
            continue
        if not requirement.specifier.contains(dist.version, prereleases=True):
            unmet.append(f"{requirement} (installed: {dist.version})")
        found[name] = dist
        extras.setdefault(name, set()).update(new)
        for text in dist.requires or []:
            todo.extend((Requirement(text), extra) for extra in sorted(new))
    return found, unmet


def build_wheel(workdir: Path) -> Path:
    """The project's wheel, built from a copy of its sources (the checkout is left as it is)."""
    source = workdir / "source"
    source.mkdir()
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(workdir / "dist"), str(source)], workdir)
    [wheel] = (workdir / "dist").glob("dask_tkg-*.whl")
    return wheel


def link_distribution(dist: metadata.Distribution, site: Path) -> int:
    """Link each file ``dist`` installed in site-packages into ``site``; how many."""
    linked = 0
    for file in dist.files or []:
        if file.parts and file.parts[0] == "..":  # console scripts and data outside site-packages
            continue
        origin = Path(str(dist.locate_file(file)))
        if not origin.is_file():
            continue
        target = site / file
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(origin)
            linked += 1
    return linked


def install_offline(workdir: Path) -> Path:
    """A venv with the project's wheel and exactly the distributions its requirements
    resolve to; returns its ``bin`` directory."""
    wheel = build_wheel(workdir)
    with_requirements = wheel_requirements(wheel)
    dists, unmet = closure(with_requirements)
    assert not unmet, f"the wheel's requirements are not all installed in this venv: {unmet}"
    venv = workdir / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], workdir)
    site = Path(run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                    workdir).strip())
    for dist in dists.values():
        link_distribution(dist, site)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    run([*pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)], workdir)
    run([*pip, "check"], workdir)
    return venv / "bin"


def wheel_requirements(wheel: Path) -> list[str]:
    """``Requires-Dist`` of the built wheel's METADATA, extras' requirements left out."""
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        headers = HeaderParser().parsestr(archive.read(name).decode("utf-8"))
    requirements = [Requirement(text) for text in headers.get_all("Requires-Dist") or []]
    return [str(r) for r in requirements if r.marker is None or r.marker.evaluate({"extra": ""})]


def clean_env() -> dict[str, str]:
    """This process's environment without what would let the checkout or this venv leak in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, check=False, cwd=cwd, capture_output=True, text=True, env=clean_env(), timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout
