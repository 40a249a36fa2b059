"""What bounds the two taxi figures on this machine, measured in one plain process with
no Dask at all.

* **Load**: the taxi benchmark's ``load`` + ``cleanse`` do, per chunk, the reader's parse
  and typing (``io.read_chunk``: the same bytes, types and options as
  ``pyarrow.csv.read_csv`` in the baseline), the
  typed table's conversion to pandas, the cleansing labels and the features. Each step is
  timed here on one thread over the profile's files, and ``pyarrow.csv.read_csv`` with
  the workers' threads together as the baseline does. The best any distributed reader
  on those threads can reach is ``threads x`` the one-thread rate of all four steps,
  with no scheduling at all; that over the baseline is the figure's ceiling.
* **Memory**: the same steps and the split, then ``xgboost.QuantileDMatrix`` + training
  with the benchmark's parameters, in this one process on the same rows: its peak RSS
  above the start against the cleaned frame is what the data and XGBoost's own buffers
  cost without any Dask: a reference for ``taxi_peak_memory_vs_frame`` (one way to write it,
  not a proven floor).

Prints one report (the committed ones are under ``docs/results/profiles/``).
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEPS = ("read", "to_pandas", "label", "features")  # read: the reader's parse and typing (io.read_chunk)


def best_of(repeats: int, run: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def step_seconds(chunks: list, target: str, repeats: int) -> dict[str, float]:
    """Seconds of each step over every chunk, one thread (best of ``repeats``)."""
    import pyarrow as pa

    from workloads.taxi import features, io, rules

    pa.set_cpu_count(1)
    tables = [io.read_chunk(chunk).table for chunk in chunks]
    frames = [table.to_pandas(use_threads=False, split_blocks=True) for table in tables]  # as from_arrow makes them
    labels = [rules.label(frame, rules.RULES) for frame in frames]
    return {
        "read": best_of(repeats, lambda: [io.read_chunk(chunk) for chunk in chunks]),
        "to_pandas": best_of(repeats, lambda: [t.to_pandas(use_threads=False, split_blocks=True) for t in tables]),
        "label": best_of(repeats, lambda: [rules.label(frame, rules.RULES) for frame in frames]),
        "features": best_of(repeats, lambda: [features.make(f, target, keep=lab == rules.KEPT)
                                              for f, lab in zip(frames, labels, strict=True)]),
    }


def baseline_rate(paths: list[Path], threads: int, repeats: int) -> tuple[float, int]:
    from bench.taxi.measure import read_csv

    read_csv(paths, threads)  # warm
    rates = [read_csv(paths, threads)["rate"] for _ in range(repeats)]
    return max(rates), read_csv(paths, threads)["rows"]


def memory_reference(chunks: list, config: Any) -> dict[str, float]:
    """Peak RSS above the start of one process doing the whole run's work (read, cleanse and
    split chunk by chunk, each half concatenated once, XGBoost trained and predicting), and
    the cleaned frame's size measured as the figure measures it."""
    import pandas as pd
    import xgboost

    from bench.taxi.measure import cleaned_frame, peak_rss, reset_peak
    from workloads.taxi import backends, benchmark, features, io, rules, training

    start = reset_peak()
    halves: dict[bool, list] = {False: [], True: []}  # split chunk by chunk: no whole cleaned frame
    split = training.Split(config.test_fraction, config.split_seed)
    for index, chunk in enumerate(chunks):
        frame = backends.from_arrow(io.read_chunk(chunk).table, "pandas")
        clean = features.make(frame, config.target, keep=rules.label(frame, rules.RULES) == rules.KEPT)
        del frame
        for test in (False, True):
            halves[test].append(split.half(clean, index, test))
        del clean
    train = pd.concat(halves[False], ignore_index=True)
    halves[False].clear()
    test = pd.concat(halves[True], ignore_index=True)
    halves[True].clear()
    x_columns = list(features.FEATURES)
    params = benchmark.booster_params(config, 0)
    matrix = xgboost.QuantileDMatrix(train[x_columns], train[config.target])
    booster = xgboost.train(params, matrix, num_boost_round=config.xgboost.num_boost_round)
    booster.inplace_predict(test[x_columns])
    return {"peak_above_start_bytes": peak_rss() - start,
            "cleaned_frame_bytes": int(cleaned_frame(config).memory_usage(deep=True).sum())}  # as the figure


def report(profile: str, repeats: int) -> str:
    from bench.taxi import FIGURES
    from bench.taxi.measure import prepared
    from workloads.cluster import local
    from workloads.taxi import io

    ctx, paths, config = prepared(profile, repeats)
    plans = io.plan(str(config.data_dir), config.files, config.block_bytes)
    chunks = [chunk for plan in plans for chunk in plan.chunks]
    spec = local.plan(ctx.profile.get("workers"), "cpu")
    threads = spec.n_workers * spec.threads_per_worker  # the workers' threads together, as the baseline
    seconds = step_seconds(chunks, config.target, repeats)
    baseline, rows = baseline_rate(paths, threads, repeats)
    one_thread = rows / sum(seconds.values())
    ceiling = threads * one_thread / baseline
    memory = memory_reference(chunks, config)
    lines = [f"# taxi limits, profile {profile}: {rows:,} rows in {len(chunks)} chunks ({config.block_mib} MiB),"
             f" {threads} threads; best of {repeats}, one plain process (bench/taxi/limits.py)",
             "", "## load + cleanse, one thread (s over all chunks; rows/s)"]
    lines += [f"{step:10s} {seconds[step]:.3f} s  {rows / seconds[step]:>12,.0f} rows/s" for step in STEPS]
    lines += [f"all four   {sum(seconds.values()):.3f} s  {one_thread:>12,.0f} rows/s",
              f"baseline   pyarrow.csv.read_csv, {threads} threads: {baseline:,.0f} rows/s",
              f"ceiling    {threads} x all four / baseline = {ceiling:.3f}"
              f"  (taxi_load_vs_pyarrow with no scheduling cost; goal {FIGURES['taxi_load_vs_pyarrow'].goal})",
              "", "## memory: the whole run in one process, no Dask",
              f"peak above start {memory['peak_above_start_bytes'] / 2**20:.0f} MiB, cleaned frame"
              f" {memory['cleaned_frame_bytes'] / 2**20:.1f} MiB: one process"
              f" {memory['peak_above_start_bytes'] / memory['cleaned_frame_bytes']:.2f}x  (taxi_peak_memory_vs_frame;"
              f" goal {FIGURES['taxi_peak_memory_vs_frame'].goal})"]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bench.registry import load_profiles

    parser.add_argument("--profile", default="quick", choices=sorted(load_profiles()),
                        help="the sizes of this profile's taxi files (default: quick)")
    parser.add_argument("--repeats", type=int, default=5, metavar="N", help="best of N per step (default: 5)")


def run(args: argparse.Namespace) -> int:
    print(report(args.profile, args.repeats))
    return 0
