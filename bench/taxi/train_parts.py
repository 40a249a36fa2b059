"""Where the taxi ``train`` phase's time goes, against the single-process baseline.

``dask-tkg bench train-parts [--profile quick|default] [--repeats N]`` runs the real taxi
benchmark on the suite's local cluster and splits each run's ``train`` phase into:

* ``matrix``: building ``DaskQuantileDMatrix`` on the client (XGBoost's packing tasks and
  their round trips, ``training.placed_matrix``);
* on the rank's worker, inside ``xgboost.dask``'s training task: the worker's
  ``QuantileDMatrix`` from the rank's partitions (``xgboost.dask.data._get_dmatrices``)
  and ``xgboost.train`` itself;
* the rest of ``xgboost.dask.train``: the tracker, the lock, submitting the task, the
  booster's way back.

Next to each run, the figure's baseline in its helper process (the workers' environment,
the same rows, parameters and rounds) split the same way: ``QuantileDMatrix`` and
``xgboost.train``. The two worker-side timings come from wrapping those two XGBoost
functions on the workers for the measurement (``xgboost.dask`` 3.2 looks both up by name
when its training task is unpickled); nothing else changes. Prints one line per run.
"""
from __future__ import annotations

import argparse
import json
import time
from contextlib import closing
from typing import Any

from bench import helper, registry
from bench.taxi import measure as bench_taxi


def _time_xgboost_on_worker() -> None:
    """On a worker: record the seconds of its QuantileDMatrix build and xgboost.train."""
    import xgboost.dask.data as dask_data
    import xgboost.training as training

    if getattr(training, "_bench_timings", None) is not None:
        return
    timings: list[tuple[str, float]] = []
    training._bench_timings = timings
    dask_data._get_dmatrices = _timed("worker_matrix", dask_data._get_dmatrices, timings)
    training.train = _timed("worker_train", training.train, timings)


def _worker_timings() -> list[tuple[str, float]]:
    import xgboost.training as training

    timings = list(training._bench_timings)
    training._bench_timings.clear()
    return timings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="quick", choices=sorted(registry.load_profiles()),
                        help="the sizes of this profile's taxi files (default: quick)")
    parser.add_argument("--repeats", type=int, default=5, metavar="N",
                        help="timed runs after the warm-up (default: 5)")


def run(args: argparse.Namespace) -> int:
    from workloads.cluster import local
    from workloads.cluster.session import ClusterSession
    from workloads.runs.results import PhaseTimer
    from workloads.taxi import benchmark, training

    ctx, _, config = bench_taxi.prepared(args.profile)
    plan = local.plan(ctx.profile.get("workers"), "cpu")
    threads = plan.n_workers * plan.threads_per_worker
    params = benchmark.booster_params(config, threads)
    client_times: list[tuple[str, float]] = []
    training.placed_matrix = _timed("matrix", training.placed_matrix, client_times)
    kept: dict[str, Any] = {}
    with ClusterSession.start_local(plan) as session, \
            closing(helper.Helper("single-xgboost", local.plan(1, "cpu", threads_per_worker=threads).environ)) as one:
        client = session.client
        client.run(_time_xgboost_on_worker)

        def keep(placed) -> None:
            import pandas as pd

            kept["frame"] = pd.concat(client.gather(placed.parts), ignore_index=True)
        for number in range(args.repeats + 1):  # the first is the warm-up, printed but marked
            timer = PhaseTimer()
            client_times.clear()
            benchmark.run(client, config, timer, on_training_data=keep if number == 0 else None)
            if number == 0:
                one.call(bench_taxi.single_load, frame=kept.pop("frame"), target=config.target)
            on_workers = dict(t for timings in client.run(_worker_timings).values() for t in timings)
            single = one.call(bench_taxi.single_steps, params=params, num_boost_round=config.xgboost.num_boost_round)
            train = timer.phases["train"]
            parts = {"train_phase": train, **dict(client_times), **on_workers}
            on_worker_total = on_workers["worker_matrix"] + on_workers["worker_train"]
            parts["rest_of_dxgb_train"] = train - parts["matrix"] - on_worker_total
            parts.update(single, single_total=sum(single.values()))
            parts["ratio"] = train / parts["single_total"]
            print(json.dumps({"run": "warm-up" if number == 0 else number,
                              **{k: round(v, 3) for k, v in parts.items()}}), flush=True)
    return 0


def _timed(name: str, function, into: list[tuple[str, float]]):
    """``function``, appending ``(name, its seconds)`` to ``into`` at each call."""
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            into.append((name, time.perf_counter() - started))
    return wrapper
