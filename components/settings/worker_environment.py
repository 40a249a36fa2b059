"""Where the Dask pods' packages come from: ``workerEnvironment`` (``prepared``: the locked
environment on the shared claim, components/kube/prepared_env.py; ``image``: the image as it
is plus ``extraPipPackages`` at each start, the paper's way) and ``packageIndexUrl``.

The prepared environment is the operator backend's: the Helm backend (the paper's stacks)
always runs the image as it is, whatever ``workerEnvironment`` says.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import components.facts.support_matrix as support_matrix
from components.artifacts import worker_lock
from components.facts.dask_facts import image_cuda_major, image_facts
from components.settings.errors import Problem
from components.settings.model import Backend, Settings, WorkerEnvironment
from components.settings.reader import SettingsReader

ENVIRONMENTS = tuple(WorkerEnvironment)


def _index_url(value: str) -> str:
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError("must be an http(s) URL of a package index's simple API (https://pypi.org/simple)")
    return value.rstrip("/")


def read_worker_environment(r: SettingsReader) -> dict[str, Any]:
    """The DaskSpec fields: ``environment`` (prepared only with daskBackend=operator) and
    ``package_index_url``. ``r`` is the settings reader (``build._Reader``)."""
    chosen = r.one_of("workerEnvironment", *ENVIRONMENTS)
    index = r.check("packageIndexUrl", _index_url)
    backend = r("daskBackend")
    prepared = chosen == WorkerEnvironment.PREPARED and backend == Backend.OPERATOR
    environment = WorkerEnvironment.PREPARED if prepared else WorkerEnvironment.IMAGE
    return {"environment": environment, "package_index_url": index}


def worker_environment_checks(s: Settings) -> list[Problem]:
    """A prepared environment holds every package: none is installed at start, and the
    image's Dask is the lock's; its CUDA libraries (one major) need a driver that runs them."""
    d = s.dask
    if not d.prepared:
        return []
    out = []
    if d.extra_pip_packages.strip():
        out.append(Problem("extraPipPackages", f"is set ({d.extra_pip_packages!r}) with workerEnvironment=prepared:"
                                               " the pods install nothing at start, every package comes from"
                                               f" {worker_lock.lock_path().name}"
                                               " (components/dask/environment/worker.in)."
                                               " Add the packages to worker.in and run scripts/lock_worker_env.py,"
                                               " or set workerEnvironment=image"))
    locked = worker_lock.pins(worker_lock.lock_text()).get("distributed")
    if locked and d.dask_version != locked:
        out.append(Problem("daskImageDaskVersion", f"{d.dask_version} is not the Dask of the prepared environment"
                                                   f" ({locked}, {worker_lock.lock_path().name}) that the pods"
                                                   " run with"
                                                   f" workerEnvironment=prepared: set daskImageDaskVersion {locked}"))

    facts = image_facts(d.image)
    if facts is not None and facts.python not in (None, worker_lock.PYTHON):
        out.append(Problem("daskImage", f"{d.image} runs Python {facts.python}; the prepared environment"
                                        f" ({worker_lock.lock_path().name}) is for CPython"
                                        f" {worker_lock.PYTHON}, whose"
                                        f" interpreter the environment Job and the pods take from the image: use"
                                        f" a CPython {worker_lock.PYTHON} image such as python:3.11.15-slim-trixie"))
    return out


def pods_cuda(s: Settings) -> tuple[str | None, int | None, str]:
    """The RAPIDS release and CUDA major of the CUDA libraries the Dask pods load, and what
    holds them: the prepared environment's lock, else the image (its recorded CUDA or its tag)."""

    if s.dask.prepared:
        text = worker_lock.lock_text()
        return (worker_lock.rapids_release(text), worker_lock.CUDA_MAJOR,
                f"the prepared environment of {worker_lock.lock_path().name}")
    image = s.dask.image
    return support_matrix.image_rapids_release(image), image_cuda_major(image), f"daskImage {image}"
