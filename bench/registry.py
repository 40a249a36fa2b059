"""What the suite measures and with what: each figure's definition (:func:`figures`, from
the bench package of each registered benchmark), the sizes of each profile
(``profiles.yaml``) and the context every figure group runs in.

Each benchmark's bench package (``bench/<benchmark>/``, named by its ``BENCH``) defines
its figures and fills them; the commands (:mod:`bench.suite`, :mod:`bench.compare`,
:mod:`bench.table`) read the definitions from here, so one place says what a figure's
goal is and the suite needs no change for a new benchmark.
"""
from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.figures import Figure, Goal, Measurement
from bench.results import utc_now

logger = logging.getLogger(__name__)

PROFILES_FILE = Path(__file__).with_name("profiles.yaml")


@dataclass(frozen=True)
class FigureSpec:
    """One figure: its group (the module that measures it), what it says, its goal
    (``">= 0.85"``), and the names and unit of its two measurements."""

    group: str
    title: str
    goal: str
    numerator: str
    denominator: str
    unit: str

    def make(self, name: str) -> Figure:
        """An unmeasured figure with its goal and its two (empty) sides."""
        return Figure(name, self.title, Goal.parse(self.goal), Measurement(self.numerator, self.unit),
                      Measurement(self.denominator, self.unit))


def groups() -> dict[str, ModuleType]:
    """{benchmark: its bench package} for every registered benchmark that names one (its
    ``BENCH``, :mod:`workloads.runs.benchmarks`), in the registry's order. A package holds
    ``FIGURES`` (name -> :class:`FigureSpec`), ``MEASURE`` (the module whose
    ``measure(ctx, wanted, make)`` fills them, imported by :func:`measure` only when a figure
    is measured), optionally ``VERSIONS`` (the packages its figures record) and ``COMMANDS``
    (its own subcommands, as :data:`bench.cli.COMMANDS`); its sizes are its section of each
    profile (``profiles.yaml``). A benchmark that does not import here has no figures in this run."""
    from workloads.runs import benchmarks

    found = {}
    for name in benchmarks.BENCHMARKS:
        try:
            package = getattr(benchmarks.load(name), "BENCH", None)
            if package:
                found[name] = importlib.import_module(package)
        except ImportError as exc:
            logger.debug("benchmark %s has no figures here: %s", name, exc)
    return found


def measure(package: ModuleType, ctx: Context, wanted: list[str]) -> dict[str, Figure]:
    """The figures ``wanted`` of the group ``package``, measured by its ``MEASURE`` module."""
    return importlib.import_module(package.MEASURE).measure(ctx, wanted, make_figure)


def figures() -> dict[str, FigureSpec]:
    """Every figure of every group, group by group (the order is the report's)."""
    return {name: spec for package in groups().values() for name, spec in package.FIGURES.items()}


def commands() -> dict[str, tuple[str, str]]:
    """The groups' own subcommands: name -> (module, one line of help)."""
    return {name: entry for package in groups().values() for name, entry in getattr(package, "COMMANDS", {}).items()}


def make_figure(name: str) -> Figure:
    """The unmeasured figure ``name`` (see :meth:`FigureSpec.make`)."""
    return figures()[name].make(name)


def load_profiles(path: Path = PROFILES_FILE) -> dict[str, dict[str, Any]]:
    """{profile name: its sizes} from ``profiles.yaml``, each with every benchmark's section
    (its bench package's ``profiles.yaml``) under the benchmark's name."""
    from workloads.core.commands import load_yaml

    profiles = load_yaml(path)
    for name, package in groups().items():
        sizes = Path(str(package.__file__)).with_name("profiles.yaml")
        sections = load_yaml(sizes) if sizes.exists() else {}
        for profile, values in profiles.items():
            if profile in sections:
                values[name] = sections[profile]
    return profiles


def default_data_dir(profile: str) -> Path:
    """Where a profile's generated data is kept unless ``--data-dir`` says otherwise: the
    project's cache (Dask config ``tkg.cache``, environment ``DASK_TKG__CACHE``)."""
    from workloads.core.config import cache_dir

    return cache_dir() / "bench" / profile


def load_average() -> list[float]:
    """The kernel's 1, 5 and 15 minute load averages (how busy the shared machine is)."""
    return [round(v, 2) for v in os.getloadavg()]


@dataclass
class Context:
    """What every figure group gets: the profile's sizes, repetitions, where data lives."""

    profile_name: str
    profile: dict[str, Any]
    repeats: int
    data_dir: Path
    echo: Callable[[str], None] = field(default=print)
    started_at: str = field(default_factory=utc_now)
    load_average: list[float] = field(default_factory=load_average)
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)  # all of them (the scale figure)
    data_root: Path | None = None  # other profiles' data: <data_root>/<profile> (default: beside data_dir)

    def data_dir_for(self, profile: str) -> Path:
        """Where the data of ``profile``'s sizes is kept (the scale figure reads two sizes)."""
        if profile == self.profile_name:
            return self.data_dir
        return (self.data_root or self.data_dir.parent) / profile
