"""What the suite measures and with what: each figure's definition (:data:`FIGURES`), the
sizes of each profile (``profiles.yaml``) and the context every figure group runs in.

The figure groups (:mod:`bench.images`, :mod:`bench.taxi`) fill the figures these
definitions make; the commands (:mod:`bench.suite`, :mod:`bench.compare`,
:mod:`bench.table`) read the definitions from here, so one place says what a figure's
goal is.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bench.figures import Figure, Goal, Measurement
from bench.results import utc_now

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


# the order is the report's
FIGURES: dict[str, FigureSpec] = {
    "images_pipeline_vs_model": FigureSpec(
        "images", "Images: Dask path end to end vs model-only forward (the limit)", ">= 0.85",
        "dask_path_images_per_second", "model_only_images_per_second", "img/s"),
    "images_dask_vs_plain_loop": FigureSpec(
        "images", "Images: Dask path vs a tuned single-process loop (same decoder, folding, allocator, threads)",
        ">= 1.0", "dask_path_images_per_second", "tuned_loop_images_per_second", "img/s"),
    "images_dask_vs_naive_loop": FigureSpec(
        "images", "Images: Dask path vs the naive loop (PIL, no folding, glibc defaults)", ">= 1.5",
        "dask_path_images_per_second", "naive_loop_images_per_second", "img/s"),
    "images_scaling_2x1_vs_1x1": FigureSpec(
        "images", "Images: 2 workers x 1 thread vs 1 worker x 1 thread", ">= 1.8",
        "two_workers_images_per_second", "one_worker_images_per_second", "img/s"),
    "taxi_load_vs_pyarrow": FigureSpec(
        "taxi", "Taxi: load + cleanse + persist vs pyarrow.csv.read_csv (same columns, types, threads), rows/s",
        ">= 0.7", "benchmark_load_cleanse_rows_per_second", "pyarrow_read_csv_rows_per_second", "rows/s"),
    "taxi_train_dask_vs_single": FigureSpec(
        "taxi", "Taxi: xgboost.dask training time vs single-process xgboost.train (same rows, params, environment)",
        "<= 1.25", "xgboost_dask_train_seconds", "xgboost_single_train_seconds", "s"),
    "taxi_peak_memory_vs_frame": FigureSpec(
        "taxi", "Taxi: peak worker memory over the whole run (load to evaluate) vs the cleaned frame", "<= 3",
        "peak_worker_memory_bytes", "cleaned_frame_bytes", "bytes"),
    "taxi_scale_default_vs_quick": FigureSpec(
        "taxi", "Taxi: load + cleanse rows/s at the default size vs the quick size", ">= 0.9",
        "default_size_rows_per_second", "quick_size_rows_per_second", "rows/s"),
    "images_bf16_vs_fp32": FigureSpec(
        "images", "Images: ResNet-50 bf16 vs fp32 images/s on this CPU (agreement >= 99% on held-out textured"
        " images)", ">= 2.5", "bf16_images_per_second", "fp32_images_per_second", "img/s"),
}


def make_figure(name: str) -> Figure:
    """The unmeasured figure ``name`` (see :meth:`FigureSpec.make`)."""
    return FIGURES[name].make(name)


def load_profiles(path: Path = PROFILES_FILE) -> dict[str, dict[str, Any]]:
    """{profile name: its sizes} from ``profiles.yaml``."""
    from workloads.core.commands import load_yaml

    return load_yaml(path)


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
