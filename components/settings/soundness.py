"""Judging the rules that can be judged, when some settings are already refused.

A refused setting leaves the part of ``Settings`` it belongs to unsound: its value is missing
or a list lacks the refused entry. A cross-field rule that reads only sound parts gives the
same answer now as once the refused setting is fixed, so it is judged in the same round and
one preview names every mistake. A rule that reads an unsound part waits: its answer would
follow from the refused value, not from the stack. ``Unsound`` stands in for such a part and
stops any rule that reads it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from components.settings.errors import Problem


class UnsoundPart(Exception):
    """A rule read a part of the settings that holds a refused value."""

    def __init__(self, part: str):
        super().__init__(f"the settings' {part} hold a refused value")
        self.part = part


class Unsound:
    """In place of an unsound part: reading, iterating, comparing or testing it stops the rule."""

    __slots__ = ("part",)

    def __init__(self, part: str):
        object.__setattr__(self, "part", part)

    def _stop(self, *_: object) -> NoReturn:
        raise UnsoundPart(self.part)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._stop()

    __iter__ = __len__ = __bool__ = __contains__ = __getitem__ = __eq__ = __ne__ = _stop
    __lt__ = __le__ = __gt__ = __ge__ = __hash__ = _stop

    def __repr__(self) -> str:
        return f"Unsound({self.part!r})"


Rule = Callable[[Any], Iterable[Problem]]


def judged(rules: Iterable[Rule], s: Any) -> tuple[list[Problem], int]:
    """The problems of every rule that reads only sound parts of ``s``, and how many rules wait."""
    problems: list[Problem] = []
    waiting = 0
    for rule in rules:
        try:
            problems.extend(list(rule(s)))
        except UnsoundPart:
            waiting += 1
    return problems, waiting
