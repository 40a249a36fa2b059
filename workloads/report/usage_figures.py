"""The usage report's PNG figures, in the run report's style (its canvas, size and tick labels):
GPU-hours held and busy per person, and GPU-hours held per week stacked by person.

As in :mod:`workloads.report.figures`, a caption says only what its figure draws: the marks
drawn only sometimes (a person whose busy time was not measured) are decided by one
predicate that both the drawing and the caption ask."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .figures import DEVICE_COLOURS, TickFormatter, _figure, _save
from .usage_data import HOUR, Totals

GPU = DEVICE_COLOURS["cuda"]
NOT_MEASURED = "not measured"


def _unmeasured(people: list[Totals]) -> list[str]:
    """The people none of whose runs measured busy time: their bars have no busy part."""
    return [person.key for person in people if person.busy is None]


def held_busy_caption(people: list[Totals]) -> str:
    parts = ["Light: GPU-hours held (requested by the person's worker pods, from scheduled to deleted);"
             " dark: GPU-hours busy (GPU utilisation × time) of the runs that measured it, with its share of"
             " what those runs held."]
    unmeasured = _unmeasured(people)
    if unmeasured:
        parts.append(f"Busy time {NOT_MEASURED} for {', '.join(unmeasured)}: held only.")
    return " ".join(parts)


def held_busy(people: list[Totals], path: Path) -> Path | None:
    """One row per person: GPU-hours held, and busy over it where measured."""
    if not people:
        return None
    figure, (axes,) = _figure(1.6 + 0.6 * len(people))
    rows = list(range(len(people)))
    axes.barh(rows, [p.held / HOUR for p in people], color=GPU, alpha=0.3, label="held")
    measured = [(row, p) for row, p in zip(rows, people, strict=True) if p.busy is not None]
    axes.barh([row for row, _ in measured], [(p.busy or 0.0) / HOUR for _, p in measured], height=0.4,
              color=GPU, label="busy")
    for row, person in zip(rows, people, strict=True):
        _annotate(axes, row, person)
    axes.set_yticks(rows, [p.key for p in people])
    axes.invert_yaxis()
    axes.set_xlim(0, max(p.held / HOUR for p in people) * 1.45 or 1.0)
    axes.xaxis.set_major_formatter(TickFormatter())
    axes.set_xlabel("GPU-hours")
    axes.set_title("GPU-hours held and busy per person")
    axes.grid(True, axis="x", alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    return _save(figure, path)


def _annotate(axes: Any, row: int, person: Totals) -> None:
    ratio = person.ratio
    busy = NOT_MEASURED if person.busy is None else f"busy {person.busy / HOUR:.2f}" + (
        f" ({ratio:.0%})" if ratio is not None else "")
    axes.annotate(f"held {person.held / HOUR:.2f} · {busy}", (person.held / HOUR, row), xytext=(4, 0),
                  textcoords="offset points", va="center", fontsize=8)


WEEKLY_CAPTION = ("GPU-hours held per ISO week of each run's start (UTC), one colour per person, stacked; the"
                  " week's total above its bar.")


def weekly(week_people: list[tuple[str, Totals]], path: Path) -> Path | None:
    """One bar per week: the GPU-hours held, stacked by person."""
    if not week_people:
        return None
    weeks = list(dict.fromkeys(week for week, _ in week_people))
    people = sorted({person.key for _, person in week_people})
    figure, (axes,) = _figure(4.4)
    bottoms = [0.0] * len(weeks)
    for i, name in enumerate(people):
        heights = [sum(p.held / HOUR for w, p in week_people if w == week and p.key == name) for week in weeks]
        axes.bar(weeks, heights, bottom=bottoms, color=f"C{i % 10}", edgecolor="white", label=name)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for x, height in enumerate(bottoms):
        axes.annotate(f"{height:.2f}", (x, height), xytext=(0, 4), textcoords="offset points", ha="center",
                      fontsize=8)
    axes.set_ylim(0, max(bottoms) * 1.15 or 1.0)
    axes.yaxis.set_major_formatter(TickFormatter())
    axes.set_ylabel("GPU-hours held")
    axes.set_title("GPU-hours held per week, by person")
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend(fontsize=8, loc="upper left")
    return _save(figure, path)
