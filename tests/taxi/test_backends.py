"""Choosing the partition type, and the cuDF path itself (``gpu``: skipped without one)."""
from __future__ import annotations

import pytest

from workloads.core.errors import PreflightError
from workloads.runs.results import PhaseTimer
from workloads.taxi import backends, benchmark, features, rules
from workloads.taxi import schema as s
from workloads.taxi import synthetic as synth

from .support import pandas_rule_counts, trips


class FakeClient:
    def __init__(self, workers_have: bool):
        self.workers_have = workers_have

    def run(self, function):
        return {"tcp://w1:1": self.workers_have, "tcp://w2:1": self.workers_have}


def test_auto_is_pandas_on_cpu():
    assert backends.resolve("auto", "cpu", FakeClient(True)) == "pandas"
    assert backends.resolve("pandas", "cuda", FakeClient(True)) == "pandas"


def test_auto_needs_dask_cudf_on_the_client_and_every_worker(monkeypatch):
    monkeypatch.setattr(backends, "has_dask_cudf", lambda: True)
    assert backends.resolve("auto", "cuda", FakeClient(True)) == "cudf"
    assert backends.resolve("auto", "cuda", FakeClient(False)) == "pandas"
    monkeypatch.setattr(backends, "has_dask_cudf", lambda: False)
    assert backends.resolve("auto", "cuda", FakeClient(True)) == "pandas"


def test_asking_for_cudf_without_it_names_what_lacks_it(monkeypatch):
    monkeypatch.setattr(backends, "has_dask_cudf", lambda: True)
    with pytest.raises(PreflightError, match="tcp://w1:1"):
        backends.resolve("cudf", "cuda", FakeClient(False))


def test_pandas_partitions_carry_the_typed_schema():
    frame = backends.from_arrow(s.empty_raw_table(), "pandas")
    assert list(frame.columns) == list(s.USED)
    assert str(frame[s.FARE].dtype) == "float32" and str(frame[s.PICKUP].dtype) == "datetime64[us]"


@pytest.mark.gpu
def test_rules_and_features_run_on_cudf_partitions():
    cudf = pytest.importorskip("cudf")
    frame = trips(**{s.FARE: [-1.0, 11.0, 600.0]})
    on_gpu = cudf.from_pandas(frame)
    assert rules.label(on_gpu, rules.RULES).to_pandas().tolist() == rules.label(frame, rules.RULES).tolist()
    made = features.make(on_gpu, s.TOTAL).to_pandas()
    assert made.equals(features.make(frame, s.TOTAL))


@pytest.mark.gpu
def test_cudf_end_to_end(client, taxi_data):
    pytest.importorskip("dask_cudf")
    config = benchmark.make_config(None, {"block_mib": 1, "dataframe": "cudf"}, taxi_data.root, "cuda")
    timer = PhaseTimer()
    metrics = benchmark.run(client, config, timer)
    assert list(timer.phases) == ["load", "cleanse", "split", "train", "infer", "evaluate"]
    assert (metrics["backend"], metrics["xgboost_device"]) == ("cudf", "cuda")
    expected, left = pandas_rule_counts(taxi_data.pandas_frame())
    assert metrics["dropped_by_rule"] == expected and metrics["rows_clean"] == left
    assert metrics["rmse"] < 1.5 * synth.rmse_floor(synth.NOISE_SD)


@pytest.mark.gpu
def test_pandas_frames_train_on_the_gpu(client, taxi_data):
    """The paper's first run: dask.dataframe on the CPUs, XGBoost on the GPUs."""
    config = benchmark.make_config(None, {"block_mib": 1, "dataframe": "pandas"}, taxi_data.root, "cuda")
    metrics = benchmark.run(client, config, PhaseTimer())
    assert (metrics["backend"], metrics["xgboost_device"]) == ("pandas", "cuda")
    assert metrics["rmse"] < 1.5 * synth.rmse_floor(synth.NOISE_SD)
