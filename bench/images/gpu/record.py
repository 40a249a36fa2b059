"""The GPU run's record: the figures measured so far, the run's facts, the time left, and
the JSON they are written to after each section (so a run cut short keeps what it has)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import results
from bench.figures import Figure, Goal, Measurement

E2E_GOAL, LIMIT_GOAL = 10_000, 0.8  # end to end images/s; end to end over min(model-only, decode-only)


@dataclass
class Run:
    """The figures measured so far, the run's facts, and the JSON they are written to."""

    path: Path
    facts: dict[str, Any]
    deadline: float
    figures: list[Figure] = field(default_factory=list)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def fits(self, seconds: float, what: str) -> bool:
        if self.left() >= seconds:
            return True
        print(f"bench.gpu: skipping {what}: about {seconds:.0f} s needed, {max(0.0, self.left()):.0f} s left",
              flush=True)
        return False

    def add(self, *figures: Figure) -> None:
        self.figures.extend(figures)
        self.save()

    def save(self) -> None:
        results.save(self.path, self.figures, self.facts)


def skipped(name: str, title: str, goal: Goal, reason: str) -> Figure:
    """A figure that is not measured, with the reason as its error (never silently dropped)."""
    return Figure(name, title, goal, Measurement(name, "img/s"), None, error=reason)
