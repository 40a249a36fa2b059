"""What the report tests share beyond fixtures: the committed fixture results, PNG reading, CPU burn."""
from __future__ import annotations

import struct
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BASELINE = FIXTURES / "baseline"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (which must come first)."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    assert head[12:16] == b"IHDR", f"{path.name}: first chunk is not IHDR"
    return struct.unpack(">II", head[16:24])


def burn(seconds: float) -> int:
    """Keep one core busy for ``seconds`` (pure Python: holds the GIL, so exactly one core)."""
    import time

    end, count = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        count += 1
    return count


def burn_everywhere(client, seconds: float) -> None:
    """``burn`` once on each worker, at the same time."""
    futures = [client.submit(burn, seconds, workers=[address], pure=False) for address in client.nthreads()]
    client.gather(futures)


def figures_kept(monkeypatch) -> dict:
    """Every figure the report saves from now on, by file name; each is still saved as it always is."""
    from workloads.report import figures

    made: dict = {}
    save = figures._save

    def keep(figure, path: Path) -> Path:
        made[path.name] = figure
        return save(figure, path)

    monkeypatch.setattr(figures, "_save", keep)
    return made
