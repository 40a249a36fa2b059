#!/usr/bin/env python3
"""Build the Python environment that stands in for the default Dask image in the real-cluster
test tests/cluster/test_default_image.py, into the test cache (never into the repository).

The default image is RAPIDS 26.10's ``rapidsai/notebooks:26.10-cuda12-py3.11``
(components/facts/dask_facts.py): Python 3.11, dask and distributed 2026.7.1, the RAPIDS modules
the benchmarks use (pandas, pyarrow, numpy, xgboost 3.2.0) and, through its entrypoint's
``pip install $EXTRA_PIP_PACKAGES``, torch and torchvision. It holds nothing of this project.
The stand-in is:

- a virtual environment of the runner's base interpreter (Python 3.11, no system site
  packages) with dask[dataframe] and distributed 2026.7.1, pandas, pyarrow, numpy and
  ``xgboost-cpu`` 3.2.0 (the CPU build of xgboost 3.2.0, as RAPIDS 26.10 pins it: the GPU
  wheel adds ~600 MB of CUDA and NCCL that a CPU node cannot use), installed by pip from
  PyPI with pip's cache under the test cache. Every other version is constrained to the one
  the runner's environment (``sys.prefix`` of the interpreter running this script) has, so
  the build is reproducible;
- torch and torchvision NOT installed again (the runner's CUDA 13 torch, 2.14.1 as the lock's,
  is ~5.5 GB, and this machine's disk is shared): a
  directory of symbolic links to exactly the distributions torch and torchvision need
  (their requirement closure, extras included, less what the venv already has) in the
  runner's site-packages, added to the venv's ``sys.path`` by a ``.pth`` file. So the
  workers' torch is the runner's 2.14.1, the GPU lock's version.

Nothing of this project (no ``workloads``, no ``dask-tkg`` distribution) is installed or
linked: the test asserts that inside a pod.

The environment lives at ``$DASK_TKG__CACHE/default-image-env/<key>/`` (``venv/``, ``links/``),
``<key>`` the hash of this script, the base interpreter's version, the constraints and the
runner's site-packages path (the links point into it: each checkout has its own venv). Older
keys are removed. A complete build is marked by ``.complete`` and reused
while every link still resolves; a link left dangling (the checkout it pointed into was deleted)
makes it rebuild, since a dangling ``*.dist-info`` link makes ``importlib.metadata`` fail with
``No package metadata was found`` inside the pods.

Usage: scripts/build_default_image_env.py [--check]
Prints one JSON line: {"venv", "python", "links", "runner_site_packages", "size_bytes", "cached"}.
``--check`` builds nothing: exit 1 when the environment is not built (what the test calls).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

# What the image holds that the benchmarks need (components/facts/dask_facts.py, rapidsai/notebooks)
INSTALL = ("dask[dataframe]==2026.7.1", "distributed==2026.7.1", "pandas", "pyarrow", "numpy", "xgboost-cpu==3.2.0")
# What the image's EXTRA_PIP_PACKAGES installs (components/settings/support.py), linked from the runner
LINKED = ("torch", "torchvision")
# Never linked, never installed: this project
PROJECT = "dask-tkg"


def cache_root() -> Path:
    root = os.environ.get("DASK_TKG__CACHE") or os.environ.get("DASK_TKG_CACHE") or "~/.cache/dask-tkg"
    return Path(root).expanduser()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runner_distributions() -> dict[str, importlib.metadata.Distribution]:
    """The distributions in the runner's own site-packages (not the base interpreter's)."""
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    found = {}
    for dist in importlib.metadata.distributions(path=[str(site)]):
        found.setdefault(_normal(dist.metadata["Name"]), dist)
    return found


def constraints(dists: dict[str, importlib.metadata.Distribution]) -> list[str]:
    return sorted(f"{d.metadata['Name']}=={d.version}" for n, d in dists.items() if n != _normal(PROJECT))


def closure(dists: dict[str, importlib.metadata.Distribution], roots: tuple[str, ...]) -> list[str]:
    """The normalised names of ``roots`` and everything they require here, extras followed."""
    from packaging.markers import default_environment
    from packaging.requirements import Requirement

    env = dict(default_environment())
    seen: dict[str, set[str]] = {}
    todo = [(_normal(r), frozenset()) for r in roots]
    while todo:
        name, extras = todo.pop()
        if name not in dists or (name in seen and extras <= seen[name]):
            continue
        seen.setdefault(name, set()).update(extras)
        for text in dists[name].requires or []:
            req = Requirement(text)
            if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e})
                                                  for e in ({""} | set(extras))):
                continue
            todo.append((_normal(req.name), frozenset(req.extras)))
    return sorted(seen)


def _top_levels(dist: importlib.metadata.Distribution) -> set[str]:
    tops = set()
    for f in dist.files or []:
        if f.parts and f.parts[0] not in ("..", "__pycache__") and not f.parts[0].endswith(".pth"):
            tops.add(f.parts[0])
    return tops


def runner_site() -> Path:
    """The runner's site-packages, which the links point into."""
    return Path(sysconfig.get_paths()["purelib"]).resolve()


def dangling_links(home: Path) -> list[str]:
    """Links of ``home/links`` whose target is gone."""
    links = home / "links"
    return sorted(p.name for p in links.iterdir() if p.is_symlink() and not p.exists()) if links.is_dir() else []


def reusable(home: Path) -> bool:
    """A complete build whose every link still resolves."""
    return (home / ".complete").is_file() and not dangling_links(home)


def link_tree(links: Path, site: Path, dists: dict[str, importlib.metadata.Distribution], names: list[str]) -> None:
    links.mkdir(parents=True, exist_ok=True)
    for name in names:
        for top in _top_levels(dists[name]):
            target = site / top
            if target.exists() and not (links / top).exists():
                (links / top).symlink_to(target)


def build(home: Path, key_parts: list[str], dists) -> None:
    venv, links = home / "venv", home / "links"
    site_here = runner_site()
    base_python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    (home / "constraints.txt").write_text("\n".join(key_parts[2:]) + "\n")
    # pip from the runner's environment, installing into the new venv (its own pip is not needed)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--disable-pip-version-check", "--cache-dir", str(cache_root() / "pip"),
                    "--constraint", str(home / "constraints.txt"), *INSTALL], check=True)
    installed = {_normal(d.metadata["Name"]) for d in importlib.metadata.distributions(
        path=[str(venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages")])}
    wanted = [n for n in closure(dists, LINKED) if n not in installed and n != _normal(PROJECT)]
    link_tree(links, site_here, dists, wanted)
    site_venv = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site_venv / "zz_extra_pip_packages.pth").write_text(f"{links}\n")
    (home / "linked.json").write_text(json.dumps(wanted, indent=1))


def disk_usage(path: Path) -> int:
    """Bytes the environment itself takes: symlinks count as links (lstat), not as their targets."""
    return sum(os.lstat(os.path.join(root, f)).st_size for root, _, files in os.walk(path) for f in files)


def main(argv: list[str]) -> int:
    dists = runner_distributions()
    pins = constraints(dists)
    site = runner_site()
    key_parts = [Path(__file__).read_text(), sys.version, *pins]
    key = hashlib.sha256("\0".join([*key_parts, str(site)]).encode()).hexdigest()[:16]
    root = cache_root() / "default-image-env"
    home = root / key
    cached = reusable(home)
    if not cached:
        if "--check" in argv:
            gone = dangling_links(home)
            why = (f"{len(gone)} of its links point to nothing (e.g. {gone[0]})" if gone
                   else "it is not built")
            print(f"the default image's stand-in environment under {home} cannot be used: {why};"
                  f" run {Path(__file__).name} (make test does)", file=sys.stderr)
            return 1
        for old in root.glob("*") if root.is_dir() else ():
            if old.is_dir() and old.name != key:
                shutil.rmtree(old)  # the disk is shared: one environment at a time
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        build(home, key_parts, dists)
        (home / ".complete").write_text(json.dumps({"size_bytes": disk_usage(home)}))
    facts = json.loads((home / ".complete").read_text())
    print(json.dumps({"venv": str(home / "venv"), "python": str(home / "venv" / "bin" / "python"),
                      "links": str(home / "links"),
                      "runner_site_packages": str(site),
                      "base_prefix": sys.base_prefix, "size_bytes": facts["size_bytes"], "cached": cached}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
