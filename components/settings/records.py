"""Records written as ``key=value,key=value`` strings in array settings.

Pulumi's project config has no object type, so a node pool or a storage policy is one
string per list item. This module turns such an item into a dict of typed fields and
records a problem naming ``<setting>[<index>].<field>`` for anything wrong.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from components.settings.errors import Problem


@dataclass(frozen=True)
class Field:
    """A field of a record: its parser (raises ValueError with the allowed values) and
    whether it must be present."""

    parse: Callable[[str], Any]
    required: bool = True
    default: Any = None


def parse_record(
    setting: str, index: int, text: str, fields: dict[str, Field], problems: list[Problem]
) -> dict[str, Any] | None:
    """Parse one item; returns None (and records problems) when it is unusable."""
    where = f"{setting}[{index}]"
    raw: dict[str, str] = {}
    ok = True
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if "=" not in part:
            problems.append(Problem(where, f"expected key=value, got {part!r} in {text!r}"))
            ok = False
            continue
        key, value = (s.strip() for s in part.split("=", 1))
        if key not in fields:
            allowed = ", ".join(fields)
            problems.append(Problem(f"{where}.{key}", f"unknown field; allowed: {allowed}"))
            ok = False
            continue
        if key in raw:
            problems.append(Problem(f"{where}.{key}", "given twice"))
            ok = False
        raw[key] = value
    out: dict[str, Any] = {}
    for key, spec in fields.items():
        if key not in raw:
            if spec.required:
                problems.append(Problem(f"{where}.{key}", "is required"))
                ok = False
            else:
                out[key] = spec.default
            continue
        try:
            out[key] = spec.parse(raw[key])
        except ValueError as exc:
            problems.append(Problem(f"{where}.{key}", f"{exc} (got {raw[key]!r})"))
            ok = False
    return out if ok else None


# --- field parsers: each raises ValueError saying what is allowed ------------------------


def integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError("must be an integer") from None
        if low is not None and value < low:
            raise ValueError(f"must be >= {low}")
        if high is not None and value > high:
            raise ValueError(f"must be <= {high}")
        return value

    return parse


def boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError("must be true or false")
    return lowered == "true"


def choice(*allowed: str, aliases: dict[str, str] | None = None) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if aliases and text in aliases:
            return aliases[text]
        if text not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return text

    return parse


def text(value: str) -> str:
    if not value:
        raise ValueError("must not be empty")
    return value
