"""The taxi benchmark end to end on a real local Dask cluster (2 processes x 1 thread)."""
from __future__ import annotations

import time

import pytest

from workloads.core.errors import DatasetError
from workloads.runs.results import PhaseTimer
from workloads.taxi import benchmark
from workloads.taxi import schema as s
from workloads.taxi import synthetic as synth

from .support import ROWS, TaxiData, pandas_rule_counts

PHASES = ["load", "cleanse", "split", "train", "infer", "evaluate"]


@pytest.fixture(scope="module")
def outcome(client, taxi_data: TaxiData):
    """One run over every file of the dataset (good and bad), with small partitions."""
    config = benchmark.make_config(None, {"block_mib": 1, "dataframe": "pandas"},
                                   taxi_data.root, "cpu")
    timer = PhaseTimer()
    metrics = benchmark.run(client, config, timer)
    return timer, metrics


def test_six_phases_timed_in_the_order_they_ran(outcome):
    timer, _ = outcome
    assert list(timer.phases) == PHASES
    assert all(seconds > 0 for seconds in timer.phases.values())
    assert timer.unfinished == {}


def test_each_rule_drops_what_plain_pandas_drops(outcome, taxi_data):
    _, metrics = outcome
    frame = taxi_data.pandas_frame()
    expected, left = pandas_rule_counts(frame)
    assert metrics["rows_raw"] == len(frame)
    assert metrics["dropped_by_rule"] == expected
    assert metrics["rows_clean"] == left
    assert all(count > 0 for count in expected.values()), "every rule should have work to do"
    assert metrics["rows_raw"] - sum(expected.values()) == left


def test_split_is_75_25_of_the_clean_rows(outcome):
    _, metrics = outcome
    assert metrics["rows_train"] + metrics["rows_test"] == metrics["rows_clean"]
    assert metrics["rows_test"] / metrics["rows_clean"] == pytest.approx(0.25, abs=0.01)


def test_rmse_is_within_1_5x_of_the_generators_noise_floor(outcome):
    _, metrics = outcome
    floor = synth.rmse_floor(synth.NOISE_SD)
    assert metrics["synthetic"]["rmse_floor"] == pytest.approx(floor)  # from the manifest
    print(f"RMSE {metrics['rmse']:.4f}, floor {floor:.4f}, ratio {metrics['rmse'] / floor:.3f}")
    assert 0.9 * floor < metrics["rmse"] < 1.5 * floor  # below the floor would mean a leak
    assert metrics["mse"] == pytest.approx(metrics["rmse"] ** 2)
    assert metrics["mae"] < metrics["rmse"]
    assert 0 < metrics["mape"] < 0.2
    assert metrics["r2"] > 0.95


def test_both_schemas_and_both_formats_in_one_run(outcome):
    _, metrics = outcome
    schemas = metrics["files_by_schema"]
    assert schemas.get("17-column", 0) >= 1 and schemas.get("18-column", 0) >= 1
    assert schemas.get("17-column+airport_fee", 0) >= 1 and schemas.get("18-column+airport_fee", 0) >= 1
    assert metrics["files_by_format"] == {"csv": 4, "parquet": 2}
    assert metrics["files"] == 6


def test_bad_files_are_reported_per_file_and_reason_and_the_run_completes(outcome, taxi_data):
    _, metrics = outcome
    assert metrics["problems_by_file"] == taxi_data.problems
    assert metrics["dropped_by_reason"] == {
        "empty_file": 1, "header_only": 2, "unreadable_file": 1, "missing_column": 1,
        "unknown_column": 1, "wrong_field_count": 5, "unparsable_value": 7}
    assert metrics["unknown_columns"] == taxi_data.unknown_columns
    assert metrics["files_skipped"] == sorted(
        name for name, problems in taxi_data.problems.items()
        if {"empty_file", "header_only", "unreadable_file", "missing_column"} & set(problems))


def test_throughput_and_backend_metrics(outcome):
    timer, metrics = outcome
    assert metrics["load_rows_per_second"] == pytest.approx(metrics["rows_raw"] / timer.phases["load"])
    assert metrics["train_rows_per_second"] == pytest.approx(
        metrics["rows_train"] / timer.phases["train"])
    assert metrics["backend"] == "pandas"
    assert metrics["xgboost_device"] == "cpu"
    assert metrics["xgboost_nthread"] == 1  # the workers' threads, set on purpose
    assert metrics["partitions"] > metrics["files"]  # 1 MiB blocks split the bigger CSVs


def test_settings_reach_the_run(client, taxi_data):
    """Another target, a subset of files and rules, fewer rounds."""
    from workloads.taxi.rules import RULE_NAMES

    kept_rules = [r for r in RULE_NAMES if r not in ("passengers_out_of_range", "dropoff_not_after_pickup")]
    profile = {"target": s.FARE, "files": "yellow_tripdata_2017-*", "dataframe": "pandas",
               "rules": kept_rules, "xgboost": {"num_boost_round": 20}}
    config = benchmark.make_config(None, profile, taxi_data.root, "cpu")
    metrics = benchmark.run(client, config, PhaseTimer())
    assert list(metrics["dropped_by_rule"]) == kept_rules
    assert metrics["files"] == 1 and metrics["rows_raw"] == ROWS  # 2017-06.csv only
    assert metrics["rows_clean"] == ROWS - sum(metrics["dropped_by_rule"].values())
    # the rows those two rules would drop have ordinary fares; 20 rounds still fit well
    assert metrics["rmse"] < 2 * synth.rmse_floor(synth.NOISE_SD)


def _keys_left(client, before: set, timeout: float = 10) -> list[str]:
    """The scheduler's keys that were not there ``before``, once they had ``timeout``
    seconds to go (a client's cancel reaches the scheduler on its batched stream, after
    an RPC sent later may have been answered)."""
    deadline = time.monotonic() + timeout
    while True:
        left = _scheduler_keys(client) - before
        if not left or time.monotonic() > deadline:
            return sorted(map(str, left))
        time.sleep(0.1)


def _scheduler_keys(client) -> set:
    return set(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.tasks)))


def _wait_until_idle(client, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while any(client.processing().values()):
        assert time.monotonic() < deadline, f"the cluster is still busy: {client.processing()}"
        time.sleep(0.05)


def test_missing_directory_is_one_clear_error(client, tmp_path):
    config = benchmark.make_config(None, {"dataframe": "pandas"}, tmp_path / "nowhere", "cpu")
    timer = PhaseTimer()
    before = _scheduler_keys(client)
    with pytest.raises(DatasetError) as caught:
        benchmark.run(client, config, timer)
    message = str(caught.value)
    assert str(tmp_path / "nowhere" / "taxi") in message and "taxi-csv" in message
    assert "load" in timer.unfinished
    # The traceback kept here holds the load's frames: its futures must not keep its other
    # tasks (the manifest) on the cluster, where they once ran into the next test's run.
    assert not _keys_left(client, before)


def test_no_matching_files_names_the_directory_and_pattern(client, tmp_path):
    (tmp_path / "taxi").mkdir()
    (tmp_path / "taxi" / "green_tripdata_2019-01.csv").write_text("x\n")
    config = benchmark.make_config(None, {"dataframe": "pandas"}, tmp_path, "cpu")
    before = _scheduler_keys(client)
    with pytest.raises(DatasetError) as caught:
        benchmark.run(client, config, PhaseTimer())
    assert not _keys_left(client, before)
    message = str(caught.value)
    assert str(tmp_path / "taxi") in message
    assert "yellow_tripdata_*.csv" in message and "yellow_tripdata_*.parquet" in message


def test_a_restricted_run_stays_on_its_workers(client, taxi_data):
    """The runner's ``workers`` field: every task of the run executes on those workers."""
    import dataclasses

    from distributed import get_task_stream

    one = sorted(client.nthreads())[0]
    config = benchmark.make_config(None, {"files": "yellow_tripdata_2017-*", "dataframe": "pandas",
                                          "xgboost": {"num_boost_round": 5}}, taxi_data.root, "cpu")
    _wait_until_idle(client)  # a task of an earlier test finishing now would be counted
    with get_task_stream(client) as stream:
        benchmark.run(client, dataclasses.replace(config, workers=(one,)), PhaseTimer())
    elsewhere = [(task["key"], task["worker"]) for task in stream.data if task["worker"] != one]
    assert stream.data and not elsewhere


def test_xgboosts_packing_tasks_run_on_the_ranks_worker(client, taxi_data):
    """With one rank per host the training half is on one worker; XGBoost packs each
    partition in a task of its own, which the scheduler's work stealing could move to the
    idle worker (a new kind of task is guessed at 0.5 s) and XGBoost would then train
    there too. The packing is restricted to the ranks' workers (training.placed_matrix)."""
    from distributed import get_task_stream

    config = benchmark.make_config(None, {"files": "yellow_tripdata_2017-*", "dataframe": "pandas",
                                          "xgboost": {"num_boost_round": 5, "ranks": "per-host"}},
                                   taxi_data.root, "cpu")
    with get_task_stream(client) as stream:
        metrics = benchmark.run(client, config, PhaseTimer())
    packing = {task["worker"] for task in stream.data if str(task["key"]).startswith(("dict-", "('dict-"))}
    assert metrics["xgboost_ranks"] == 1 and len(packing) == 1, packing
