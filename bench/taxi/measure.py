"""The taxi figures: the taxi benchmark against the best plain tools on the same files.

Each repetition runs the real ``workloads.taxi.benchmark.run`` on a local cluster made by
``workloads.cluster.local`` (its ``load`` + ``cleanse`` phases give the rows/s, its ``train``
phase the training time), and, with the cluster idle and the same total threads:

* ``pyarrow.csv.read_csv`` of every file with the reader's own ``include_columns``,
  ``column_types``, null handling and invalid-row handler (pyarrow's CPU pool set to the
  workers' threads together);
* single-process ``xgboost.QuantileDMatrix`` + ``xgboost.train`` in a helper process with
  the workers' environment (allocator, malloc and thread variables) on exactly the rows
  the Dask side's XGBoost ranks trained on (its placed partitions, gathered once in the
  warm-up run, rank after rank) with the benchmark's own parameters and ``nthread`` = the
  workers' threads together;
* for the scale figure, ``load`` + ``cleanse`` alone (``benchmark.load_and_cleanse``) on
  the quick profile's files and on the default profile's, same settings.

The load figure also records what bounds it, from the same repetitions
(:func:`load_limits`): its ceiling (the load and cleanse tasks' functions in plain
processes, nothing scheduled) and Dask's fixed cost of the same graph (the same load and
cleanse on files of the same layout with a few percent of the rows), with the latency of a
one-task round trip on the cluster.

The memory figure takes, on every worker, the peak resident memory from the start of
``load`` to the end of ``evaluate`` above what the worker held when ``load`` began
(freed memory handed back to the system first, the kernel's peak counter reset through
``/proc/self/clear_refs``), summed over the workers, against the in-memory size of the
cleaned frame (pandas ``memory_usage(deep=True)``, index included).

Every side runs once before the repetitions (discarded). Each records what it used
(columns and types, rows and their digest, parameters, process facts) in
``notes["sides"]``.
"""
from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import helper, pairs
from bench.figures import Figure, Measurement
from workloads.runs.results import PhaseTimer

logger = logging.getLogger(__name__)

NAMES = ("taxi_load_vs_pyarrow", "taxi_train_dask_vs_single", "taxi_peak_memory_vs_frame",
         "taxi_scale_default_vs_quick")
CEILING_HOW = ("the load and cleanse tasks' functions in one plain one-thread process per worker thread, all at"
               " once, each on every n-th chunk, the workers' environment, nothing scheduled; / the baseline's"
               " rows/s in the same repetition: the figure with no scheduling cost")
FIXED_COST_HOW = ("rows / (rows / the ceiling's rows/s + Dask's fixed cost) / the baseline's rows/s; the fixed cost:"
                  " the seconds of the same load + cleanse on files of the same names and chunk count with a few"
                  " percent of the rows, less those rows at the ceiling's rate")
SCALE_SIZES = ("default", "quick")  # the scale figure: numerator, denominator
PHASES = ("load", "cleanse", "split", "train", "infer", "evaluate")


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


def make_config(ctx, data_dir: Path) -> Any:
    from workloads.taxi import settings

    cfg = ctx.profile["taxi"]
    return settings.make_config(None, {"block_mib": cfg["block_mib"], "dataframe": "pandas",
                                       "xgboost": {"num_boost_round": cfg["num_boost_round"],
                                                   "ranks": cfg.get("xgboost_ranks", "per-worker")}},
                                data_dir, "cpu")


def measure(ctx, wanted: list[str], make: Callable[[str], Figure]) -> dict[str, Figure]:
    from workloads.cluster import local
    from workloads.cluster.session import ClusterSession
    from workloads.taxi import synthetic as synth

    paths = synth.generate(ctx.data_dir, **ctx.profile["taxi"]["generate"])
    plan = local.plan(ctx.profile.get("workers"), "cpu")
    threads = plan.n_workers * plan.threads_per_worker
    config = make_config(ctx, ctx.data_dir)
    figures = {name: make(name) for name in wanted}
    topology = f"{plan.n_workers} worker(s) x {plan.threads_per_worker} thread(s), {plan.allocator}"
    ctx.echo(f"taxi: local cluster {topology}; {len(paths)} files, {sum(p.stat().st_size for p in paths) >> 20} MiB")
    frame_bytes = int(cleaned_frame(config).memory_usage(deep=True).sum())  # untimed, in this process
    facts: dict[str, Any] = {}
    with ExitStack() as stack:
        client = stack.enter_context(ClusterSession.start_local(plan)).client
        facts["dask"] = {"workers": pairs.worker_facts(client), "reader_columns": reader_columns(client, config)}
        sides: dict[str, pairs.Side] = {}
        dask = DaskSide(client, config, facts["dask"])
        if set(wanted) & set(NAMES[:3]):
            sides["dask"] = dask.run  # its first run (the warm-up) also gathers the training rows
        if NAMES[0] in wanted:
            sides["read"] = read_side(paths, threads, facts)
            chunks = planned_chunks(config)
            sides["ceiling"] = ceiling_side(stack, config, chunks, threads, facts)
            sides["floor"] = floor_side(ctx, client, config, chunks, paths[0], facts)
        if NAMES[1] in wanted:
            sides["single"] = single_side(stack, dask, config, threads, facts)
        if NAMES[3] in wanted:
            sides.update(scale_sides(ctx, client, facts))
        samples, load = pairs.interleave(sides, ctx.repeats, ctx.echo, "taxi", "(rows/s | s | bytes)")
    notes = {"cluster": topology, "threads": threads, "files": [p.name for p in paths],
             "block_mib": config.block_mib, "machine_load": load}
    fill(figures, samples, facts, notes, frame_bytes, dask.rows, threads)
    return figures


class DaskSide:
    """The real benchmark, run once per call of its first side; the other sides (train
    time, peak memory) read that run's figures, so one run serves all three."""

    def __init__(self, client, config, facts: dict[str, Any]):
        self.client, self.config, self.facts = client, config, facts
        self.memory: dict[str, dict[str, int]] = {}
        self.training: Any = None  # the rows the ranks trained on (pandas), from the warm-up
        self.rows: dict[str, Any] = {}

    def run(self) -> dict[str, float]:
        """One run: {"dask": load + cleanse rows/s, "dask_train": train seconds,
        "dask_peak": peak bytes}."""
        from workloads.taxi import benchmark

        keep_training = self.training is None
        after = {phase: self._peak_after(phase) for phase in PHASES}  # where the peak rose (diagnosis)
        after["evaluate"] = lambda: self.memory.update(peak=self.client.run(peak_rss),
                                                       peak_after_evaluate=self.client.run(peak_rss))
        timer = HookTimer(before={"load": lambda: self.memory.update(start=self.client.run(reset_peak))},
                          after=after)
        metrics = benchmark.run(self.client, self.config, timer,
                                on_training_data=self._keep if keep_training else None)
        phases = timer.phases
        peak = sum(self.memory["peak"][w] - self.memory["start"][w] for w in self.memory["peak"])
        self.rows.update(rows_raw=metrics["rows_raw"], rows_clean=metrics["rows_clean"],
                         rows_train=metrics["rows_train"])
        self.facts.update(rmse=metrics["rmse"], chunks=metrics["chunks"], xgboost_nthread=metrics["xgboost_nthread"],
                          xgboost_ranks=metrics["xgboost_ranks"], xgboost_rank_nthread=metrics["xgboost_rank_nthread"],
                          peak_rss_bytes=self.memory["peak"], rss_at_load_bytes=self.memory["start"],
                          peak_rss_after_phase_bytes={phase: self.memory[f"peak_after_{phase}"] for phase in PHASES},
                          phases={k: round(v, 3) for k, v in phases.items()})
        if self.rows["rows_train"] != self.facts["training_rows"]:
            raise RuntimeError(f"the Dask side trained on {self.rows['rows_train']} rows in this run, on"
                               f" {self.facts['training_rows']} in the warm-up: the split is not deterministic")
        return {"dask": metrics["rows_raw"] / (phases["load"] + phases["cleanse"]), "dask_train": phases["train"],
                "dask_peak": peak}

    def _peak_after(self, phase: str) -> Callable[[], None]:
        return lambda: self.memory.update({f"peak_after_{phase}": self.client.run(peak_rss)})

    def _keep(self, placed) -> None:
        """Gather the placed training columns, rank after rank (the warm-up run only: its
        memory peak is discarded)."""
        import pandas as pd

        parts = self.client.gather(placed.parts)
        self.training = pd.concat(parts, ignore_index=True)
        self.facts["training_rows"] = len(self.training)
        self.facts["training_rows_digest"] = sum(self.client.gather(
            [self.client.submit(row_digest, part, pure=False) for part in placed.parts])) % 2**64
        self.facts["training_columns"] = list(placed.columns)


def row_digest(frame) -> int:
    """An order-independent digest of a frame's rows (sum of pandas' row hashes, mod 2**64)."""
    import pandas as pd

    return int(pd.util.hash_pandas_object(frame, index=False).sum()) % 2**64


def reader_options():
    """The taxi reader's CSV conversion options (``workloads.taxi.io.convert_options``: the
    columns it keeps, their parse types, its null handling and flag spellings); a baseline
    given these does the reader's parsing."""
    from workloads.taxi import io

    return io.convert_options()


def read_csv(paths, threads: int) -> dict[str, Any]:
    """``pyarrow.csv.read_csv`` of ``paths`` with ``threads`` CPU threads and the reader's
    options: rows/s, rows, and the columns and types it produced."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    pa.set_cpu_count(threads)
    rows, schema = 0, pa.schema([])
    wrong: list[int] = []

    def count_and_skip(row: Any) -> str:  # as the reader does
        wrong.append(1)
        return "skip"

    parse = pacsv.ParseOptions(invalid_row_handler=count_and_skip)
    started = time.perf_counter()
    for path in paths:
        table = pacsv.read_csv(path, read_options=pacsv.ReadOptions(use_threads=True), parse_options=parse,
                               convert_options=reader_options())
        rows, schema = rows + table.num_rows, table.schema
    seconds = time.perf_counter() - started
    return {"rate": rows / seconds, "rows": rows, "wrong_field_count": len(wrong), "threads": pa.cpu_count(),
            "memory_pool": pa.default_memory_pool().backend_name,
            "columns": {field.name: str(field.type) for field in schema}}


def read_side(paths, threads: int, facts: dict[str, Any]) -> pairs.Side:
    def run() -> float:
        result = read_csv(paths, threads)
        facts["read"] = {k: v for k, v in result.items() if k != "rate"}
        return result["rate"]
    return run


def planned_chunks(config) -> list:
    """The benchmark's chunks of its files, as its planner cuts them."""
    from workloads.taxi import io

    return [chunk for plan in io.plan(str(config.data_dir), config.files, config.block_bytes) for chunk in plan.chunks]


def ceiling_side(stack: ExitStack, config, chunks: list, threads: int, facts: dict[str, Any]) -> pairs.Side:
    """The load figure's ceiling without Dask: the load and cleanse tasks' own functions
    (``benchmark.read_partition``, ``benchmark.cleanse_partition``) chunk after chunk in ``threads``
    plain one-thread processes started at once with the workers' environment, each on every
    ``threads``-th of the benchmark's chunks: the rows/s of that work on these cores with
    nothing scheduled, from the first start to the last finish."""
    from workloads.cluster import local
    from workloads.taxi import rules

    environ = local.plan(1, "cpu", threads_per_worker=1).environ
    processes = [stack.enter_context(closing(helper.Helper(f"load-ceiling-{i}", environ))) for i in range(threads)]
    facts["ceiling"] = {"processes": helper.call_all(processes, _process_facts), "chunks": len(chunks),
                        "rules": [rule.name for rule in rules.select(config.rules)]}

    def run() -> float:
        for i, one in enumerate(processes):
            one.send(load_cleanse_chunks, chunks=chunks[i::threads], rule_settings=config.rules, target=config.target)
        results = [one.receive() for one in processes]
        return sum(r["rows"] for r in results) / helper.span(results)
    return run


FLOOR_BLOCK_MIB = 1


def floor_side(ctx, client, config, chunks: list, first_file: Path, facts: dict[str, Any]) -> pairs.Side:
    """Dask's fixed cost of the load figure's graph: the same ``load`` + ``cleanse`` on files
    of the same names, each cut into as many chunks as the figure's first file is
    (``FLOOR_BLOCK_MIB`` blocks), with a few percent of the rows; its rows/s (the seconds
    are rows / rate)."""
    import dataclasses

    from workloads.taxi import synthetic as synth

    spec = ctx.profile["taxi"]["generate"]
    size = first_file.stat().st_size
    per_file = sum(chunk.path == str(first_file) for chunk in chunks)
    rows = max(100, int(spec["rows_per_file"] * (per_file - 0.5) * (FLOOR_BLOCK_MIB << 20) / size))
    data_dir = ctx.data_dir / "floor"
    synth.generate(data_dir, **{**spec, "rows_per_file": rows})
    small = dataclasses.replace(config, data_dir=str(data_dir), block_mib=FLOOR_BLOCK_MIB)
    run_small = load_cleanse_side(client, small, facts, "floor")

    def run() -> float | dict[str, float]:
        rate = run_small()
        facts["floor"]["no_op_round_trip_s"] = no_op_round_trips(client)  # after the timed run
        return rate
    return run


def no_op_round_trips(client, count: int = 5) -> list[float]:
    """Seconds of ``count`` one-task round trips (submit a task that does nothing, wait for
    its result): the least any phase that waits on its tasks costs on this cluster."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        client.submit(_nothing, pure=False).result()
        times.append(round(time.perf_counter() - started, 4))
    return times


def _nothing() -> None:
    return None


def _process_facts(state: dict[str, Any]) -> dict[str, Any]:
    return pairs.process_facts()


def load_cleanse_chunks(state: dict[str, Any], chunks: list, rule_settings: Any, target: str) -> dict[str, Any]:
    """In a helper: the load and cleanse tasks' functions on ``chunks`` in turn (the typed
    pandas partition, then the kept rows' features and the rows per rule)."""
    from workloads.taxi import benchmark, rules

    selected = rules.select(rule_settings)
    started = time.perf_counter()
    rows = 0
    for chunk in chunks:
        result = benchmark.read_partition(chunk, "pandas")
        rows += len(result[0])
        benchmark.cleanse_partition(result, selected, target)
        del result
    return {"started": started, "finished": time.perf_counter(), "rows": rows}


def reader_columns(client, config) -> dict[str, str]:
    """The columns and types of the Dask side's typed frame, read by the workload's own
    reader on a worker (first chunk of the first file)."""
    from workloads.taxi import io

    def first_chunk_schema(data_dir: str, files: str, block: int) -> dict[str, str]:
        chunk = next(c for plan in io.plan(data_dir, files, block) for c in plan.chunks)
        return {field.name: str(field.type) for field in io.read_chunk(chunk).table.schema}
    return client.submit(first_chunk_schema, config.data_dir, config.files, config.block_bytes, pure=False).result()


def single_load(state: dict[str, Any], frame, target: str) -> dict[str, Any]:
    """In the helper: keep the training rows; report them and this process's facts."""
    state["frame"], state["target"] = frame, target
    return {"rows": len(frame), "rows_digest": row_digest(frame), "columns": list(frame.columns),
            **pairs.process_facts()}


def single_train(state: dict[str, Any], params: dict[str, Any], num_boost_round: int) -> float:
    """In the helper: seconds of ``QuantileDMatrix`` + ``xgboost.train`` on the kept rows."""
    return sum(single_steps(state, params, num_boost_round).values())


def single_steps(state: dict[str, Any], params: dict[str, Any], num_boost_round: int) -> dict[str, float]:
    """In the helper: the seconds of the baseline's two steps on the kept rows,
    ``single_matrix`` (``QuantileDMatrix``) and ``single_train`` (``xgboost.train``)."""
    import xgboost

    frame, target = state["frame"], state["target"]
    started = time.perf_counter()
    matrix = xgboost.QuantileDMatrix(frame.drop(columns=[target]), frame[target], nthread=params["nthread"])
    built = time.perf_counter()
    xgboost.train(params, matrix, num_boost_round=num_boost_round)
    return {"single_matrix": built - started, "single_train": time.perf_counter() - built}


def prepared(profile: str, repeats: int = 1) -> tuple[Any, list[Path], Any]:
    """A profile's context, its taxi files (generated into the cache where the measuring
    command keeps them) and the benchmark's config for them: what ``taxi-limits`` and
    ``train-parts`` measure on."""
    from bench import registry
    from workloads.taxi import synthetic as synth

    profiles = registry.load_profiles()
    data_dir = registry.default_data_dir(profile)
    ctx = registry.Context(profile, profiles[profile], repeats, data_dir, profiles=profiles)
    paths = synth.generate(data_dir, **ctx.profile["taxi"]["generate"])
    return ctx, list(paths), make_config(ctx, data_dir)


def single_side(stack: ExitStack, dask: DaskSide, config, threads: int, facts: dict[str, Any]) -> pairs.Side:
    """Single-process XGBoost in a helper with the workers' environment (all threads), on
    the Dask side's training rows (sent on the first call, after its warm-up gathered them)."""
    from workloads.cluster import local
    from workloads.taxi import benchmark

    environ = local.plan(1, "cpu", threads_per_worker=threads).environ
    one = stack.enter_context(closing(helper.Helper("single-xgboost", environ)))
    params = benchmark.booster_params(config, threads)

    def run() -> float:
        if "single" not in facts:
            facts["single"] = {**one.call(single_load, frame=dask.training, target=config.target),
                               "params": params, "num_boost_round": config.xgboost.num_boost_round,
                               "environ": environ}
        return one.call(single_train, params=params, num_boost_round=config.xgboost.num_boost_round)
    return run


def scale_sides(ctx, client, facts: dict[str, Any]) -> dict[str, pairs.Side]:
    """``load`` + ``cleanse`` rows/s on each size's files, this profile's settings."""
    from workloads.taxi import synthetic as synth

    sides = {}
    for size in SCALE_SIZES:
        data_dir = ctx.data_dir_for(size)
        synth.generate(data_dir, **ctx.profiles[size]["taxi"]["generate"])
        sides[f"scale_{size}"] = load_cleanse_side(client, make_config(ctx, data_dir), facts, f"scale_{size}")
    return sides


def load_cleanse_side(client, config, facts: dict[str, Any], key: str) -> pairs.Side:
    from workloads.taxi import benchmark

    def run() -> float:
        timer = PhaseTimer()
        clean, metrics = benchmark.load_and_cleanse(client, config, timer)
        del clean  # frees the persisted partitions
        facts[key] = {"rows_raw": metrics["rows_raw"], "chunks": metrics["chunks"], "partitions": metrics["partitions"],
                      "block_mib": config.block_mib, "phases": {k: round(v, 3) for k, v in timer.phases.items()}}
        return metrics["rows_raw"] / (timer.phases["load"] + timer.phases["cleanse"])
    return run


@dataclass
class Measured:
    """What the repetitions gathered, for the figures to take their sides from."""

    samples: dict[str, list[float]]
    facts: dict[str, Any]
    notes: dict[str, Any]
    rows: dict[str, Any]
    frame_bytes: int
    threads: int


def fill(figures: dict[str, Figure], samples: dict[str, list[float]], facts: dict[str, Any], notes: dict[str, Any],
         frame_bytes: int, rows: dict[str, Any], threads: int) -> None:
    """Put the sides' samples and reports into the figures."""
    measured = Measured(samples, facts, notes, rows, frame_bytes, threads)
    for name, sides in zip(NAMES, (_load_sides, _train_sides, _memory_sides, _scale_sides), strict=True):
        if name in figures:
            fig = figures[name]
            fig.numerator, fig.denominator, fig.notes = sides(measured)


Sides = tuple[Measurement, Measurement, dict[str, Any]]


def _load_sides(m: Measured) -> Sides:
    facts = m.facts
    notes = {**m.notes, **m.rows, "sides": {"dask": _pick(facts["dask"], "reader_columns", "workers", "chunks"),
                                            "read": facts["read"], "ceiling": facts["ceiling"],
                                            "floor": facts["floor"]},
             **load_limits(m.samples, m.rows["rows_raw"], facts["floor"]["rows_raw"])}
    return (Measurement("benchmark_load_cleanse_rows_per_second", "rows/s", m.samples["dask"],
                        {"how": "rows_raw / (load + cleanse phases): read, type, cleanse, features, persist"}),
            Measurement("pyarrow_read_csv_rows_per_second", "rows/s", m.samples["read"], {
                "how": f"pyarrow.csv.read_csv per file, {m.threads} threads, the reader's include_columns,"
                       " column_types, null handling and invalid-row handler"}), notes)


def _train_sides(m: Measured) -> Sides:
    dask = _pick(m.facts["dask"], "training_rows", "training_rows_digest", "training_columns", "xgboost_ranks",
                 "xgboost_rank_nthread", "workers", "rmse")
    return (Measurement("xgboost_dask_train_seconds", "s", m.samples["dask_train"],
                        {"how": "train phase: DaskQuantileDMatrix + xgboost.dask.train"}),
            Measurement("xgboost_single_train_seconds", "s", m.samples["single"], {
                "how": f"QuantileDMatrix + xgboost.train in a helper process with the workers' environment,"
                       f" nthread={m.threads}, the Dask side's training rows, same params and rounds"}),
            {**m.notes, **m.rows, "sides": {"dask": dask, "single": m.facts["single"]}})


def _memory_sides(m: Measured) -> Sides:
    peaks = m.samples["dask_peak"]
    return (Measurement("peak_worker_memory_bytes", "bytes", peaks, {
                "how": "sum over workers of (peak RSS from the start of load to the end of evaluate - RSS when"
                       " load began)"}),
            Measurement("cleaned_frame_bytes", "bytes", [m.frame_bytes] * len(peaks),
                        {"how": "memory_usage(deep=True) of the cleaned frame, index included"}),
            {**m.notes, **m.rows, "phases_measured": ["load", "cleanse", "split", "train", "infer", "evaluate"],
             "sides": {"dask": _pick(m.facts["dask"], "peak_rss_bytes", "rss_at_load_bytes",
                                     "peak_rss_after_phase_bytes", "phases", "workers")}})


def _scale_sides(m: Measured) -> Sides:
    return (Measurement("default_size_rows_per_second", "rows/s", m.samples["scale_default"],
                        {"how": "rows_raw / (load + cleanse), the default profile's files"}),
            Measurement("quick_size_rows_per_second", "rows/s", m.samples["scale_quick"],
                        {"how": "rows_raw / (load + cleanse), the quick profile's files"}),
            {**m.notes, "sides": {"default": m.facts["scale_default"], "quick": m.facts["scale_quick"]}})


def load_limits(samples: dict[str, list[float]], rows: int, floor_rows: int) -> dict[str, Any]:
    """The load figure's two limits, repetition by repetition: ``ceiling``, the tasks' work
    with nothing scheduled over the baseline; ``with_dask_fixed_cost``, the same work plus
    Dask's fixed cost of the graph (the small run's seconds less its own work at the
    ceiling's rate) over the baseline: what the figure can reach on this machine."""
    ceiling, limit, fixed = [], [], []
    for work_rate, floor_rate, baseline in zip(samples["ceiling"], samples["floor"], samples["read"], strict=True):
        fixed.append(floor_rows / floor_rate - floor_rows / work_rate)
        ceiling.append(round(work_rate / baseline, 3))
        limit.append(round(rows / (rows / work_rate + fixed[-1]) / baseline, 3))
    return {"ceiling": {"how": CEILING_HOW, "ratios": ceiling, "median": statistics.median(ceiling),
                        "rows_per_second": [round(v) for v in samples["ceiling"]]},
            "with_dask_fixed_cost": {"how": FIXED_COST_HOW, "ratios": limit, "median": statistics.median(limit),
                                     "fixed_seconds": [round(v, 3) for v in fixed]}}


def _pick(facts: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: facts.get(key) for key in keys}


def cleaned_frame(config) -> Any:
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


def status_bytes(field_name: str) -> int:
    """A size field of this process's ``/proc/self/status`` (``VmRSS``, ``VmHWM``), in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def reset_peak() -> int:
    """In the process it runs in (a worker, or a one-process reference): hand freed memory
    back (Python, pyarrow's pool, tcmalloc or glibc), reset the kernel's peak-RSS counter,
    and return the RSS now."""
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
    return status_bytes("VmRSS")


def peak_rss() -> int:
    """Peak RSS of the process it runs in since the last :func:`reset_peak`."""
    return status_bytes("VmHWM")
