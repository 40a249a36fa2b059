"""Figures 4-6: the taxi benchmark against plain single-process tools on the same files.

Each repetition runs the real ``workloads.taxi.benchmark.run`` on a local cluster made by
``workloads.local`` (its ``load`` + ``cleanse`` phases give the rows/s of figure 4, its
``train`` phase the time of figure 5), then, in this process with the cluster idle and
the same total threads:

* ``pyarrow.csv.read_csv`` of every file (pyarrow's CPU pool set to that many threads);
* ``xgboost.QuantileDMatrix`` + ``xgboost.train`` on as many cleaned rows as the
  benchmark trained on, drawn from the same cleaned data, with the benchmark's own
  parameters and ``nthread`` = the workers' threads together.

Figure 6 takes, on every worker, the peak resident memory during ``load`` + ``cleanse``
above what the worker held when ``load`` began (freed memory is handed back to the
system first and the kernel's peak counter reset, ``/proc/self/clear_refs``), summed
over the workers, against the in-memory size of the cleaned frame (pandas
``memory_usage(deep=True)``, index included).
"""
from __future__ import annotations

import logging
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from bench.figures import Figure, Measurement
from bench.load import LoadMonitor
from workloads.results import PhaseTimer

logger = logging.getLogger(__name__)

NAMES = ("taxi_load_vs_pyarrow", "taxi_train_dask_vs_single", "taxi_peak_memory_vs_frame")


@dataclass
class HookTimer(PhaseTimer):
    """A PhaseTimer that calls ``before[name]()`` / ``after[name]()`` around a phase, outside its time."""

    before: dict[str, Callable[[], None]] = field(default_factory=dict)
    after: dict[str, Callable[[], None]] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if name in self.before:
            self.before[name]()
        with super().phase(name):
            yield
        if name in self.after:
            self.after[name]()


def measure(ctx, wanted: list[str], make: Callable[[str], Figure]) -> dict[str, Figure]:
    import pyarrow as pa
    from distributed import Client

    from workloads import local
    from workloads.synth import taxi as synth
    from workloads.taxi import benchmark, settings

    cfg = ctx.profile["taxi"]
    paths = synth.generate(ctx.data_dir, **cfg["generate"])
    plan = local.plan(ctx.profile.get("workers"), "cpu")
    threads = plan.n_workers * plan.threads_per_worker
    config = settings.make_config(None, {"block_mib": cfg["block_mib"], "dataframe": "pandas",
                                         "xgboost": {"num_boost_round": cfg["num_boost_round"]}},
                                  ctx.data_dir, "cpu")
    figures = {name: make(name) for name in wanted}
    topology = f"{plan.n_workers} worker(s) x {plan.threads_per_worker} thread(s), {plan.allocator}"
    ctx.echo(f"taxi: local cluster {topology}; {len(paths)} files, {sum(p.stat().st_size for p in paths) >> 20} MiB")
    clean = cleaned_frame(paths, config)  # the single-process reference data (untimed)
    sides: dict[str, list[float]] = {k: [] for k in ("load", "read", "train", "single", "peak")}
    details: dict[str, Any] = {}
    with ExitStack() as stack:
        cluster = stack.enter_context(local.start(plan, dashboard_address=":0"))
        client = stack.enter_context(Client(cluster))
        client.wait_for_workers(plan.n_workers)
        memory: dict[str, dict[str, int]] = {}
        timer_hooks = {"before": {"load": lambda: memory.update(start=client.run(_reset_peak))},
                       "after": {"cleanse": lambda: memory.update(peak=client.run(_peak))}}

        def dask_run() -> dict[str, Any]:
            timer = HookTimer(**timer_hooks)
            metrics = benchmark.run(client, config, timer)
            metrics["_phases"] = dict(timer.phases)
            return metrics

        first = dask_run()  # warm-up, discarded; gives the number of rows it trains on
        details.update(rows_raw=first["rows_raw"], rows_clean=first["rows_clean"], rows_train=first["rows_train"])
        train_rows = clean.sample(n=min(first["rows_train"], len(clean)), random_state=0)

        def side_dask() -> None:
            metrics = dask_run()
            phases = metrics["_phases"]
            sides["load"].append(metrics["rows_raw"] / (phases["load"] + phases["cleanse"]))
            sides["train"].append(phases["train"])
            sides["peak"].append(sum(memory["peak"][w] - memory["start"][w] for w in memory["peak"]))
            details["peak_rss_bytes"] = memory["peak"]
            details["rss_at_load_bytes"] = memory["start"]
            details["rmse"] = metrics["rmse"]

        def side_read() -> None:
            sides["read"].append(read_csv_rate(paths, threads))

        def side_single() -> None:
            sides["single"].append(train_single(train_rows, config, threads))

        runs = [side_dask]
        if NAMES[0] in wanted:
            runs.append(side_read)
        if NAMES[1] in wanted:
            runs.append(side_single)
        monitor = LoadMonitor()
        for repetition in range(ctx.repeats):
            for run in (runs if repetition % 2 == 0 else runs[::-1]):
                with monitor.watch():
                    run()
            ctx.echo(f"taxi: repetition {repetition + 1}/{ctx.repeats}: load+cleanse {sides['load'][-1]:,.0f} rows/s"
                     + (f", read_csv {sides['read'][-1]:,.0f} rows/s" if sides["read"] else "")
                     + f", dask train {sides['train'][-1]:.2f} s"
                     + (f", single train {sides['single'][-1]:.2f} s" if sides["single"] else "")
                     + f", peak +{sides['peak'][-1] / 2**20:.0f} MiB")
    frame_bytes = int(clean.memory_usage(deep=True).sum())
    notes = {"cluster": topology, "threads": threads, "files": [p.name for p in paths],
             "block_mib": config.block_mib, "pyarrow_memory_pool": pa.default_memory_pool().backend_name,
             "machine_load": monitor.summary(), **details}
    if details["rows_clean"] != len(clean):
        notes["rows_clean_single_process"] = len(clean)
    if NAMES[0] in figures:
        fig = figures[NAMES[0]]
        fig.numerator = Measurement("benchmark_load_cleanse_rows_per_second", "rows/s", sides["load"],
                                    {"how": "rows_raw / (load + cleanse phases): read, type, cleanse, features, persist"})
        fig.denominator = Measurement("pyarrow_read_csv_rows_per_second", "rows/s", sides["read"],
                                      {"how": f"pyarrow.csv.read_csv per file, {threads} threads, types inferred"})
        fig.notes = notes
    if NAMES[1] in figures:
        fig = figures[NAMES[1]]
        fig.numerator = Measurement("xgboost_dask_train_seconds", "s", sides["train"],
                                    {"how": "train phase: DaskQuantileDMatrix + xgboost.dask.train"})
        fig.denominator = Measurement("xgboost_single_train_seconds", "s", sides["single"], {
            "how": f"QuantileDMatrix + xgboost.train in one process, nthread={threads}, same params and rounds"})
        fig.notes = {**notes, "num_boost_round": config.xgboost.num_boost_round,
                     "max_depth": config.xgboost.max_depth}
    if NAMES[2] in figures:
        fig = figures[NAMES[2]]
        fig.numerator = Measurement("peak_worker_memory_bytes", "bytes", sides["peak"], {
            "how": "sum over workers of (peak RSS during load+cleanse - RSS when load began)"})
        fig.denominator = Measurement("cleaned_frame_bytes", "bytes", [frame_bytes] * len(sides["peak"]),
                                      {"how": "memory_usage(deep=True) of the cleaned frame, index included"})
        fig.notes = notes
    return figures


def cleaned_frame(paths, config) -> Any:
    """The benchmark's cleaned, model-ready rows, made in this process with its own reader,
    rules and features (one chunk per file)."""
    import pandas as pd

    from workloads.taxi import features, io, rules

    selected = rules.select(config.rules)
    parts = []
    for plan in io.plan(config.data_dir, config.files, 1 << 40):
        for chunk in plan.chunks:
            frame = io.read_chunk(chunk).table.to_pandas()
            kept = frame[rules.label(frame, selected) == rules.KEPT]
            parts.append(features.make(kept, config.target))
    return pd.concat(parts)


def read_csv_rate(paths, threads: int) -> float:
    """Rows/s of ``pyarrow.csv.read_csv`` over ``paths`` with ``threads`` CPU threads."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    pa.set_cpu_count(threads)
    rows, started = 0, time.perf_counter()
    for path in paths:
        rows += pacsv.read_csv(path, read_options=pacsv.ReadOptions(use_threads=True)).num_rows
    return rows / (time.perf_counter() - started)


def train_single(frame, config, threads: int) -> float:
    """Seconds of QuantileDMatrix + xgboost.train on ``frame`` in this process."""
    import xgboost

    from workloads.taxi import benchmark, features

    params = benchmark._booster_params(config, threads)
    started = time.perf_counter()
    matrix = xgboost.QuantileDMatrix(frame[list(features.FEATURES)], frame[config.target], nthread=threads)
    xgboost.train(params, matrix, num_boost_round=config.xgboost.num_boost_round)
    return time.perf_counter() - started


def _status(field_name: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def _reset_peak() -> int:
    """On a worker: hand freed memory back (Python, pyarrow's pool, tcmalloc or glibc),
    reset the kernel's peak-RSS counter, and return the RSS now."""
    import ctypes
    import gc

    import pyarrow as pa

    gc.collect()
    pa.default_memory_pool().release_unused()
    process = ctypes.CDLL(None)
    release = getattr(process, "MallocExtension_ReleaseFreeMemory", None)  # tcmalloc, when preloaded
    if release is not None:
        release()
    else:
        process.malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    return _status("VmRSS")


def _peak() -> int:
    """On a worker: peak RSS since the last reset."""
    return _status("VmHWM")
