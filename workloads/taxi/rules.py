"""The cleansing rules, as data, and the one function that applies them to a partition.

A rule names the rows it drops with a small predicate tree (``Cmp``, ``Any``, ``All``,
``IsNA``), so the list below reads like the rules themselves, the record can carry them
verbatim, and the same interpreter runs on pandas and cuDF partitions. Rules apply in
order: a row is charged to the first rule that drops it, so each rule's count is the
number of rows it removes from what the rules before it left.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any as AnyType

from . import schema as s

KEPT = 0  # label of a row no rule drops; rule i (0-based) labels its rows i + 1


@dataclass(frozen=True)
class Col:
    """The value of another column, as the right-hand side of a comparison."""

    name: str


@dataclass(frozen=True)
class Cmp:
    column: str
    op: str  # one of _OPS
    value: float | Col


@dataclass(frozen=True)
class IsNA:
    """True where any of ``columns`` is missing."""

    columns: tuple[str, ...]


@dataclass(frozen=True)
class Any:
    terms: tuple[Predicate, ...]


@dataclass(frozen=True)
class All:
    terms: tuple[Predicate, ...]


Predicate = Cmp | IsNA | Any | All


@dataclass(frozen=True)
class Rule:
    name: str
    drops: Predicate  # the rows this rule removes
    description: str
    origin: str  # "seed" (the paper's notebook) or "rapids" (RAPIDS' end-to-end taxi notebook)


_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne}


def _outside(column: str, low: float, high: float, *, high_inclusive: bool = False) -> Any:
    """Rows whose ``column`` is not in (low, high) (or (low, high] when inclusive)."""
    return Any((Cmp(column, "<=", low), Cmp(column, ">" if high_inclusive else ">=", high)))


RULES: tuple[Rule, ...] = (
    Rule("missing_values", IsNA(s.USED), "a used column is empty", "seed"),
    Rule("fare_not_positive", Cmp(s.FARE, "<=", 0.0), "fare_amount <= 0", "seed"),
    Rule("total_not_positive", Cmp(s.TOTAL, "<=", 0.0), "total_amount <= 0", "seed"),
    Rule("passengers_not_positive", Cmp(s.PASSENGERS, "<=", 0.0), "passenger_count <= 0",
         "seed"),
    Rule("fare_out_of_range", _outside(s.FARE, 1.0, 500.0), "fare_amount not in (1, 500)",
         "rapids"),
    Rule("passengers_out_of_range", _outside(s.PASSENGERS, 0.0, 6.0, high_inclusive=True),
         "passenger_count not in (0, 6]", "rapids"),
    Rule("distance_out_of_range", _outside(s.DISTANCE, 0.0, 500.0),
         "trip_distance not in (0, 500)", "rapids"),
    Rule("long_trip_low_fare", All((Cmp(s.DISTANCE, ">", 50.0), Cmp(s.FARE, "<", 50.0))),
         "trip_distance > 50 and fare_amount < 50", "rapids"),
    Rule("short_trip_high_fare", All((Cmp(s.DISTANCE, "<", 10.0), Cmp(s.FARE, ">", 300.0))),
         "trip_distance < 10 and fare_amount > 300", "rapids"),
    Rule("dropoff_not_after_pickup", Cmp(s.DROPOFF, "<=", Col(s.PICKUP)),
         "tpep_dropoff_datetime <= tpep_pickup_datetime", "rapids"),
)
RULE_NAMES = tuple(rule.name for rule in RULES)


def select(names: tuple[str, ...] | list[str]) -> tuple[Rule, ...]:
    """The rules called ``names``, in their canonical order (order decides the counts)."""
    unknown = sorted(set(names) - set(RULE_NAMES))
    if unknown:
        raise ValueError(f"unknown cleansing rule(s) {', '.join(unknown)}; "
                         f"known: {', '.join(RULE_NAMES)}")
    return tuple(rule for rule in RULES if rule.name in set(names))


def evaluate(predicate: Predicate, frame: AnyType) -> AnyType:
    """The boolean Series of rows ``predicate`` holds for (missing values compare False)."""
    return _evaluate(predicate, frame.__getitem__, lambda values: values.isna())


def _evaluate(predicate: Predicate, column: Callable[[str], AnyType],
              isna: Callable[[AnyType], AnyType]) -> AnyType:
    """``predicate`` over the columns ``column(name)`` gives (Series or NumPy arrays, whose
    missing values ``isna`` finds), so pandas, cuDF and plain arrays share one reading."""
    if isinstance(predicate, IsNA):  # column by column: no row-wise reduction needed
        missing = isna(column(predicate.columns[0]))
        for name in predicate.columns[1:]:
            missing = missing | isna(column(name))
        return missing
    if isinstance(predicate, Cmp):
        right = column(predicate.value.name) if isinstance(predicate.value, Col) else predicate.value
        return _OPS[predicate.op](column(predicate.column), right)
    if isinstance(predicate, (Any, All)):
        combine = operator.or_ if isinstance(predicate, Any) else operator.and_
        result = _evaluate(predicate.terms[0], column, isna)
        for term in predicate.terms[1:]:
            result = combine(result, _evaluate(term, column, isna))
        return result
    raise TypeError(f"not a predicate: {predicate!r}")


def label(frame: AnyType, rules: tuple[Rule, ...]) -> AnyType:
    """An int8 Series: ``KEPT`` for rows every rule keeps, else 1 + the index of the first
    rule that drops the row. Works on pandas and cuDF partitions alike.

    A pandas partition is labelled on its columns' NumPy arrays (:func:`label_arrays`):
    each pandas Series operation allocates an indexed Series and checks alignment; the
    arrays give the same labels (NaN and NaT compare False in both) without that cost."""
    import pandas as pd

    if isinstance(frame, pd.DataFrame):
        return pd.Series(label_arrays(frame, rules), index=frame.index, name=s.FARE)
    return _label_series(frame, rules)


def label_arrays(frame: AnyType, rules: tuple[Rule, ...]) -> AnyType:
    """:func:`label` of a pandas frame as an int8 NumPy array."""
    import numpy as np
    import pandas as pd

    columns: dict[str, AnyType] = {}

    def column(name: str) -> AnyType:
        if name not in columns:
            columns[name] = frame[name].to_numpy()
        return columns[name]

    labels: AnyType = np.zeros(len(frame), dtype=np.int8)
    alive: AnyType = np.ones(len(frame), dtype=bool)
    for number, rule in enumerate(rules, start=1):
        hit = _evaluate(rule.drops, column, pd.isna)
        hit &= alive
        labels[hit] = number
        alive &= ~hit
    return labels


def _label_series(frame: AnyType, rules: tuple[Rule, ...]) -> AnyType:
    """:func:`label` with Series operations only (cuDF, and any frame that is not pandas)."""
    alive = frame[s.FARE].isna() | frame[s.FARE].notna()  # all True, on the frame's index
    # (built from a column so the same code makes a pandas or a cuDF Series)
    labels = alive.astype("int8") * 0
    for number, rule in enumerate(rules, start=1):
        hit = evaluate(rule.drops, frame) & alive
        labels = labels + hit.astype("int8") * number
        alive = alive & ~hit
    return labels.astype("int8")


def describe(rules: tuple[Rule, ...]) -> list[dict[str, str]]:
    """The rules as plain records (for the results record and ``--help``)."""
    return [{"name": r.name, "drops": r.description, "origin": r.origin} for r in rules]
