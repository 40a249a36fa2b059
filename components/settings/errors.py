"""Errors raised while reading settings: each names the key and what is allowed."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Problem:
    """One invalid setting: ``key`` is the config key (with a list index where it applies)."""

    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"

    def config_key(self, project: str) -> str:
        """The key as a stack file spells it: a provider's ``ns:key``, the project's ``<project>:key``."""
        return self.key if ":" in self.key.split("[")[0] else f"{project}:{self.key}"


class SettingsError(ValueError):
    """Raised at program start (so at ``pulumi preview``) when any setting is invalid.

    All problems are collected first so that one preview shows every mistake.
    """

    def __init__(self, problems: list[Problem], project: str = "dask-tkg"):
        self.problems = list(problems)
        self.project = project
        lines = "\n".join(f"  - {p.config_key(project)}: {p.message}" for p in self.problems)
        super().__init__(f"{len(self.problems)} invalid setting(s):\n{lines}")


class SettingsReader(Protocol):
    """What the parts of the settings that read their own keys are handed (``build._Reader``):
    each call returns the key's value, default applied, and records a :class:`Problem` for a
    bad one instead of raising, so that one preview names every mistake."""

    problems: list[Problem]

    def __call__(self, key: str) -> Any: ...

    def check(self, key: str, parse: Callable[[Any], Any]) -> Any: ...

    def one_of(self, key: str, *allowed: Any) -> Any: ...

    def at_least(self, key: str, low: int) -> Any: ...
