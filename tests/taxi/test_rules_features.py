"""The cleansing rules and the features, on small pandas frames (no cluster)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.taxi.support import trips
from workloads.taxi import features, rules
from workloads.taxi import schema as s


def first_rule(frame: pd.DataFrame) -> list[str]:
    names = ("kept", *rules.RULE_NAMES)
    return [names[label] for label in rules.label(frame, rules.RULES)]


@pytest.mark.parametrize("column, values, expected", [
    (s.FARE, [-3.0, 0.0, 0.5, 1.0, 1.01, 499.99, 500.0],
     ["fare_not_positive", "fare_not_positive", "fare_out_of_range", "fare_out_of_range",
      "kept", "short_trip_high_fare", "fare_out_of_range"]),
    (s.TOTAL, [-1.0, 0.0, 0.01], ["total_not_positive", "total_not_positive", "kept"]),
    (s.PASSENGERS, [0.0, 1.0, 6.0, 7.0, np.nan],
     ["passengers_not_positive", "kept", "kept", "passengers_out_of_range", "missing_values"]),
    (s.DISTANCE, [0.0, 0.01, 499.0, 500.0], ["distance_out_of_range", "kept",
                                              "long_trip_low_fare", "distance_out_of_range"]),
])
def test_each_rule_at_its_boundaries(column, values, expected):
    assert first_rule(trips(**{column: values})) == expected


def test_long_cheap_and_short_expensive_trips():
    frame = trips(**{s.DISTANCE: [51.0, 51.0, 50.0, 9.9, 9.9, 10.0],
                     s.FARE: [49.0, 50.0, 20.0, 300.5, 300.0, 400.0]})
    assert first_rule(frame) == ["long_trip_low_fare", "kept", "kept", "short_trip_high_fare",
                                 "kept", "kept"]


def test_dropoff_must_be_after_pickup():
    frame = trips(**{s.FARE: [11.0, 11.0, 11.0]})
    frame.loc[1, s.DROPOFF] = frame.loc[1, s.PICKUP]
    frame.loc[2, s.DROPOFF] = frame.loc[2, s.PICKUP] - pd.Timedelta(seconds=1)
    assert first_rule(frame) == ["kept", "dropoff_not_after_pickup", "dropoff_not_after_pickup"]


def test_a_row_is_charged_to_the_first_rule_only():
    frame = trips(**{s.FARE: [-5.0], s.TOTAL: [-5.0], s.PASSENGERS: [0.0]})
    assert first_rule(frame) == ["fare_not_positive"]
    later_first = rules.select(["passengers_not_positive", "total_not_positive"])
    assert [r.name for r in later_first] == ["total_not_positive", "passengers_not_positive"]
    assert list(rules.label(frame, later_first)) == [1]


def test_every_used_column_counts_as_missing():
    for name in s.USED:
        frame = trips(**{s.FARE: [11.0]})
        frame.loc[0, name] = None
        assert first_rule(frame) == ["missing_values"], name


def test_unknown_rule_names_are_refused():
    with pytest.raises(ValueError, match="no_such_rule"):
        rules.select(["fare_not_positive", "no_such_rule"])


def test_rules_are_plain_records():
    described = rules.describe(rules.RULES)
    assert [d["name"] for d in described] == list(rules.RULE_NAMES)
    assert {d["origin"] for d in described} == {"seed", "rapids"}


def test_features_are_float32_and_derived_from_the_pickup_time():
    frame = trips(**{s.FARE: [11.0, 20.0]})
    frame.loc[1, s.PICKUP] = pd.Timestamp("2017-12-31 23:59:30")  # a Sunday
    frame.loc[1, s.DROPOFF] = pd.Timestamp("2018-01-01 00:29:00")
    out = features.make(frame, s.FARE)
    assert list(out.columns) == [*features.FEATURES, s.FARE]
    assert set(out.dtypes.astype(str)) == {"float32"}
    row = out.iloc[1]
    assert (row.pickup_hour, row.pickup_weekday, row.pickup_minute, row.pickup_month) == (23, 6, 59, 12)
    assert row.pickup_weekhour == 6 * 24 + 23
    assert row.duration_minutes == pytest.approx(29.5)
    assert out.iloc[0].pickup_weekhour == 0 * 24 + 8  # Monday 08:15
    assert out[s.FARE].tolist() == [11.0, 20.0]


def test_time_features_match_the_calendar_over_a_century():
    """Minute, hour and weekday come from integer division of the microseconds: they
    must agree with the calendar's own fields, before 1970 included."""
    import numpy as np

    rng = np.random.default_rng(7)
    micros = rng.integers(-(10 ** 15), 4 * 10 ** 15, size=5_000)  # 1938 .. 2096
    pickups = pd.Series(micros.astype("datetime64[us]"))
    frame = trips(**{s.FARE: [10.0] * len(pickups)})
    frame[s.PICKUP] = pickups.to_numpy()
    frame[s.DROPOFF] = (pickups + pd.Timedelta(minutes=5)).to_numpy()
    out = features.make(frame, s.FARE)
    calendar = pickups.dt
    assert (out.pickup_minute.to_numpy() == calendar.minute.to_numpy()).all()
    assert (out.pickup_hour.to_numpy() == calendar.hour.to_numpy()).all()
    assert (out.pickup_weekday.to_numpy() == calendar.weekday.to_numpy()).all()
    assert (out.pickup_month.to_numpy() == calendar.month.to_numpy()).all()
    assert out.duration_minutes.to_numpy() == pytest.approx(5.0)


def test_features_refuse_an_unknown_target():
    with pytest.raises(ValueError, match="tip_amount"):
        features.make(trips(), "tip_amount")


def test_error_sums_pair_rows_by_position():
    from workloads.taxi.benchmark import _partition_sums

    actual = pd.Series([10.0, 20.0, 0.0], index=[7, 3, 5], dtype="float32")
    predicted = pd.Series([11.0, 18.0, 1.0], index=[0, 1, 2], dtype="float32")  # other labels
    sums = _partition_sums(actual, predicted).iloc[0]
    assert sums.to_dict() == pytest.approx({"n": 3, "sse": 1 + 4 + 1, "sae": 1 + 2 + 1,
                                            "sape": 0.1 + 0.1, "n_ape": 2, "sy": 30, "syy": 500})
    with pytest.raises(ValueError, match="out of step"):
        _partition_sums(actual, predicted.iloc[:2])
