"""The settings reader's protocol: what the parts of the settings that read their own keys are
handed (``build._Reader`` implements it). Apart from ``errors`` and ``records``, which it names,
so neither imports the other."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from components.settings.errors import Problem
from components.settings.records import Field


class SettingsReader(Protocol):
    """What the parts of the settings that read their own keys are handed (``build._Reader``):
    each call returns the key's value, default applied, and records a :class:`Problem` for a
    bad one instead of raising, so that one preview names every mistake."""

    problems: list[Problem]

    def __call__(self, key: str) -> Any: ...

    def check(self, key: str, parse: Callable[[Any], Any]) -> Any: ...

    def one_of(self, key: str, *allowed: Any) -> Any: ...

    def at_least(self, key: str, low: int) -> Any: ...

    def records(self, key: str, fields: dict[str, Field]) -> list[dict[str, Any]]: ...
