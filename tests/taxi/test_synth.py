"""The synthetic taxi files: layout, schemas, determinism, and the noise the RMSE floor
is derived from."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from workloads.taxi import features
from workloads.taxi import schema as s
from workloads.taxi import synthetic as synth


def test_file_names_and_layout_follow_the_tlc(tmp_path):
    paths = synth.generate(tmp_path, ["2018-12..2019-02.csv", "2017-01.parquet"], 50)
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == [
        "taxi/yellow_tripdata_2018-12.csv", "taxi/yellow_tripdata_2019-01.csv",
        "taxi/yellow_tripdata_2019-02.csv", "taxi/yellow_tripdata_2017-01.parquet"]
    assert list(pd.read_csv(paths[0]).columns) == list(s.COLUMNS_2017)
    assert list(pd.read_csv(paths[1]).columns) == list(s.COLUMNS_2019)
    assert pq.read_schema(paths[3]).names == [*list(s.COLUMNS_2017), s.AIRPORT_FEE]
    assert not list((tmp_path / "taxi").glob("*.partial"))


def test_parquet_columns_have_the_tlc_types(tmp_path):
    (path,) = synth.generate(tmp_path, ["2019-03.parquet"], 20)
    schema = pq.read_schema(path)
    assert {name: schema.field(name).type for name in schema.names} == {
        name: s.FILE_TYPES[name] for name in schema.names}


def test_same_seed_same_bytes_and_existing_files_are_kept(tmp_path):
    first = synth.generate(tmp_path / "a", ["2017-03.csv"], 500)[0]
    second = synth.generate(tmp_path / "b", ["2017-03.csv"], 500)[0]
    assert first.read_bytes() == second.read_bytes()
    other = synth.generate(tmp_path / "c", ["2017-03.csv"], 500, seed=1)[0]
    assert other.read_bytes() != first.read_bytes()
    first.write_text("kept")
    synth.generate(tmp_path / "a", ["2017-03.csv"], 500)
    assert first.read_text() == "kept"


def test_new_parameters_rewrite_only_generated_files(tmp_path):
    (tmp_path / "taxi").mkdir()
    real = tmp_path / "taxi" / "yellow_tripdata_2017-03.csv"
    real.write_text("not generated")
    synth.generate(tmp_path, ["2017-03.csv", "2017-04.csv"], 100)
    assert real.read_text() == "not generated"
    manifest = synth.read_manifest(tmp_path / "taxi")
    assert manifest["files"] == ["yellow_tripdata_2017-04.csv"] and manifest["rows_per_file"] == 100
    synth.generate(tmp_path, ["2017-04.csv"], 100)
    assert synth.read_manifest(tmp_path / "taxi") == manifest
    (path,) = synth.generate(tmp_path, ["2017-04.csv"], 200)
    assert len(pd.read_csv(path)) == 200 and real.read_text() == "not generated"
    assert synth.read_manifest(tmp_path / "taxi")["rmse_floor"] == pytest.approx(synth.rmse_floor())


def test_bad_specs_are_refused():
    with pytest.raises(ValueError, match=r"2017-6\.csv"):
        synth.expand(["2017-6.csv"])
    with pytest.raises(ValueError, match="ends before"):
        synth.expand(["2018-02..2018-01.csv"])


def test_every_invalid_kind_is_there():
    rng = np.random.default_rng(0)
    frame = synth.trips("2019-04", 24_000, rng, invalid_fraction=0.03)
    per_kind = 24_000 * 0.03 / len(synth.INVALID_KINDS)
    assert frame[s.PASSENGERS].isna().sum() == per_kind
    assert (frame[s.FARE] <= 0).sum() == per_kind
    assert (frame[s.TOTAL] == 0).sum() == per_kind
    assert (frame[s.PASSENGERS] == 0).sum() == per_kind
    assert (frame[s.PASSENGERS] > 6).sum() == per_kind
    assert (frame[s.DISTANCE] == 0).sum() == per_kind
    assert (frame[s.DISTANCE] >= 500).sum() == per_kind
    assert (frame[s.DROPOFF] < frame[s.PICKUP]).sum() == per_kind


def test_fare_is_its_formula_plus_noise_of_the_stated_sd():
    """Valid metered trips: the residual of the generator's formula has sd noise_sd, and
    the total adds only amounts that are functions of the same features."""
    rng = np.random.default_rng(3)
    frame = synth.trips("2019-06", 40_000, rng, noise_sd=1.5, invalid_fraction=0.0)
    minutes = (frame[s.DROPOFF] - frame[s.PICKUP]).dt.total_seconds() / 60
    hour, weekday = frame[s.PICKUP].dt.hour, frame[s.PICKUP].dt.weekday
    rush = (weekday < 5) & (hour >= 16) & (hour <= 19)
    manhattan = frame[s.PICKUP_ZONE].isin(synth.MANHATTAN)
    metered = 2.5 + 2.5 * frame[s.DISTANCE] + 0.35 * minutes + 1.0 * rush + 0.75 * manhattan
    plain = frame[s.RATE_CODE] == 1
    residual = (frame[s.FARE] - metered)[plain]
    assert residual.mean() == pytest.approx(0.0, abs=0.03)
    assert residual.std() == pytest.approx(math.sqrt(1.5 ** 2 + synth.CENT_ROUNDING_VAR), rel=0.03)
    charges = frame[[s.EXTRA, s.MTA_TAX, s.TIP, s.TOLLS, s.IMPROVEMENT, s.CONGESTION]].sum(axis=1)
    assert (frame[s.TOTAL] - frame[s.FARE] - charges).abs().max() < 0.006


def test_the_floor_is_the_noise_plus_cent_rounding():
    assert synth.rmse_floor(1.0) == pytest.approx(1.0, abs=1e-4)
    assert synth.rmse_floor(0.0) == pytest.approx(math.sqrt(2 / 12) * 0.01)


def test_the_features_cover_every_input_of_the_fare():
    """The floor is only reachable if the model sees what the fare depends on."""
    for needed in ("pickup_hour", "pickup_weekday", "duration_minutes", s.DISTANCE,
                   s.PICKUP_ZONE, s.DROPOFF_ZONE, s.RATE_CODE, "pickup_month"):
        assert needed in features.FEATURES


def test_zero_rows_make_header_only_files(tmp_path):
    from workloads.taxi import io

    synth.generate(tmp_path, ["2017-01.csv", "2017-02.parquet"], 0)
    plans = io.plan(str(tmp_path), "yellow_tripdata_*", 1 << 20)
    assert [p.problems for p in plans] == [{"header_only": 1}, {"header_only": 1}]
