"""Result files: a JSON list of figure records, each with the facts of the run it came from.

The suite and ``gpu`` write under ``--output`` (default ``results/bench`` in the current
directory, inside the ``results/`` the runner writes to and git ignores); the files the
documentation quotes are committed in ``docs/results/`` (``make bench`` writes there). A
file is written whole or not at all (a ``.partial`` file renamed over it), so a run cut
short never leaves half a list.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.figures import Figure

DEFAULT_OUTPUT = Path("results") / "bench"


class ResultFileError(ValueError):
    """A file that is not a result file (a JSON list of figure records)."""


def utc_now() -> str:
    """The time now, UTC, as the runs' facts record it."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def file_stamp() -> str:
    """The time now, UTC, as result file names carry it (sorts as it reads)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def package_versions(packages: Sequence[str]) -> dict[str, str | None]:
    """{package: its installed version, None where it is not installed}, for a run's facts."""
    from importlib.metadata import version

    versions: dict[str, str | None] = {}
    for package in packages:
        try:
            versions[package] = version(package)
        except Exception:
            versions[package] = None
    return versions


def save(path: Path, figures: Sequence[Figure], facts: dict[str, Any]) -> None:
    """Write ``figures`` to ``path``, each record with the run's ``facts`` (atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [{**figure.as_dict(), "run": facts} for figure in figures]
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(records, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(partial, path)


def write(figures: Sequence[Figure], facts: dict[str, Any], output: Path, prefix: str = "") -> Path:
    """``<output>/<prefix><UTC stamp>.json``, never overwriting a file already there."""
    stamp = prefix + file_stamp()
    path = output / f"{stamp}.json"
    number = 1
    while path.exists():
        number += 1
        path = output / f"{stamp}-{number}.json"
    save(path, figures, facts)
    return path


def load(path: str | Path) -> dict[str, dict[str, Any]]:
    """{figure name: its record} of one result file."""
    path = Path(path)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such file") from None
    except json.JSONDecodeError as error:
        raise ResultFileError(f"{path}: not JSON ({error})") from None
    if not isinstance(records, list):
        raise ResultFileError(f"{path}: expected a list of figures, got {type(records).__name__}")
    figures = {}
    for index, record in enumerate(records):
        if not isinstance(record, dict) or not {"name", "value", "goal", "holds"} <= set(record):
            raise ResultFileError(f"{path}: item {index} is not a figure record (name, value, goal, holds)")
        figures[record["name"]] = record
    return figures
