"""The image each stack deploys, against what the runner needs of it: the same Python and Dask
as the runner (its preflight refuses workers of another Dask), and every module the
benchmarks import, from the image or from what its entrypoint pip-installs at start
(EXTRA_PIP_PACKAGES). The image's versions are the published ones, recorded with their source
in ``components/facts/dask_facts.py``; the runner's are ``requirements.txt``'s pins."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import components.facts.dask_facts as dask_facts
from components.artifacts import worker_lock
from components.settings.support import runner_image_notice
from tests.render.stacks import stack_settings
from tests.requirements import pins
from tests.unit.support import PAPER_PLATFORM
from workloads.images import benchmark as images_benchmark
from workloads.taxi import benchmark as taxi_benchmark

REPO = Path(__file__).resolve().parents[2]
CURRENT_STACKS = ("dev", "full")
PAPER_STACKS = ("reference", "reference-dev")
README_PYTHON = "3.11"  # the README's set-up: a fresh machine with Python 3.11
# What a pip requirement brings that the benchmarks import: torchvision's METADATA (0.25.0)
# asks for numpy, torch and pillow (imported as PIL).
PIP_MODULES = {"torch": {"torch"}, "torchvision": {"torchvision", "torch", "PIL", "numpy"}}
# Distributions of the prepared environment's lock whose import name is not their name
LOCK_MODULES = {"pillow": "PIL", "xgboost-cpu": "xgboost", "xgboost-cu13": "xgboost"}


def prepared_modules() -> set[str]:
    """What the prepared environment (workerEnvironment=prepared) lets the pods import."""
    return {LOCK_MODULES.get(name, name.replace("-", "_")) for name in worker_lock.pins(worker_lock.lock_text())}


def pinned(name: str) -> str:
    """``name``'s ``==`` pin in requirements.txt."""
    found = pins(REPO / "requirements.txt")
    assert name in found, f"requirements.txt pins no {name}"
    return found[name]


def pip_modules(extra_pip_packages: str) -> set[str]:
    modules: set[str] = set()
    for spec in extra_pip_packages.split():
        name = re.split(r"[=<>!~\[]", spec, maxsplit=1)[0]
        modules |= PIP_MODULES.get(name, {name})
    return modules


def image_of(stack: str) -> tuple[dask_facts.ImageFacts, object]:
    settings = stack_settings(stack, {})
    facts = dask_facts.image_facts(settings.dask.image)
    assert facts is not None, \
        f"{stack}: no facts recorded for {settings.dask.image} (components/facts/dask_facts.py)"
    return facts, settings


@pytest.mark.parametrize("stack", CURRENT_STACKS)
def test_the_default_image_runs_the_runners_python_and_dask(stack):
    facts, settings = image_of(stack)
    assert facts.python == README_PYTHON == f"{sys.version_info.major}.{sys.version_info.minor}"
    dask = facts.dask_version
    if settings.dask.environment == "prepared":  # the image is the interpreter; Dask is the lock's
        dask = worker_lock.pins(worker_lock.lock_text())["distributed"]
    assert dask == pinned("dask") == pinned("distributed") == settings.dask.dask_version


@pytest.mark.parametrize("stack", CURRENT_STACKS)
def test_the_default_image_has_every_module_the_benchmarks_import(stack):
    facts, settings = image_of(stack)
    needed = set(images_benchmark.REQUIRED_PACKAGES) | set(taxi_benchmark.REQUIRED_PACKAGES)
    held = prepared_modules() if settings.dask.environment == "prepared" else facts.modules
    missing = needed - held - pip_modules(settings.dask.extra_pip_packages)
    assert missing == set(), f"{stack}: {settings.dask.image} with EXTRA_PIP_PACKAGES lacks {sorted(missing)}"


@pytest.mark.parametrize("stack", CURRENT_STACKS)
def test_the_runner_drives_the_default_image(stack):
    _, settings = image_of(stack)
    assert runner_image_notice(settings, (README_PYTHON, pinned("distributed"))) is None


@pytest.mark.parametrize("stack", PAPER_STACKS)
def test_the_papers_image_is_said_to_be_beyond_the_runner(stack):
    _, settings = image_of(stack)
    notice = runner_image_notice(settings, (README_PYTHON, pinned("distributed")))
    assert notice is not None and "cannot drive" in notice


def test_the_pip_cache_claim_is_mounted_where_the_images_user_keeps_it():
    assert dask_facts.pip_cache_mount("rapidsai/notebooks:26.10-cuda12-py3.11") == "/home/rapids/.cache/pip"
    # the paper's image runs as root: the pods run as RUN_AS, whose home is an emptyDir of its own
    assert dask_facts.pip_cache_mount(PAPER_PLATFORM["daskImage"]) == "/home/dask/.cache/pip"
