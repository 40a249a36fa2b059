"""The registry of benchmarks the runner knows, and the protocol each one follows.

A benchmark is a module (imported lazily, so ``--help`` and the other benchmark never pay
for torch or xgboost) that provides:

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

Optional, read with ``getattr`` by the runner:

``HEADLINE_METRICS: tuple[str, ...]``
    The metrics the terminal summary shows (default: the first four numeric ones).
``DATA_LAYOUT: str``
    What this benchmark expects under the dataset root (``dogs/Images/...``): the runner
    names it when ``--data-dir`` does not exist, before any cluster starts.
``config.workers: tuple[str, ...]`` (a field of the config dataclass, default ``()``)
    When a remote cluster has more workers than a run wants (``--workers 1,2`` on 8), the
    runner fills it with ``dataclasses.replace`` and ``run`` must keep its tasks on those
    addresses (``client.submit/map(..., workers=list(config.workers))``; for collections,
    ``dask.annotate(workers=..., allow_other_workers=False)``). A config without the field
    can only run where the cluster size equals the worker count (local sweeps restart the
    cluster, so that is always so there).

Nothing heavy at module level: ``python -m workloads.run --help`` imports every module
to show its options, and ``--benchmark images`` must not pay for xgboost.
"""
from __future__ import annotations

import importlib
from types import ModuleType

BENCHMARKS: dict[str, str] = {
    "images": "workloads.images.benchmark",
    "taxi": "workloads.taxi.benchmark",
}


def load(name: str) -> ModuleType:
    """Import the module of benchmark ``name``."""
    try:
        module_name = BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None
    return importlib.import_module(module_name)
