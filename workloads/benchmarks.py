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
