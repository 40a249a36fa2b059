"""The third benchmark's protocol module: sums the squares of numbers written under
``<data root>/numbers/`` on the cluster, chunk by chunk."""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workloads.runs import benchmarks

NAME = "third"
REQUIRED_PACKAGES: tuple[str, ...] = ("numpy",)
HEADLINE_METRICS = ("numbers_per_second", "error")
BENCH = "tests.workloads.third_benchmark.bench"
DATA_FILE = "numbers/values.txt"
DATA = benchmarks.Data("numbers", "numbers/values.txt (one integer a line)",
                       (benchmarks.Source("numbers", DATA_FILE, "the integers to square"),))
REPORT = benchmarks.Report(
    "Sum of squares", throughput={"numbers_per_second": "numbers/s"},
    key_metrics=("numbers_per_second", "numbers", "error"), scaling="numbers_per_second",
    scaling_caption="Numbers squared per second, by worker count.",
    quality=benchmarks.Quality("error", "Error (absolute)", "Sum of squares: error against the closed form",
                               "Absolute error of the sum against n(n+1)(2n+1)/6.", higher_is_better=False))
PREFLIGHT_FACT = "third_checked"
REFUSE = ""  # a test sets it: the preflight then refuses every worker with it


@dataclass(frozen=True)
class Config:
    data_dir: str
    chunk: int
    device: str
    workers: tuple[str, ...] = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("third benchmark")
    group.add_argument("--third-chunk", type=int, metavar="N", help="numbers per task (default: profile)")


def make_config(args: argparse.Namespace, profile: dict[str, Any], data_dir: Path, device: str) -> Config:
    chunk = getattr(args, "third_chunk", None) or profile.get("chunk", 100)
    return Config(str(data_dir), int(chunk), device)


def generate(data_dir: Path, profile: dict[str, Any]) -> None:
    path = Path(data_dir) / DATA_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{i}\n" for i in range(1, int(profile.get("numbers", 400)) + 1)))


def preflight(client: Any, workers: list[str], facts: dict[str, dict[str, Any]], device: str) -> dict[str, list[str]]:
    """Marks each worker's facts with the resolved device; refuses them all when told to."""
    for address in workers:
        facts.setdefault(address, {})[PREFLIGHT_FACT] = device
    return {address: [REFUSE] for address in workers} if REFUSE else {}


def _squares(values: list[int]) -> int:
    return sum(v * v for v in values)


def run(client: Any, config: Config, timer: Any) -> dict[str, Any]:
    with timer.phase("read"):
        values = [int(line) for line in (Path(config.data_dir) / DATA_FILE).read_text().split()]
    started = time.perf_counter()
    with timer.phase("square"):
        chunks = [values[i:i + config.chunk] for i in range(0, len(values), config.chunk)]
        futures = client.map(_squares, chunks, workers=list(config.workers) or None, pure=False)
        total = sum(client.gather(futures))
    seconds = max(time.perf_counter() - started, 1e-9)
    n = len(values)
    return {"numbers": n, "sum": total, "error": abs(total - n * (n + 1) * (2 * n + 1) // 6),
            "numbers_per_second": n / seconds}
