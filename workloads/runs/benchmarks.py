"""The registry of benchmarks the runner knows, and the protocol each one follows.

A benchmark is one folder: its protocol module (imported lazily, so ``--help`` and the
other benchmark never pay for torch or xgboost), its profiles, and its bench package. The
generic code (the runner, the preflight, the report, the bench suite) loops over
:data:`BENCHMARKS` and reads what each module declares, so adding a benchmark is its folder
and one line here. The module provides:

``NAME: str``
    The ``--benchmark`` value.
``REQUIRED_PACKAGES: tuple[str, ...]``
    Import names every worker must have (checked by the preflight).
``add_arguments(parser: argparse.ArgumentParser) -> None``
    Its own command-line options (the runner owns the common ones).
``make_config(args: argparse.Namespace, profile: dict, data_dir: Path, device: str) -> Config``
    A frozen, JSON-serialisable config (``dataclasses.asdict`` works on it); ``profile``
    is this benchmark's section of the chosen profile; ``device`` is ``cpu`` or ``cuda``.
``generate(data_dir: Path, profile: dict) -> None``
    Write this benchmark's synthetic data under the dataset root in the real on-disk
    layout, with a fixed seed (used by the embedded default; a no-op when present).
``run(client: distributed.Client, config, timer: PhaseTimer) -> dict``
    Run it on the cluster behind ``client``, timing named phases with ``timer`` and
    returning the metrics. Plain function: a notebook calls it the same way.

Optional, read through the functions below (each has a default):

``HEADLINE_METRICS: tuple[str, ...]``
    The metrics the terminal summary shows (default: the first four numeric ones).
``DATA: Data``
    Its folder under the dataset root, what it expects there (the runner names it when
    ``--data-dir`` does not exist, before any cluster starts) and its files in words; what the
    data Job fetches is its folder's ``dataset.json`` (below).
``REPORT: Report``
    How the report shows its runs: units, key metrics, figures (default: its phases and
    its first scalar metrics).
``preflight(client, workers: list[str], facts: dict, device: str) -> dict[str, list[str]]``
    A check of its own on each worker once the common preflight passed (``device``
    resolved): ``{worker address: [problem]}``; it may add its findings to ``facts[address]``
    (the record's hardware).
``BENCH: str``
    Its bench package (``bench.images``): the suite's figures for it (see :mod:`bench.registry`).
``config.workers: tuple[str, ...]`` (a field of the config dataclass, default ``()``)
    When a remote cluster has more workers than a run wants (``--workers 1,2`` on 8), the
    runner fills it with ``dataclasses.replace`` and ``run`` must keep its tasks on those
    addresses (``client.submit/map(..., workers=list(config.workers))``; for collections,
    ``dask.annotate(workers=..., allow_other_workers=False)``). A config without the field
    can only run where the cluster size equals the worker count (local sweeps restart the
    cluster, so that is always so there).

Nothing heavy at module level: ``python -m workloads.run --help`` imports every module
to show its options, and ``--benchmark images`` must not pay for xgboost.

Beside its module, the folder holds what the deployed stack needs of it, read as files (the
Pulumi program and ``scripts/lock_worker_env.py`` import no benchmark module: they would pay
for torch and xgboost, and the program imports only standard-library modules of
``workloads``, tests/test_import_graph.py):

``dataset.json``
    What the data Job fetches for it and the ``datasetLayout`` keys it adds
    (:mod:`workloads.runs.datasets` reads it).
``worker.in``
    The packages its Dask workers import, a pip requirements fragment with the marks of
    ``components/dask/environment/worker.in`` (the lock script gathers it).

This module is standard library only, so the program may import it to find those files.
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

BENCHMARKS: dict[str, str] = {
    "images": "workloads.images.benchmark",
    "taxi": "workloads.taxi.benchmark",
}

Hook = Callable[[Any, list, dict, str], dict]


@dataclass(frozen=True)
class Source:
    """One file of a benchmark's dataset, for people (the data Job fetches what ``dataset.json`` declares)."""

    name: str  # prepare's --only name
    destination: str  # under the dataset root; ``{month}`` for one file per month
    what: str


@dataclass(frozen=True)
class Data:
    """A benchmark's part of the dataset root."""

    directory: str  # its folder under the root (``dogs``)
    layout: str  # what it expects there, in words a person can check
    sources: tuple[Source, ...] = ()


@dataclass(frozen=True)
class Quality:
    """The report's per-run quality panel: one metric, how to read it. A run that did not
    measure it (``None``) shows n/a with the benchmark's reason, ``<metric>_note``."""

    metric: str
    label: str  # the axis: ``Top-1 accuracy (%)``
    title: str
    caption: str
    scale: float = 1.0  # 100: a share drawn in %
    unit: str = ""  # written after each value (`` %``)
    higher_is_better: bool = True


@dataclass(frozen=True)
class Report:
    """What the report shows of a benchmark's runs beyond what every run has (phases,
    utilization): its title, its throughput metrics with their units (higher is better; the
    comparison's measures), the metrics the runs table shows, the throughput drawn against
    the worker count, its quality panel, and the run's variant (a dataframe backend, say:
    where it is recorded, and the order the figures show variants in)."""

    title: str
    throughput: Mapping[str, str] = field(default_factory=dict)
    key_metrics: tuple[str, ...] = ()
    scaling: str | None = None  # a throughput metric: one figure against the worker count
    scaling_caption: str = ""  # what every such figure shows; the report adds the marks it draws only sometimes
    phases_caption: str = "Each bar is one configuration (mean of its succeeded runs), split into its phases."
    quality: Quality | None = None
    variant: tuple[str, ...] = ()  # dotted paths into the record, the first one set wins
    variant_order: tuple[str, ...] = ()


def folder(name: str) -> Path:
    """The folder of benchmark ``name``'s module, found without importing the module or its
    package (``importlib.util.find_spec`` of the package runs only its parents' ``__init__``)."""
    package = BENCHMARKS[name].rpartition(".")[0]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"benchmark {name!r}: its package {package} is not found")
    return Path(next(iter(spec.submodule_search_locations)))


def declared_files(file_name: str) -> dict[str, Path]:
    """``{benchmark: its folder's file_name}`` for each registered benchmark that has one,
    in registry order: how the deployed side gathers the benchmarks' declarations."""
    paths = {name: folder(name) / file_name for name in BENCHMARKS}
    return {name: path for name, path in paths.items() if path.is_file()}


def load(name: str) -> ModuleType:
    """Import the module of benchmark ``name``."""
    try:
        module_name = BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None
    return importlib.import_module(module_name)


def report(name: str) -> Report:
    """How the report shows benchmark ``name``: its ``REPORT``, or the default for one that
    declares none, is no longer registered, or does not import here."""
    try:
        declared = getattr(load(name), "REPORT", None)
    except (ValueError, ImportError):
        declared = None
    return declared if isinstance(declared, Report) else Report(title=name)


def data(module: ModuleType) -> Data | None:
    """The module's ``DATA``, if it declares one."""
    declared = getattr(module, "DATA", None)
    return declared if isinstance(declared, Data) else None


def layout(module: ModuleType) -> str:
    """What the module's benchmark expects under the dataset root."""
    declared = data(module)
    return declared.layout if declared else "its dataset"


def preflight_hooks(modules: Iterable[ModuleType]) -> list[Hook]:
    """The ``preflight`` checks of ``modules``, each once."""
    hooks = [getattr(m, "preflight", None) for m in dict.fromkeys(modules)]
    return [hook for hook in hooks if callable(hook)]
