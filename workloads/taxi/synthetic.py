"""Synthetic NYC yellow-taxi trip files, in the TLC's layout, with a fixed seed.

``<data_dir>/taxi/yellow_tripdata_YYYY-MM.csv|.parquet``: 17 columns for 2017-2018, 18
for 2019 (``congestion_surcharge``, empty in January 2019); Parquet files also carry
``airport_fee`` (null), as the TLC's current Parquet files do.

The fare is a known function of what the model sees (distance, duration, pickup hour
and weekday, pickup/dropoff zones and rate code) plus Gaussian noise with sd
``noise_sd``. Every other charge (extra, taxes, tolls, congestion, and the tip, which
here is a fixed share of the noiseless fare whatever the payment type) is a deterministic
function of the same inputs, so the fare's noise (and rounding to cents) is all a model
cannot explain, for either target: ``rmse_floor(noise_sd)`` is the best RMSE possible.

A fraction ``invalid_fraction`` of rows is made invalid, spread evenly over
``INVALID_KINDS``, one for each cleansing rule.
"""
from __future__ import annotations

import calendar
import json
import logging
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from . import schema as s

logger = logging.getLogger(__name__)

GENERATOR_VERSION = 1  # bump when the same parameters would write different files
MANIFEST = ".generated.json"  # beside the files: the parameters they were written with
NOISE_SD = 1.0
INVALID_FRACTION = 0.03
SEED = 2017
BATCH_ROWS = 500_000  # rows generated and written at a time (with SEED, it decides the rows)
CENT_ROUNDING_VAR = 0.01 ** 2 / 12  # rounding a value to cents adds this variance

INVALID_KINDS = (
    "missing_values", "negative_fare", "zero_total", "no_passengers", "tiny_fare",
    "huge_fare", "many_passengers", "zero_distance", "huge_distance", "long_cheap",
    "short_expensive", "reversed_times",
)

JFK, LGA, NEWARK = 132, 138, 1
AIRPORTS = np.array([JFK, LGA, NEWARK])
MANHATTAN = np.array([
    4, 12, 13, 24, 41, 42, 43, 45, 48, 50, 68, 74, 75, 79, 87, 88, 90, 100, 107, 113, 114,
    116, 125, 137, 140, 141, 142, 143, 144, 148, 151, 158, 161, 162, 163, 164, 166, 170,
    186, 209, 211, 224, 229, 230, 231, 232, 233, 234, 236, 237, 238, 239, 243, 246, 249,
    261, 262, 263,
])
_HOUR_WEIGHTS = np.array([
    3.0, 2.2, 1.6, 1.1, 0.9, 1.0, 2.2, 3.6, 4.4, 4.5, 4.3, 4.4,
    4.6, 4.6, 4.8, 4.8, 4.5, 5.2, 6.0, 6.2, 5.8, 5.6, 5.2, 4.2,
])
_FILE_NAME = re.compile(r"^(\d{4})-(\d{2})(?:\.\.(\d{4})-(\d{2}))?\.(csv|parquet)$")


def rmse_floor(noise_sd: float = NOISE_SD) -> float:
    """The RMSE of a perfect model on these files: fare noise plus the cent rounding of
    the fare and the tip."""
    return math.sqrt(noise_sd ** 2 + 2 * CENT_ROUNDING_VAR)


def file_name(month: str, fmt: str) -> str:
    return f"yellow_tripdata_{month}.{fmt}"


def expand(specs: list[str]) -> list[tuple[str, str]]:
    """``["2017-06.csv", "2018-01..2018-03.parquet"]`` -> ``[(month, format), ...]``."""
    files = []
    for spec in specs:
        match = _FILE_NAME.match(spec)
        if not match:
            raise ValueError(f"file spec {spec!r} is not YYYY-MM.fmt or YYYY-MM..YYYY-MM.fmt "
                             "(fmt csv or parquet)")
        y0, m0, y1, m1, fmt = match.groups()
        first, last = int(y0) * 12 + int(m0) - 1, int(y1 or y0) * 12 + int(m1 or m0) - 1
        if last < first:
            raise ValueError(f"file spec {spec!r}: range ends before it starts")
        files += [(f"{i // 12:04d}-{i % 12 + 1:02d}", fmt) for i in range(first, last + 1)]
    return files


def columns_of(month: str, fmt: str) -> tuple[str, ...]:
    year = int(month[:4])
    columns = s.COLUMNS_2019 if year >= 2019 else s.COLUMNS_2017
    return (*columns, s.AIRPORT_FEE) if fmt == "parquet" else columns


def generate(data_dir: str | os.PathLike, files: list[str], rows_per_file: int, *,
             seed: int = SEED, noise_sd: float = NOISE_SD,
             invalid_fraction: float = INVALID_FRACTION) -> list[Path]:
    """Write the files named by ``files`` (see ``expand``) under ``<data_dir>/taxi``.

    A file already there is kept, unless this generator wrote it with other parameters:
    ``MANIFEST`` lists the files it wrote and how; those are deleted and written again
    when the parameters change. Other files are never touched. Returns every file's path.
    """
    directory = Path(data_dir) / "taxi"
    directory.mkdir(parents=True, exist_ok=True)
    wanted = {"generator": GENERATOR_VERSION, "seed": seed, "rows_per_file": rows_per_file,
              "noise_sd": noise_sd, "invalid_fraction": invalid_fraction}
    recorded = read_manifest(directory) or {}
    ours = set(recorded.get("files", []))
    if ours and {k: recorded.get(k) for k in wanted} != wanted:
        logger.info("%s: generated with other parameters; writing it again", directory)
        for name in ours:
            (directory / name).unlink(missing_ok=True)
        ours = set()
    paths = []
    for month, fmt in expand(files):
        path = directory / file_name(month, fmt)
        if not path.exists():
            logger.info("writing %s (%d rows)", path, rows_per_file)
            write_month(path, month, fmt, rows_per_file, seed=seed, noise_sd=noise_sd,
                        invalid_fraction=invalid_fraction)
            ours.add(path.name)
        paths.append(path)
    if ours:
        manifest = {**wanted, "rmse_floor": rmse_floor(noise_sd), "files": sorted(ours)}
        (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return paths


def read_manifest(directory: str | os.PathLike) -> dict | None:
    """What ``generate`` recorded about the files in ``directory`` (None: not generated)."""
    try:
        return json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_month(path: Path, month: str, fmt: str, rows: int, *, seed: int = SEED,
                noise_sd: float = NOISE_SD, invalid_fraction: float = INVALID_FRACTION) -> None:
    """Write one month's file atomically (a partial file never has the final name)."""
    rng = np.random.default_rng([seed, int(month[:4]), int(month[5:])])
    columns = list(columns_of(month, fmt))
    partial = path.with_name(path.name + ".partial")
    writer = None
    try:
        for offset in range(0, rows, BATCH_ROWS):
            frame = trips(month, min(BATCH_ROWS, rows - offset), rng, noise_sd=noise_sd,
                          invalid_fraction=invalid_fraction)[columns]
            if fmt == "csv":
                _csv_view(frame).to_csv(partial, mode="a" if offset else "w", header=not offset,
                                        index=False, date_format="%Y-%m-%d %H:%M:%S")
            else:
                table = pa.Table.from_pandas(frame, schema=pa.schema(
                    [(c, s.FILE_TYPES[c]) for c in columns]), preserve_index=False)
                writer = writer or pq.ParquetWriter(partial, table.schema)
                writer.write_table(table)
        if writer is not None:
            writer.close()
            writer = None
        if rows == 0:  # a header (or a schema) without rows
            if fmt == "csv":
                partial.write_text(",".join(columns) + "\n")
            else:
                pq.write_table(pa.schema([(c, s.FILE_TYPES[c]) for c in columns]).empty_table(),
                               partial)
        os.replace(partial, path)
    finally:
        if writer is not None:
            writer.close()
        partial.unlink(missing_ok=True)


def _csv_view(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts and codes as the TLC writes them in CSV: ``1``, not ``1.0``."""
    out = frame.copy()
    for name in (s.PASSENGERS, s.RATE_CODE):
        out[name] = out[name].astype("Int64")
    return out


def trips(month: str, n: int, rng: np.random.Generator, *, noise_sd: float = NOISE_SD,
          invalid_fraction: float = INVALID_FRACTION) -> pd.DataFrame:
    """``n`` trips of ``month`` with every known column, in the TLC's file types."""
    year, mon = int(month[:4]), int(month[5:])
    days = calendar.monthrange(year, mon)[1]
    hours = rng.choice(24, n, p=_HOUR_WEIGHTS / _HOUR_WEIGHTS.sum())
    seconds = rng.integers(0, days, n) * 86400 + hours * 3600 + rng.integers(0, 3600, n)
    pickup = np.datetime64(f"{month}-01T00:00:00", "s") + seconds.astype("timedelta64[s]")
    hour = seconds // 3600 % 24
    weekday = (pickup.astype("datetime64[D]").astype(np.int64) + 3) % 7  # 1970-01-01: Thursday
    pu, do = _zones(rng, n, airport_share=0.05), _zones(rng, n, airport_share=0.03)
    airport_trip = np.isin(pu, AIRPORTS) | np.isin(do, AIRPORTS)
    distance = np.where(airport_trip, rng.uniform(8.0, 22.0, n),
                        np.clip(rng.lognormal(math.log(1.8), 0.6, n), 0.1, 15.0)).round(2)
    rush = (weekday < 5) & (((hour >= 7) & (hour <= 9)) | ((hour >= 16) & (hour <= 19)))
    night = (hour >= 20) | (hour < 6)
    speed = (np.where(rush, 7.5, np.where(night, 18.0, 11.0)) * np.where(airport_trip, 1.8, 1.0)
             * rng.lognormal(0.0, 0.2, n))  # mph; airport trips run partly on highways
    duration_s = np.maximum(60, np.round((distance / speed * 60 + 1) * 60)).astype(np.int64)
    dropoff = pickup + duration_s.astype("timedelta64[s]")

    manhattan_pu, manhattan_do = np.isin(pu, MANHATTAN), np.isin(do, MANHATTAN)
    rate = np.ones(n)
    rate[((pu == JFK) & manhattan_do) | ((do == JFK) & manhattan_pu)] = 2.0
    rate[do == NEWARK] = 3.0
    rate[(rate == 1.0) & (rng.random(n) < 0.003)] = 5.0
    minutes = duration_s / 60.0
    # the meter: flag drop, per mile, per minute, an evening-peak and a Manhattan-pickup term
    metered = (2.5 + 2.5 * distance + 0.35 * minutes + 1.0 * (rush & (hour >= 16))
               + 0.75 * manhattan_pu)
    fare_true = np.select([rate == 2.0, rate == 3.0, rate == 5.0],
                          [np.full(n, 52.0), metered + 17.5, metered * 1.2], metered)
    fare = (fare_true + rng.normal(0.0, noise_sd, n)).round(2)

    extra = 0.5 * night + 1.0 * (weekday < 5) * (hour >= 16) * (hour < 20)
    tolls = np.where(airport_trip & (distance > 8.0), 5.76, 0.0)
    tip = (np.where(manhattan_pu, 0.18, 0.12) * fare_true).round(2)
    congestion = np.where(manhattan_pu | manhattan_do, 2.5, 0.0)
    if (year, mon) < (2019, 2):
        congestion = np.full(n, np.nan)  # absent before 2019, empty in January 2019
    frame = pd.DataFrame({
        s.VENDOR: rng.choice([1, 2], n, p=[0.45, 0.55]),
        s.PICKUP: pickup.astype("datetime64[us]"),
        s.DROPOFF: dropoff.astype("datetime64[us]"),
        s.PASSENGERS: rng.choice(np.arange(1.0, 7.0), n, p=[0.7, 0.14, 0.05, 0.03, 0.05, 0.03]),
        s.DISTANCE: distance,
        s.RATE_CODE: rate,
        s.STORE_AND_FWD: np.where(rng.random(n) < 0.01, "Y", "N"),
        s.PICKUP_ZONE: pu,
        s.DROPOFF_ZONE: do,
        s.PAYMENT: rng.choice([1, 2, 3, 4], n, p=[0.72, 0.27, 0.006, 0.004]),
        s.FARE: fare,
        s.EXTRA: extra,
        s.MTA_TAX: np.full(n, 0.5),
        s.TIP: tip,
        s.TOLLS: tolls,
        s.IMPROVEMENT: np.full(n, 0.3),
        s.CONGESTION: congestion,
        s.AIRPORT_FEE: np.full(n, np.nan),
    })
    frame[s.STORE_AND_FWD] = frame[s.STORE_AND_FWD].astype(object)
    _spoil(frame, rng, invalid_fraction)
    charges = frame[[s.EXTRA, s.MTA_TAX, s.TIP, s.TOLLS, s.IMPROVEMENT, s.CONGESTION]]
    total = (frame[s.FARE] + charges.sum(axis=1, min_count=1)).round(2)
    frame[s.TOTAL] = np.where(frame.pop("_zero_total"), 0.0, total)
    return frame[list(s.KNOWN_COLUMNS)]


def _zones(rng: np.random.Generator, n: int, airport_share: float) -> np.ndarray:
    draw = rng.random(n)
    zones = rng.choice(MANHATTAN, n)
    others = rng.integers(1, 266, n)
    zones = np.where(draw < 0.85, zones, others)
    return np.where(draw > 1.0 - airport_share, rng.choice(AIRPORTS[:2], n), zones)


def _spoil(frame: pd.DataFrame, rng: np.random.Generator, fraction: float) -> None:
    """Make ``fraction`` of the rows invalid, evenly over ``INVALID_KINDS`` (in place);
    the total is computed afterwards from the spoilt values (a flag column says where
    it is to be 0)."""
    n = len(frame)
    frame["_zero_total"] = False
    count = round(fraction * n)
    rows = rng.choice(n, size=count, replace=False)
    kinds: Any = np.arange(count) % len(INVALID_KINDS)

    def at(kind: str) -> np.ndarray:
        return rows[kinds == INVALID_KINDS.index(kind)]

    def uniform(kind: str, low: float, high: float) -> np.ndarray:
        return rng.uniform(low, high, len(at(kind))).round(2)

    missing = at("missing_values")
    frame.loc[missing, [s.PASSENGERS, s.RATE_CODE]] = np.nan
    frame.loc[missing, s.STORE_AND_FWD] = None
    negative = at("negative_fare")
    frame.loc[negative, [s.FARE, s.EXTRA, s.MTA_TAX, s.TIP, s.IMPROVEMENT]] *= -1
    frame.loc[at("zero_total"), "_zero_total"] = True
    frame.loc[at("no_passengers"), s.PASSENGERS] = 0.0
    frame.loc[at("tiny_fare"), s.FARE] = uniform("tiny_fare", 0.01, 1.0)
    frame.loc[at("huge_fare"), s.FARE] = uniform("huge_fare", 500.0, 5000.0)
    frame.loc[at("many_passengers"), s.PASSENGERS] = rng.integers(7, 10, len(at("many_passengers")))
    frame.loc[at("zero_distance"), s.DISTANCE] = 0.0
    frame.loc[at("huge_distance"), s.DISTANCE] = uniform("huge_distance", 500.0, 20000.0)
    frame.loc[at("long_cheap"), s.DISTANCE] = uniform("long_cheap", 50.5, 150.0)
    frame.loc[at("long_cheap"), s.FARE] = uniform("long_cheap", 2.0, 49.0)
    frame.loc[at("short_expensive"), s.DISTANCE] = uniform("short_expensive", 0.1, 9.9)
    frame.loc[at("short_expensive"), s.FARE] = uniform("short_expensive", 300.5, 499.0)
    reversed_ = at("reversed_times")
    pickup, dropoff = frame.loc[reversed_, s.PICKUP].copy(), frame.loc[reversed_, s.DROPOFF].copy()
    frame.loc[reversed_, s.PICKUP], frame.loc[reversed_, s.DROPOFF] = dropoff.values, pickup.values
