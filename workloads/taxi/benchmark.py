"""Benchmark 2: NYC-taxi fare regression with XGBoost on Dask (``--benchmark taxi``).

The paper's six steps, each a timed phase, in the order they run (a lazy framework has to
read before it can cleanse, so the record lists ``load`` first):

``load``
    List the files (on a worker: the dataset is on the workers' volume), read every
    chunk into the typed frame (explicit types, datetimes parsed once, float32) and keep
    it in worker memory. File-level problems are counted here, per file and per reason.
``cleanse``
    Label each row with the first rule that drops it, keep the unlabelled rows, derive
    the features and persist that model-ready frame; the labels give each rule's count.
``split``
    75/25 (``test_fraction``), random per row with a seed per partition
    (:class:`.training.Split`); both halves persisted, each cleansed partition freed once
    its halves exist; the training half of partition ``i`` made on the worker of XGBoost
    rank ``i % ranks`` (:mod:`.training`: the model then does not depend on where Dask
    kept the partitions, and placing copies nothing).
``train``
    ``DaskQuantileDMatrix`` + ``xgb.dask.train`` (``tree_method=hist``, ``device`` cpu or
    cuda), the thread count set to the workers' threads. A worker lost mid-training
    retries the whole training on the same placement once the worker is replaced
    (``train_attempts``), giving the model an undisturbed run gives.
``infer``
    ``inplace_predict`` on the test half, persisted.
``evaluate``
    RMSE, MSE, MAE, MAPE (a fraction) and R^2 of the predictions, summed in float64.

Every phase ends with its results in worker memory (waited on), so no phase's time
hides in the next one. The paper's "convert the data format" half of cleansing (types,
datetimes, the Y/N flag) happens while parsing, in ``load``: typing once at parse time
is what spares a second pass; ``cleanse`` is the rules and the features.

Metrics: ``rows_raw`` (typed rows read), ``rows_clean``, ``rows_train``, ``rows_test``,
``dropped_by_rule`` ({rule: rows it removed, in rule order}), ``dropped_by_reason`` and
``problems_by_file`` (file-level problems, units in ``io``), ``unknown_columns``,
``files`` (files that gave rows), ``files_skipped``, ``skipped_input`` (those files with
the reason each gave no rows: :class:`workloads.runs.results.SkippedInput`), ``files_by_format``,
``files_by_schema``, ``chunks``, ``partitions``, ``rmse``, ``mse``, ``mae``, ``mape``,
``r2``, ``load_rows_per_second`` (rows_raw / load), ``train_rows_per_second``
(rows_train / train), ``train_attempts``, ``train_workers_lost``,
``train_attempt_seconds``, ``train_recovery_seconds``, ``backend``, ``xgboost_device``,
``xgboost_nthread``, and
``synthetic`` (noise sd and RMSE floor) when the generator wrote every file read.

A file that gives no rows (cut short, not Parquet, no fare column) is skipped: the run goes
on with the others, says so in one warning naming each file and why, and its status reads
``succeeded, 1 of 3 files skipped``. With ``--require-all-files`` (``require_all_files`` in a
profile) such a run fails in ``load`` instead, naming the same files, before any training.
"""
from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from distributed import Client, wait

from workloads.core.errors import DatasetError
from workloads.observe import progress
from workloads.runs import benchmarks
from workloads.runs.results import PhaseTimer, SkippedInput, hold_input

from . import backends, features, io, rules, training
from . import schema as s
from .settings import Config, add_arguments, load_profile, make_config  # noqa: F401 (protocol)

logger = logging.getLogger(__name__)

NAME = "taxi"
REQUIRED_PACKAGES = ("xgboost", "pyarrow", "pandas")
HEADLINE_METRICS = ("rmse", "rows_clean", "load_rows_per_second", "train_rows_per_second")
BENCH = "bench.taxi"
DATA = benchmarks.Data(
    "taxi", "taxi/ (or taxi-csv/) with the NYC yellow-taxi trip records, yellow_tripdata_*.csv or .parquet",
    (benchmarks.Source("taxi", "taxi/yellow_tripdata_{month}.<csv|parquet>", "one month of yellow-taxi trips"),))
REPORT = benchmarks.Report(
    "NYC taxi fare regression",
    throughput={"load_rows_per_second": "rows/s", "train_rows_per_second": "rows/s"},
    key_metrics=("rmse", "r2", "rows_clean", "load_rows_per_second", "train_rows_per_second"),
    phases_caption="Each bar is one configuration (mean of its succeeded runs), split into the benchmark's phases"
                   " in the order they ran. The paper's figure 12: pandas 85 s load, 13 s split, 35 s train; cuDF"
                   " 19, 9 and 25 s.",
    quality=benchmarks.Quality("rmse", "RMSE (US$)",
                               "NYC taxi fare regression: RMSE of the predictions per run (lower is better)",
                               "Root-mean-square error of the predicted taxi amounts on the held-out 25 %.",
                               higher_is_better=False),
    variant=("metrics.backend", "config.dataframe", "config.benchmark.dataframe"), variant_order=("pandas", "cudf"))


def generate(data_dir: Path, profile: dict[str, Any]) -> None:
    """Write the profile's synthetic taxi files under ``<data_dir>/taxi`` (existing files
    are kept)."""
    from . import synthetic as synth

    spec = profile.get("generate")
    if spec:
        synth.generate(data_dir, **spec)


def run(client: Client, config: Config, timer: PhaseTimer,
        on_training_data: Callable[[training.Placed], None] | None = None) -> dict[str, Any]:
    """Run the six phases on the cluster behind ``client``; return the metrics.
    ``on_training_data`` is called, between ``split`` and ``train`` and outside every
    phase, with the training columns as placed for XGBoost (a benchmark trains a baseline
    on exactly those rows)."""
    import xgboost.dask as dxgb

    place = list(config.workers) or None  # every task and result stays on these workers
    threads = _worker_threads(client, place)
    clean, metrics = load_and_cleanse(client, config, timer)
    metrics.update({"xgboost_device": config.device, "xgboost_nthread": threads or "per worker"})

    with timer.phase("split"):  # each cleansed partition is freed once both its halves exist
        split = training.Split(config.test_fraction, config.split_seed)
        per_host = config.xgboost.ranks == "per-host"
        test_parts = [client.submit(split.half, part, i, test=True, workers=place, pure=False)
                      for i, part in enumerate(clean.parts)]
        placed = training.place_surviving_losses(client, clean.parts, split.train_half, clean.meta, place,
                                                 config.train_attempts, config.recovery_timeout_s, per_host)
        wait(test_parts)
        ranks = placed.workers
    if on_training_data is not None:
        on_training_data(placed)
    metrics["rows_train"], metrics["rows_test"] = (sum(client.gather(client.map(len, parts, workers=place)))
                                                   for parts in (placed.parts, test_parts))
    test = training.Persisted(test_parts, placed.meta).frame()
    del test_parts

    x_columns = list(features.FEATURES)
    rank_threads = training.host_threads(client, ranks, place) if per_host else threads
    metrics["xgboost_ranks"] = len(ranks)
    metrics["xgboost_rank_nthread"] = rank_threads or "per worker"
    params = booster_params(config, rank_threads)
    with timer.phase("train"):
        booster, attempts = training.train(client, placed, params, config.target,
                                           config.xgboost.num_boost_round, place,
                                           config.train_attempts, config.recovery_timeout_s)
    del placed
    metrics.update(attempts)
    metrics["train_rows_per_second"] = _rate(metrics["rows_train"], timer.phases["train"])

    if threads:
        booster.set_param({"nthread": threads})
    with timer.phase("infer"), training.restricted_to(place):  # XGBoost's shape-inference task too
        predictions = client.persist(dxgb.inplace_predict(client, booster, test[x_columns]),
                                     workers=place)
        wait(predictions)

    with timer.phase("evaluate"):
        metrics.update(_errors(client, test[config.target], predictions, place))
    logger.info("taxi: %s rows -> %s clean; RMSE %.4f; phases %s", metrics["rows_raw"],
                metrics["rows_clean"], metrics["rmse"], timer.phases)
    return metrics


def load_and_cleanse(client: Client, config: Config, timer: PhaseTimer) -> tuple[training.Persisted, dict[str, Any]]:
    """The ``load`` and ``cleanse`` phases: the model-ready partitions and their metrics
    (also what a benchmark of reading alone times)."""
    backend = backends.resolve(config.dataframe, config.device, client)
    backends.prepare_client(backend)
    selected = rules.select(config.rules)
    place = list(config.workers) or None
    client.run(_warm_up, workers=place)  # imports on the workers, outside every phase
    meta = features.make(backends.from_arrow(s.empty_raw_table(), backend), config.target)  # a constant
    metrics: dict[str, Any] = {"backend": backend}

    with timer.phase("load"):
        raw, reading = _load(client, config, backend, place)
    metrics.update(reading)
    metrics["load_rows_per_second"] = _rate(metrics["rows_raw"], timer.phases["load"])

    with timer.phase("cleanse"):  # takes the raw partitions over: each is freed once cleansed
        clean, counts = _cleanse(client, raw, selected, config.target, meta, place)
    metrics["rows_clean"] = counts.get(rules.KEPT, 0)
    metrics["dropped_by_rule"] = {r.name: counts.get(i, 0) for i, r in enumerate(selected, 1)}
    if metrics["rows_clean"] == 0:
        raise DatasetError(f"every row was dropped by the cleansing rules: "
                           f"{metrics['dropped_by_rule']}")
    return clean, metrics


def _load(client: Client, config: Config, backend: str,
          place: list[str] | None) -> tuple[list[Any], dict[str, Any]]:
    """Plan on a worker, read every chunk into worker memory; the futures of the
    partitions that have rows (each a ``(frame, report)`` pair) and the reading metrics."""
    with _cancelled_on_failure(client) as submitted:
        planned = client.submit(io.plan, config.data_dir, config.files, config.block_bytes,
                                workers=place, pure=False)
        manifest = client.submit(_manifest, config.data_dir, workers=place, pure=False)
        submitted.extend([planned, manifest])
        plans: list[io.FilePlan] = planned.result()
        chunks = [chunk for plan in plans for chunk in plan.chunks]
        results = client.map(read_partition, chunks, backend=backend, workers=place, pure=False)
        reports = client.map(_dict_of, results, workers=place, pure=False)
        submitted.extend(results + reports)
        progress.wait_for(reports, "reading taxi files")
        reports_done = client.gather(reports)
        raw = [result for result, report in zip(results, reports_done, strict=True) if report["rows"]]
        del results, reports
        reading = _reading_metrics(plans, chunks, reports_done)
        synthetic = manifest.result()
        if synthetic and set(synthetic.get("files", ())) >= {p.name for p in plans if p.chunks}:
            reading["synthetic"] = {k: synthetic[k] for k in ("noise_sd", "rmse_floor", "seed")}
        if not raw:
            raise DatasetError(f"no rows could be read from the {len(plans)} file(s) matching "
                               f"{config.files!r} under {config.data_dir}: "
                               f"{reading['problems_by_file']}")
        hold_input(reading, config.require_all_files, logger, "taxi", "their rows left out of this run")
        reading["partitions"] = len(raw)
        return raw, reading


@contextlib.contextmanager
def _cancelled_on_failure(client: Client) -> Iterator[list[Any]]:
    """A list to put submitted futures in; if the block fails they are cancelled: their
    tasks (a failed load's manifest, its other reads) would otherwise still run after the
    error, held by the traceback's frames."""
    submitted: list[Any] = []
    try:
        yield submitted
    except BaseException:
        client.cancel(submitted)
        raise


def read_partition(chunk: io.Chunk, backend: str) -> tuple[Any, dict[str, Any]]:
    """One chunk of a file as the backend's frame, with what the read found (file, rows,
    problems) for the load phase's counts. Runs on a worker."""
    result = io.read_chunk(chunk)
    report = {"file": Path(chunk.path).name, "rows": result.table.num_rows,
              "problems": result.problems}
    return backends.from_arrow(result.table, backend), report


def _manifest(data_dir: str) -> dict[str, Any] | None:
    """The generator's manifest when the files are synthetic (their RMSE floor)."""
    from . import synthetic as synth

    return synth.read_manifest(io.taxi_directory(data_dir))


def _frame_of(result: tuple[Any, dict[Any, int]]) -> Any:
    """The partition of a ``(frame, small dict)`` task result (read or cleanse)."""
    return result[0]


def _dict_of(result: tuple[Any, dict[Any, Any]]) -> dict[Any, Any]:
    """The small dict of such a result: a read's report, or a cleanse's rows per label;
    fetched alone, so the frame stays on its worker."""
    return result[1]


def _reading_metrics(plans: list[io.FilePlan], chunks: list[io.Chunk],
                     reports: list[dict[str, Any]]) -> dict[str, Any]:
    by_file = {plan.name: dict(plan.problems) for plan in plans}
    rows_by_file = dict.fromkeys(by_file, 0)
    for report in reports:
        rows_by_file[report["file"]] += report["rows"]
        for reason, count in report["problems"].items():
            by_file[report["file"]][reason] = by_file[report["file"]].get(reason, 0) + count
    by_reason = {reason: sum(p.get(reason, 0) for p in by_file.values()) for reason in io.REASONS}
    read = [plan for plan in plans if rows_by_file[plan.name]]
    return {
        "rows_raw": sum(rows_by_file.values()),
        "files": len(read),
        "files_skipped": sorted(plan.name for plan in plans if not rows_by_file[plan.name]),
        "skipped_input": _skipped_input(plans, by_file, rows_by_file).as_metric(),
        "files_by_format": _tally(plan.format for plan in read),
        "files_by_schema": _tally(plan.schema for plan in read),
        "dropped_by_reason": {reason: n for reason, n in by_reason.items() if n},
        "problems_by_file": {name: problems for name, problems in by_file.items() if problems},
        "unknown_columns": {plan.name: list(plan.unknown_columns) for plan in plans
                            if plan.unknown_columns},
        "chunks": len(chunks),
    }


def _skipped_input(plans: list[io.FilePlan], by_file: dict[str, dict[str, int]],
                   rows_by_file: dict[str, int]) -> SkippedInput:
    """The files that gave no rows, each with why (their problems, the reader's words)."""
    items = tuple((plan.name, io.skip_reason(by_file[plan.name], plan.detail))
                  for plan in plans if not rows_by_file[plan.name])
    return SkippedInput("files", "skipped", len(plans), len(items), items)


def _tally(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def _cleanse(client: Client, raw: list[Any], selected: tuple[rules.Rule, ...], target: str,
             meta: Any, place: list[str] | None) -> tuple[training.Persisted, dict[int, int]]:
    """The model-ready partitions (``meta``: an empty one) and the row count per label.

    One task per partition labels it once, keeps the rows no rule drops and derives the
    features. ``raw`` is emptied: once no future holds a raw partition, the scheduler
    frees it as soon as its cleansed one exists, so the load's frame and the cleansed
    frame are never both whole in memory (its lineage stays: a lost cleansed partition
    is still recomputed from the file)."""
    cleansed = client.map(cleanse_partition, raw, selected=selected, target=target,
                          workers=place, pure=False)
    raw.clear()
    frames = client.map(_frame_of, cleansed, workers=place, pure=False)
    tallies = client.map(_dict_of, cleansed, workers=place, pure=False)
    del cleansed
    wait(frames)
    counts: dict[int, int] = {}
    for tally in client.gather(tallies):
        for label, n in tally.items():
            counts[label] = counts.get(label, 0) + n
    return training.Persisted(frames, meta), counts


def cleanse_partition(result: tuple[Any, dict[str, Any]], selected: tuple[rules.Rule, ...],
                       target: str) -> tuple[Any, dict[int, int]]:
    """A raw partition's model features (the rows every rule keeps) and its rows per
    label."""
    frame = result[0]
    labels = rules.label(frame, selected)
    counts = labels.value_counts()
    counts = counts.to_pandas() if hasattr(counts, "to_pandas") else counts  # cuDF
    return (features.make(frame, target, keep=labels == rules.KEPT),
            {int(label): int(n) for label, n in counts.items()})


def _warm_up() -> None:
    import pyarrow.csv
    import pyarrow.parquet  # noqa: F401
    import xgboost.dask  # noqa: F401


def _worker_threads(client: Client, place: list[str] | None) -> int:
    """The workers' common thread count (0 when they differ: XGBoost then uses each
    worker's own). Set explicitly because worker processes start with
    ``OMP_NUM_THREADS=1``, which XGBoost would otherwise follow."""
    counts = set(client.nthreads(place).values())
    return counts.pop() if len(counts) == 1 else 0


def booster_params(config: Config, threads: int) -> dict[str, Any]:
    settings = config.xgboost
    params = {"tree_method": "hist", "device": config.device, "objective": settings.objective,
              "learning_rate": settings.learning_rate, "max_depth": settings.max_depth,
              "subsample": settings.subsample, "gamma": settings.gamma, "seed": settings.seed}
    if threads:
        params["nthread"] = threads
    return params


def _errors(client: Client, actual: Any, predicted: Any,
            place: list[str] | None) -> dict[str, float]:
    """Error metrics: float64 sums per partition on the workers, then a tree sum.

    ``predicted`` comes partition for partition from the test half, so the two are
    combined without alignment (aligning frames of unknown divisions would shuffle).
    """
    import dask.dataframe as dd
    import pandas as pd

    meta = pd.DataFrame({name: pd.Series(dtype="float64") for name in _SUMS})
    sums = dd.map_partitions(_partition_sums, actual, predicted, meta=meta,
                             align_dataframes=False).sum()
    total = client.compute(sums, workers=place).result()
    n, sse, sae, sape, n_ape, sy, syy = (float(total[name]) for name in _SUMS)
    if n == 0:
        raise DatasetError("the test split is empty: too few rows for --test-fraction")
    total_variance = syy - sy ** 2 / n
    return {
        "rmse": math.sqrt(sse / n),
        "mse": sse / n,
        "mae": sae / n,
        "mape": sape / n_ape if n_ape else float("nan"),  # zero targets left out
        "r2": 1.0 - sse / total_variance if total_variance > 0 else float("nan"),
    }


_SUMS = ("n", "sse", "sae", "sape", "n_ape", "sy", "syy")


def _partition_sums(actual: Any, predicted: Any) -> Any:
    """One row of float64 sums for a partition, row by row in position (pandas or cuDF
    in, where the arithmetic stays; a one-row pandas frame out)."""
    import pandas as pd

    if len(actual) != len(predicted):
        raise ValueError(f"{len(predicted)} predictions for {len(actual)} rows: "
                         "partitions out of step")
    y = actual.astype("float64").reset_index(drop=True)
    error = predicted.astype("float64").reset_index(drop=True) - y
    relative = (error.abs() / y.abs())[y != 0]
    values = (len(y), (error ** 2).sum(), error.abs().sum(), relative.sum(), len(relative),
              y.sum(), (y ** 2).sum())
    return pd.DataFrame([[float(v) for v in values]], columns=list(_SUMS))


def _rate(rows: int, seconds: float) -> float:
    return rows / seconds if seconds > 0 else float("nan")
