"""Figures: a ratio of two measurements taken side by side in one run, and its goal.

A figure divides a measurement A (what the workload achieves) by a measurement B (its
physical limit, or the plain way of doing the same work); a figure without B (an absolute
goal such as images/s) is A's median itself. Each is repeated, alternating
A and B, so that both see the same machine load; the figure's ``value`` is the median of
the per-repetition ratios ``A_i / B_i`` (each pair measured back to back) and each
measurement's ``value`` is the median of its own samples, so ``value`` can differ a
little from the quotient of the two medians (``ratio_of_medians`` gives that too).

``spread`` is the range (min, max) of the per-repetition ratios: how far one pair can
be from the median on this machine (stored and printed with the value).

``holds`` is True or False once measured, None when the figure cannot be measured
(``error`` says why). A missed goal is never dropped: it is in the JSON with
``holds: false`` and printed as MISSED.
"""
from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_OPS = {">=": operator.ge, "<=": operator.le}


@dataclass(frozen=True)
class Goal:
    """``op`` (``>=`` or ``<=``) and the threshold the figure's value is held to."""

    op: str
    threshold: float

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"goal op must be one of {tuple(_OPS)}, got {self.op!r}")

    def holds(self, value: float | None) -> bool | None:
        if value is None or not math.isfinite(value):
            return None
        return bool(_OPS[self.op](value, self.threshold))

    def __str__(self) -> str:
        return f"{self.op} {self.threshold:g}"

    @classmethod
    def parse(cls, text: str) -> Goal:
        """``">= 0.85"`` -> Goal(">=", 0.85)."""
        op, _, number = text.strip().partition(" ")
        return cls(op, float(number))


@dataclass
class Measurement:
    """One side of a figure: its samples (one per repetition) and their median."""

    name: str
    unit: str
    samples: list[float] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def value(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": _round(self.value), "unit": self.unit,
                "samples": [_round(s) for s in self.samples], **self.details}


@dataclass
class Check:
    """A further condition a figure must meet (e.g. top-1 agreement next to a speed-up)."""

    name: str
    value: float | None
    goal: Goal

    @property
    def holds(self) -> bool | None:
        return self.goal.holds(self.value)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": _round(self.value), "goal": str(self.goal),
                "holds": self.holds}


@dataclass
class Figure:
    """``numerator / denominator`` (or ``numerator`` alone) against ``goal``."""

    name: str
    title: str
    goal: Goal
    numerator: Measurement
    denominator: Measurement | None
    checks: list[Check] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ratios(self) -> list[float]:
        if self.denominator is None:
            return list(self.numerator.samples)
        return paired_ratios(self.numerator.samples, self.denominator.samples)

    @property
    def value(self) -> float | None:
        if self.denominator is None:
            return self.numerator.value
        return median_ratio(self.numerator.samples, self.denominator.samples)

    @property
    def spread(self) -> tuple[float, float] | None:
        """(min, max) of the per-repetition ratios; None before any pair is measured."""
        ratios = self.ratios
        return (min(ratios), max(ratios)) if ratios else None

    @property
    def holds(self) -> bool | None:
        """The goal and every check; None while anything is unmeasured."""
        if self.error is not None:
            return None
        verdicts = [self.goal.holds(self.value)] + [check.holds for check in self.checks]
        if any(v is False for v in verdicts):
            return False
        if any(v is None for v in verdicts):
            return None
        return True

    def as_dict(self) -> dict[str, Any]:
        num = self.numerator.value
        den = self.denominator.value if self.denominator is not None else None
        return {
            "name": self.name,
            "title": self.title,
            "value": _round(self.value),
            "goal": str(self.goal),
            "holds": self.holds,
            "numerator": self.numerator.as_dict(),
            "denominator": self.denominator.as_dict() if self.denominator is not None else None,
            "ratios": [_round(r) for r in self.ratios],
            "spread": [_round(v) for v in self.spread] if self.spread else None,
            "ratio_of_medians": _round(num / den) if num is not None and den else None,
            "checks": [check.as_dict() for check in self.checks],
            "notes": self.notes,
            "error": self.error,
        }


def paired_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """``a_i / b_i`` for each repetition that has both sides and a non-zero ``b_i``."""
    return [a / b for a, b in zip(numerators, denominators, strict=False) if b]  # unpaired tails dropped


def median_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    ratios = paired_ratios(numerators, denominators)
    return statistics.median(ratios) if ratios else None


def verdict(holds: bool | None) -> str:
    return {True: "holds", False: "MISSED", None: "not measured"}[holds]


def render(figures: Sequence[Figure]) -> str:
    """A plain-text table: figure, value, goal, verdict, and what is divided by what."""
    rows = [("figure", "value", "spread", "goal", "verdict", "numerator / denominator (medians)")]
    for fig in figures:
        num, den = fig.numerator, fig.denominator
        if den is None:
            parts = f"{num.name} {short(num.value)} {num.unit}"
        elif num.unit == den.unit:
            parts = f"{short(num.value)} / {short(den.value)} {num.unit}"
        else:
            parts = f"{short(num.value)} {num.unit} / {short(den.value)} {den.unit}"
        extra = "".join(f"; {c.name} {short(c.value)} ({c.goal}, {verdict(c.holds)})" for c in fig.checks)
        spread = f"{short(fig.spread[0])}-{short(fig.spread[1])}" if fig.spread else "-"
        rows.append((fig.name, short(fig.value), spread, str(fig.goal), verdict(fig.holds),
                     (f"error: {fig.error}" if fig.error else parts + extra)))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True)) + "  " + row[5]
             for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    missed = [f.name for f in figures if f.holds is False]
    unmeasured = [f.name for f in figures if f.holds is None]
    lines.append("")
    lines.append(f"{sum(f.holds is True for f in figures)} of {len(figures)} goals hold"
                 + (f"; MISSED: {', '.join(missed)}" if missed else "")
                 + (f"; not measured: {', '.join(unmeasured)}" if unmeasured else ""))
    return "\n".join(lines)


def _round(value: float | None, digits: int = 4) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}") if abs(value) < 1e4 else round(value, 1)


def short(value: float | None) -> str:
    """A value as the tables print it: three significant digits, or whole with thousands
    separators from 10,000 up."""
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 1e4 else f"{value:,.0f}"
