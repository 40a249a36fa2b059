"""Settings: defaults < profile < command line, validation, and the flags' names."""
from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from workloads.taxi import benchmark, rules
from workloads.taxi import schema as s
from workloads.taxi.settings import Config, XGBoostSettings

RUNNER_FLAGS = ["--stack", "--outputs", "--scheduler-address", "--local", "--benchmark", "--profile",
                "--data-dir", "--device", "--workers", "--output"]
IMAGES_FLAGS = ["--weights", "--model", "--preprocess", "--batch-size", "--precision"]


def parser() -> argparse.ArgumentParser:
    parsed = argparse.ArgumentParser()
    for flag in RUNNER_FLAGS + IMAGES_FLAGS:
        parsed.add_argument(flag)
    benchmark.add_arguments(parsed)  # raises on a clash
    return parsed


def test_defaults_are_the_seed_and_rapids_values():
    config = benchmark.make_config(None, {}, "/data", "cpu")
    assert config.target == s.TOTAL and config.dataframe == "auto" and config.test_fraction == 0.25
    assert config.rules == rules.RULE_NAMES
    assert config.xgboost == XGBoostSettings(num_boost_round=100, learning_rate=0.3, max_depth=8,
                                             subsample=0.6, gamma=1.0)
    json.dumps(dataclasses.asdict(config))  # the record carries it


def test_profile_then_command_line():
    profile = benchmark.load_profile("small")
    args = parser().parse_args(["--target", "fare_amount", "--xgb-rounds", "7",
                                "--taxi-rules", "missing_values, fare_not_positive",
                                "--dataframe", "pandas"])
    config = benchmark.make_config(args, profile, "/data", "cuda")
    assert config.block_mib == profile["block_mib"]
    assert (config.target, config.xgboost.num_boost_round, config.dataframe) == (s.FARE, 7, "pandas")
    assert config.rules == ("missing_values", "fare_not_positive")
    assert config.xgboost.max_depth == 8 and config.device == "cuda"
    assert benchmark.make_config(parser().parse_args([]), profile, "/d", "cpu").target == s.TOTAL


@pytest.mark.parametrize("name", ["smoke", "small", "reference"])
def test_every_profile_makes_a_config_and_names_real_files(name):
    profile = benchmark.load_profile(name)
    benchmark.make_config(None, profile, "/data", "cpu")
    from workloads.taxi import synthetic as synth

    assert synth.expand(profile["generate"]["files"])


@pytest.mark.parametrize("change, message", [
    ({"dataframe": "cudf"}, "--device cuda"),
    ({"target": "tip_amount"}, "--target"),
    ({"test_fraction": 1.0}, "--test-fraction"),
    ({"block_mib": 0}, "--taxi-block-mib"),
    ({"block_mib": 2048}, "1..1024"),
    ({"rules": ("nonsense",)}, "nonsense"),
])
def test_bad_settings_name_themselves(change, message):
    with pytest.raises(ValueError, match=message):
        Config(data_dir="/d", device="cpu", **change)


def test_unknown_profile_keys_are_refused():
    with pytest.raises(ValueError, match="block_size"):
        benchmark.make_config(None, {"block_size": 3}, "/d", "cpu")
    with pytest.raises(ValueError, match="xgboost"):
        benchmark.make_config(None, {"xgboost": {"eta": 0.1}}, "/d", "cpu")


def test_generate_writes_the_profile_files(tmp_path):
    benchmark.generate(tmp_path, {"generate": {"files": ["2017-02.csv"], "rows_per_file": 10}})
    assert (tmp_path / "taxi" / "yellow_tripdata_2017-02.csv").exists()
    benchmark.generate(tmp_path / "none", {})  # no generate section: nothing to write
    assert not (tmp_path / "none").exists()
