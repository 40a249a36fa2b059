"""The ``==`` pins of a requirements file, by lower-case distribution name (extras dropped:
``dask[dataframe]==2026.7.1`` pins ``dask``)."""
from __future__ import annotations

import re
from pathlib import Path

_PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==(\S+)")


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        match = _PIN.match(line.strip())
        if match:
            found[match[1].lower()] = match[2]
    return found
