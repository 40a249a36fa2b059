"""The columns of the TLC yellow-taxi trip files, and the typed frame they are read into.

Two schemas occur in 2017-2019: 17 columns (2017-2018) and 18 (2019 adds
``congestion_surcharge``, present but empty in January 2019). The TLC's re-published
Parquet files also carry ``airport_fee`` (null before 2022), so it is known, not
unknown. Every column has an explicit type, both as the TLC writes it (``FILE_TYPES``:
what the generator writes and what a CSV field is parsed as) and in the typed frame
(``RAW_TYPES``). Nothing is inferred, so a money column that happens to be integral in
the first block cannot turn into an integer column ("Mismatched dtypes").

The typed frame holds only the columns the benchmark uses (``USED``): the features,
both candidate targets and the columns the cleansing rules look at. Numbers are float32
from the start (the one cast), datetimes are parsed once into ``timestamp[us]``, and the
store-and-forward flag becomes 1.0 (Y) / 0.0 (N).
"""
from __future__ import annotations

import pyarrow as pa

VENDOR = "VendorID"
PICKUP = "tpep_pickup_datetime"
DROPOFF = "tpep_dropoff_datetime"
PASSENGERS = "passenger_count"
DISTANCE = "trip_distance"
RATE_CODE = "RatecodeID"
STORE_AND_FWD = "store_and_fwd_flag"
PICKUP_ZONE = "PULocationID"
DROPOFF_ZONE = "DOLocationID"
PAYMENT = "payment_type"
FARE = "fare_amount"
EXTRA = "extra"
MTA_TAX = "mta_tax"
TIP = "tip_amount"
TOLLS = "tolls_amount"
IMPROVEMENT = "improvement_surcharge"
TOTAL = "total_amount"
CONGESTION = "congestion_surcharge"
AIRPORT_FEE = "airport_fee"

COLUMNS_2017 = (
    VENDOR, PICKUP, DROPOFF, PASSENGERS, DISTANCE, RATE_CODE, STORE_AND_FWD, PICKUP_ZONE,
    DROPOFF_ZONE, PAYMENT, FARE, EXTRA, MTA_TAX, TIP, TOLLS, IMPROVEMENT, TOTAL,
)
COLUMNS_2019 = (*COLUMNS_2017, CONGESTION)
KNOWN_COLUMNS = (*COLUMNS_2019, AIRPORT_FEE)

_TIMESTAMP = pa.timestamp("us")
_MONEY = pa.float64()

# Each column as the TLC publishes it (the Parquet files' types; CSV text means the same).
FILE_TYPES: dict[str, pa.DataType] = {
    VENDOR: pa.int64(),
    PICKUP: _TIMESTAMP,
    DROPOFF: _TIMESTAMP,
    PASSENGERS: pa.float64(),  # nullable count: the TLC's Parquet stores it as double
    DISTANCE: pa.float64(),
    RATE_CODE: pa.float64(),  # nullable code, double in the TLC's Parquet
    STORE_AND_FWD: pa.string(),  # "Y" | "N" | empty
    PICKUP_ZONE: pa.int64(),
    DROPOFF_ZONE: pa.int64(),
    PAYMENT: pa.int64(),
    FARE: _MONEY,
    EXTRA: _MONEY,
    MTA_TAX: _MONEY,
    TIP: _MONEY,
    TOLLS: _MONEY,
    IMPROVEMENT: _MONEY,
    TOTAL: _MONEY,
    CONGESTION: _MONEY,
    AIRPORT_FEE: _MONEY,
}

USED = (
    VENDOR, PICKUP, DROPOFF, PASSENGERS, DISTANCE, RATE_CODE, STORE_AND_FWD, PICKUP_ZONE,
    DROPOFF_ZONE, FARE, TOTAL,
)
TIMESTAMPS = (PICKUP, DROPOFF)
TARGETS = (TOTAL, FARE)

# The typed frame: float32 numbers, microsecond datetimes, the flag as 1.0/0.0.
RAW_TYPES: dict[str, pa.DataType] = {
    name: (_TIMESTAMP if name in TIMESTAMPS else pa.float32()) for name in USED
}
RAW_SCHEMA = pa.schema([(name, RAW_TYPES[name]) for name in USED])

# How a CSV field of a used column is parsed on the fast path: the flag as a boolean, "Y"
# and "N" exactly (FLAG_TRUE / FLAG_FALSE; empty is null), mapped to 1.0/0.0 by a cast. Any
# other spelling fails the fast path, and the chunk is parsed again as text, where the flag
# is trimmed and anything but Y/N counts as unparsable.
CSV_PARSE_TYPES: dict[str, pa.DataType] = {
    name: (pa.bool_() if name == STORE_AND_FWD else RAW_TYPES[name]) for name in USED
}
FLAG_TRUE, FLAG_FALSE = ["Y"], ["N"]

_CANONICAL = {name.lower(): name for name in KNOWN_COLUMNS}


def canonical(name: str) -> str:
    """The TLC spelling of a header field (``Airport_fee`` -> ``airport_fee``); a name
    outside the known schemas comes back stripped but otherwise unchanged."""
    cleaned = name.strip().strip('"').strip()
    return _CANONICAL.get(cleaned.lower(), cleaned)


def schema_name(columns: tuple[str, ...] | list[str]) -> str:
    """``"17-column"`` (2017-2018) or ``"18-column"`` (2019: ``congestion_surcharge``),
    with ``"+airport_fee"`` when the file also carries that column (the TLC's Parquet)."""
    name = "18-column" if CONGESTION in columns else "17-column"
    return name + "+airport_fee" if AIRPORT_FEE in columns else name


def empty_raw_table() -> pa.Table:
    """A zero-row table of the typed frame's schema (the frame's ``meta``)."""
    return RAW_SCHEMA.empty_table()
