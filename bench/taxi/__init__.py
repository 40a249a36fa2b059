"""The taxi benchmark's part of the suite: its figures (what each says, its goal) and its
own subcommands. Light: the measuring code (:mod:`bench.taxi.measure`) is imported only
when a figure is measured."""
from __future__ import annotations

from bench.registry import FigureSpec

# the order is the report's
FIGURES: dict[str, FigureSpec] = {
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
}

VERSIONS = ("xgboost", "pyarrow", "pandas")  # the packages whose versions its figures record

MEASURE = "bench.taxi.measure"  # its measure(ctx, wanted, make): imported only when a figure is measured

# name -> (module with add_arguments(parser) and run(args), one line of help)
COMMANDS = {
    "taxi-limits": ("bench.taxi.limits", "what bounds the taxi figures, in one plain process without Dask"),
    "train-parts": ("bench.taxi.train_parts", "where the taxi train phase's time goes, against its baseline"),
}

