"""Evaluate a ``pulumi.com/waitFor`` expression on an object, as ``kubectl wait --for``
does: ``jsonpath={.a.b}=value`` or ``condition=Type[=Status]``. Used to check that the
readiness the program waits for is a field and value the real schema carries."""
from __future__ import annotations

import re
from typing import Any

_JSONPATH = re.compile(r"^jsonpath=\{\.([A-Za-z0-9_.]+)\}(?:=(.*))?$")
_CONDITION = re.compile(r"^condition=([A-Za-z]+)(?:=(\w+))?$")


def satisfied(obj: dict[str, Any], expression: str) -> bool:
    match = _JSONPATH.match(expression)
    if match:
        value: Any = obj
        for part in match.group(1).split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value is not None if match.group(2) is None else str(value) == match.group(2)
    match = _CONDITION.match(expression)
    if match:
        wanted = (match.group(2) or "True").lower()
        conditions = (obj.get("status") or {}).get("conditions") or []
        return any(c.get("type") == match.group(1) and str(c.get("status")).lower() == wanted for c in conditions)
    raise ValueError(f"unsupported waitFor expression {expression!r}")
