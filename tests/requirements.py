"""The ``==`` pins of a requirements file, by lower-case distribution name (extras dropped:
``dask[dataframe]==2026.7.1`` pins ``dask``)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

_PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==(\S+)")


def pins_of(lines: Iterable[str]) -> dict[str, str]:
    """The ``==`` pins among ``lines`` (requirement strings or a file's lines)."""
    found = {}
    for line in lines:
        match = _PIN.match(line.strip())
        if match:
            found[match[1].lower()] = match[2]
    return found


def pins(path: Path) -> dict[str, str]:
    return pins_of(path.read_text().splitlines())
