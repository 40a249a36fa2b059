"""Model features of a cleansed partition (pandas or cuDF), all float32.

From the pickup time: hour, weekday (Monday = 0), minute, week-hour (weekday * 24 + hour)
and month; the trip's duration in minutes; and the file's own columns: distance,
passenger count, rate code, pickup/dropoff location ids, vendor and the
store-and-forward flag (already 1.0/0.0 in the typed frame).
"""
from __future__ import annotations

from typing import Any

from . import schema as s

DERIVED = ("pickup_hour", "pickup_weekday", "pickup_minute", "pickup_weekhour",
           "pickup_month", "duration_minutes")
COPIED = (s.DISTANCE, s.PASSENGERS, s.RATE_CODE, s.PICKUP_ZONE, s.DROPOFF_ZONE, s.VENDOR,
          s.STORE_AND_FWD)
FEATURES = DERIVED + COPIED

_MICROSECONDS_PER_MINUTE = 60_000_000
_EPOCH_WEEKDAY = 3  # 1970-01-01 was a Thursday (Monday = 0)


def make(frame: Any, target: str, keep: Any = None) -> Any:
    """The feature columns and ``target`` of a partition of the typed frame (of its rows
    where the boolean mask ``keep`` is true, when given).

    A pandas partition is computed on its columns' NumPy arrays, the mask applied once per
    column and the frame built once (:func:`_make_arrays`: the same values, dtypes, column
    order and index as the Series path below, at a fraction of its cost); others (cuDF)
    take the Series path.

    Datetimes are ``timestamp[us]`` (``schema.RAW_TYPES``): minute, hour and weekday come
    from the microseconds by integer division (one pass each, where ``.dt`` fields cost
    several times that), the month from ``.dt``; the duration is the difference in
    microseconds. Integer arithmetic, ``.dt`` and ``astype`` behave the same in cuDF.
    """
    import pandas as pd

    if target not in s.TARGETS:
        raise ValueError(f"target must be one of {s.TARGETS}, got {target!r}")
    if isinstance(frame, pd.DataFrame):
        return _make_arrays(frame, target, keep)
    if keep is not None:
        frame = frame[keep]
    pickup = frame[s.PICKUP]
    minutes = pickup.astype("int64") // _MICROSECONDS_PER_MINUTE  # floor: right before 1970 too
    hours = minutes // 60
    hour = (hours % 24).astype("float32")
    weekday = ((hours // 24 + _EPOCH_WEEKDAY) % 7).astype("float32")
    elapsed = (frame[s.DROPOFF] - pickup).astype("int64")
    columns = {
        "pickup_hour": hour,
        "pickup_weekday": weekday,
        "pickup_minute": (minutes % 60).astype("float32"),
        "pickup_weekhour": weekday * 24 + hour,
        "pickup_month": pickup.dt.month.astype("float32"),
        "duration_minutes": (elapsed / _MICROSECONDS_PER_MINUTE).astype("float32"),
    }
    out = frame[[*COPIED, target]].astype("float32")
    for name in reversed(DERIVED):
        out.insert(0, name, columns[name])
    return out


def _make_arrays(frame: Any, target: str, keep: Any) -> Any:
    """:func:`make` of a pandas partition, on NumPy arrays."""
    import numpy as np
    import pandas as pd

    # the kept rows' positions, found once: a boolean index would search the mask again
    # for every column
    rows = None if keep is None else np.flatnonzero(np.asarray(keep, dtype=bool))

    def column(name: str) -> np.ndarray:
        values = frame[name].to_numpy()
        return values if rows is None else values.take(rows)

    pickup = column(s.PICKUP)
    micros: Any = pickup.view("int64")  # numpy, untyped here: the arithmetic below is element-wise
    minutes = micros // _MICROSECONDS_PER_MINUTE
    hours = minutes // 60
    hour = (hours % 24).astype("float32")
    weekday = ((hours // 24 + _EPOCH_WEEKDAY) % 7).astype("float32")
    elapsed = column(s.DROPOFF).view("int64") - micros
    columns = {
        "pickup_hour": hour,
        "pickup_weekday": weekday,
        "pickup_minute": (minutes % 60).astype("float32"),
        "pickup_weekhour": weekday * 24 + hour,
        "pickup_month": (pickup.astype("datetime64[M]").view("int64") % 12 + 1).astype("float32"),
        "duration_minutes": (elapsed / _MICROSECONDS_PER_MINUTE).astype("float32"),
    }
    for name in (*COPIED, target):
        columns[name] = column(name).astype("float32", copy=False)
    index = frame.index if rows is None else frame.index.take(rows)
    return pd.DataFrame(columns, index=index, copy=False)  # the arrays are new: no second copy
