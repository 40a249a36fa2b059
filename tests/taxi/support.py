"""The generated taxi dataset the taxi tests share: its files, damage and the pandas reference
counts; and small typed frames of valid trips."""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workloads.taxi import schema as s
from workloads.taxi import synthetic as synth

GOOD_FILES = ["2017-06.csv", "2018-02.parquet", "2019-01.csv", "2019-05.parquet"]
DAMAGED = "2019-07.csv"  # gets malformed lines
EXTRA_COLUMN = "2019-10.csv"  # gets an unknown column
ROWS = 20_000  # per file
# data-line index -> how the line is damaged
WRONG_FIELD_COUNT = {10: "drop_last", 700: "drop_last", 1400: "extra_field", 2100: "extra_field",
                     9000: "truncate"}


UNPARSABLE = {3000: (s.FARE, "12.3x"), 3500: (s.TOTAL, "abc"),
              4000: (s.PICKUP, "2019-07-32 10:00:00"), 4500: (s.DROPOFF, "not a date"),
              5000: (s.PASSENGERS, "one"), 5500: (s.STORE_AND_FWD, "X"),
              11000: (s.DISTANCE, "1..2")}


@dataclass
class TaxiData:
    root: Path  # the dataset root (holds taxi/)
    source: Path  # the generated files before damage
    readable: list[str] = field(default_factory=list)  # files that contribute rows
    problems: dict[str, dict[str, int]] = field(default_factory=dict)  # file -> reason -> count
    unknown_columns: dict[str, list[str]] = field(default_factory=dict)

    def pandas_frame(self) -> pd.DataFrame:
        """Every readable row, read with plain pandas from the undamaged files, less the
        lines the fixture damaged."""
        frames = []
        for name in self.readable:
            path = self.source / name
            if path.suffix == ".csv":
                frame = pd.read_csv(path, parse_dates=[s.PICKUP, s.DROPOFF])
            else:
                frame = pd.read_parquet(path)
            if name == synth.file_name(*DAMAGED.split(".")):
                frame = frame.drop(index=[*WRONG_FIELD_COUNT, *UNPARSABLE])
            frames.append(frame[list(s.USED)])
        return pd.concat(frames, ignore_index=True)


def pandas_rule_counts(frame: pd.DataFrame) -> tuple[dict[str, int], int]:
    """The rules written out again in plain pandas, applied in order: rows each removes,
    and the rows left."""
    steps = [
        ("missing_values", lambda d: d[list(s.USED)].isna().any(axis=1)),
        ("fare_not_positive", lambda d: d[s.FARE] <= 0),
        ("total_not_positive", lambda d: d[s.TOTAL] <= 0),
        ("passengers_not_positive", lambda d: d[s.PASSENGERS] <= 0),
        ("fare_out_of_range", lambda d: ~d[s.FARE].between(1, 500, inclusive="neither")),
        ("passengers_out_of_range", lambda d: ~d[s.PASSENGERS].between(0, 6, inclusive="right")),
        ("distance_out_of_range", lambda d: ~d[s.DISTANCE].between(0, 500, inclusive="neither")),
        ("long_trip_low_fare", lambda d: (d[s.DISTANCE] > 50) & (d[s.FARE] < 50)),
        ("short_trip_high_fare", lambda d: (d[s.DISTANCE] < 10) & (d[s.FARE] > 300)),
        ("dropoff_not_after_pickup", lambda d: ~(d[s.DROPOFF] > d[s.PICKUP])),
    ]
    counts = {}
    for name, drops in steps:
        hit = drops(frame)
        counts[name] = int(hit.sum())
        frame = frame[~hit]
    return counts, len(frame)


def damage_csv(path: Path) -> None:
    """Break the lines named in WRONG_FIELD_COUNT and UNPARSABLE (data-line indices)."""
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    for index, how in WRONG_FIELD_COUNT.items():
        fields = lines[index + 1].split(",")
        fields = {"drop_last": fields[:-1], "extra_field": [*fields, "7"],
                  "truncate": fields[:3]}[how]
        lines[index + 1] = ",".join(fields)
    for index, (column, value) in UNPARSABLE.items():
        fields = lines[index + 1].split(",")
        fields[header.index(column)] = value
        lines[index + 1] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")


def add_column(path: Path, name: str, value: str) -> None:
    lines = path.read_text().splitlines()
    lines = [lines[0] + "," + name] + [line + "," + value for line in lines[1:]]
    path.write_text("\n".join(lines) + "\n")


def make_dataset(base: Path) -> TaxiData:
    source, root = base / "source", base / "root"
    synth.generate(source, [*GOOD_FILES, DAMAGED, EXTRA_COLUMN], ROWS)
    taxi = root / "taxi"
    shutil.copytree(source / "taxi", taxi)
    data = TaxiData(root=root, source=source / "taxi")
    data.readable = sorted(p.name for p in taxi.glob("yellow_tripdata_*"))

    damaged = taxi / synth.file_name(*DAMAGED.split("."))
    damage_csv(damaged)
    data.problems[damaged.name] = {"wrong_field_count": len(WRONG_FIELD_COUNT),
                                   "unparsable_value": len(UNPARSABLE)}
    extra = taxi / synth.file_name(*EXTRA_COLUMN.split("."))
    add_column(extra, "rider_rating", "4")
    data.problems[extra.name] = {"unknown_column": 1}
    data.unknown_columns[extra.name] = ["rider_rating"]

    header_only = taxi / "yellow_tripdata_2019-08.csv"
    header_only.write_text(",".join(s.COLUMNS_2019) + "\n")
    schema_only = taxi / "yellow_tripdata_2019-09.parquet"
    pq.write_table(pa.schema([(c, s.FILE_TYPES[c]) for c in s.COLUMNS_2019]).empty_table(),
                   schema_only)
    empty = taxi / "yellow_tripdata_2019-11.csv"
    empty.write_bytes(b"")
    garbage = taxi / "yellow_tripdata_2019-12.parquet"
    garbage.write_bytes(b"PAR1 this is not a parquet file")
    no_fare = taxi / "yellow_tripdata_2016-12.csv"
    columns = [c for c in s.COLUMNS_2017 if c != s.FARE]
    no_fare.write_text(",".join(columns) + "\n" + ",".join("1" for _ in columns) + "\n")
    data.problems.update({header_only.name: {"header_only": 1}, schema_only.name: {"header_only": 1},
                          empty.name: {"empty_file": 1}, garbage.name: {"unreadable_file": 1},
                          no_fare.name: {"missing_column": 1}})
    return data


def trips(**columns) -> pd.DataFrame:
    """Valid float32 trips (the typed frame), with ``columns`` overriding the defaults."""
    n = len(next(iter(columns.values()))) if columns else 1
    pickup = pd.Series(pd.to_datetime(["2019-03-04 08:15:00"] * n)).astype("datetime64[us]")
    base = {
        s.VENDOR: 1.0, s.PICKUP: pickup, s.DROPOFF: pickup + pd.Timedelta(minutes=12),
        s.PASSENGERS: 1.0, s.DISTANCE: 2.5, s.RATE_CODE: 1.0, s.STORE_AND_FWD: 0.0,
        s.PICKUP_ZONE: 161.0, s.DROPOFF_ZONE: 237.0, s.FARE: 11.0, s.TOTAL: 15.3,
    }
    frame = pd.DataFrame({name: columns.get(name, value) for name, value in base.items()},
                         index=range(n))
    for name in s.USED:
        if name not in s.TIMESTAMPS:
            frame[name] = frame[name].astype("float32")
    return frame
