"""Protocol modules the runner tests register in place of the real benchmarks, and what every
one of them shares: the configuration fields the runner reads, and a data step that only makes
the folder."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FakeConfig:
    """The fields the runner reads from any benchmark's configuration; a fake adds its own
    options after them, with defaults."""

    data_dir: str
    device: str
    workers: tuple[str, ...] = ()


def generate(data_dir: Path, profile) -> None:
    """A fake needs no data: the folder is enough."""
    Path(data_dir).mkdir(parents=True, exist_ok=True)
