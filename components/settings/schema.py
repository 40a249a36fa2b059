"""The settings' schema: the ``config:`` block of ``Pulumi.yaml``, read as data.

``Pulumi.yaml`` is the one place a setting's type, default and description are written.
The Pulumi CLI applies those defaults itself; the program reads the same block so that it
behaves identically under unit-test mocks (where the CLI is absent) and so that no default
is written twice.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from components.settings.errors import Problem

PROJECT_FILE = Path(__file__).resolve().parents[2] / "Pulumi.yaml"


@dataclass(frozen=True)
class Declaration:
    """One ``config:`` entry of ``Pulumi.yaml``."""

    key: str
    type: str
    description: str
    secret: bool = False
    has_default: bool = False
    default: Any = None
    item_type: str | None = None


@cache
def project() -> tuple[str, dict[str, Declaration]]:
    """Return the project name and its declared settings, keyed by setting name."""
    doc = yaml.safe_load(PROJECT_FILE.read_text())
    decls: dict[str, Declaration] = {}
    for key, spec in (doc.get("config") or {}).items():
        decls[key] = Declaration(
            key=key,
            type=spec["type"],
            description=spec.get("description", ""),
            secret=bool(spec.get("secret", False)),
            has_default="default" in spec,
            default=spec.get("default"),
            item_type=(spec.get("items") or {}).get("type"),
        )
    return doc["name"], decls


def default(key: str) -> Any:
    """The default ``Pulumi.yaml`` declares for ``key`` (the current platform's value)."""
    return project()[1][key].default


def coerce(decl: Declaration, raw: Any, problems: list[Problem]) -> Any:
    """Turn a raw config value (Pulumi stores strings; tests may pass Python values)
    into the declared type, or record a problem naming the key and returning None."""
    kind = decl.type
    if kind == "string":
        if isinstance(raw, (dict, list)):
            problems.append(Problem(decl.key, f"must be a string, got {type(raw).__name__}"))
            return None
        return str(raw)
    if kind == "integer":
        if isinstance(raw, bool):
            problems.append(Problem(decl.key, f"must be an integer, got {raw!r}"))
            return None
        try:
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError
            return int(str(raw).strip()) if not isinstance(raw, (int, float)) else int(raw)
        except ValueError:
            problems.append(Problem(decl.key, f"must be an integer, got {raw!r}"))
            return None
    if kind == "boolean":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        problems.append(Problem(decl.key, f"must be true or false, got {raw!r}"))
        return None
    if kind == "array":
        value = raw
        if isinstance(raw, str):
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                problems.append(Problem(decl.key, f"must be a list (JSON array), got {raw!r}"))
                return None
        if not isinstance(value, list):
            problems.append(Problem(decl.key, f"must be a list, got {type(value).__name__}"))
            return None
        if decl.item_type == "string":
            bad = [i for i, item in enumerate(value) if not isinstance(item, str)]
            if bad:
                problems.append(Problem(f"{decl.key}[{bad[0]}]", "must be a string"))
                return None
            return tuple(value)
        return tuple(value)
    raise AssertionError(f"Pulumi.yaml declares {decl.key} with unsupported type {kind!r}")
