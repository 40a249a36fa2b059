"""Errors raised while reading settings: each names the key and what is allowed."""
from __future__ import annotations

from dataclasses import dataclass


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
