"""A protocol module for the resume tests: one task per run, and a switch (this process:
``run`` executes in the runner's process) that fails the next runs without changing
the configuration."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.workloads.fakes import FakeConfig, generate  # noqa: F401 - generate: the protocol's data step

NAME = "flaky"
REQUIRED_PACKAGES: tuple[str, ...] = ("numpy",)
HEADLINE_METRICS = ("value",)
RUNS: list[int] = []  # worker counts of the runs made, in order


@dataclass
class Switch:
    fail_next: int = 0  # runs left to fail


SWITCH = Switch()


@dataclass(frozen=True)
class Config(FakeConfig):
    rounds: int = 3


def add_arguments(parser) -> None:
    parser.add_argument("--flaky-rounds", type=int, default=3)


def make_config(args, profile, data_dir: Path, device: str) -> Config:
    return Config(str(data_dir), device, rounds=args.flaky_rounds)


def _cube(x):
    return x ** 3


def run(client, config: Config, timer) -> dict:
    with timer.phase("work"):
        value = client.submit(_cube, config.rounds, workers=list(config.workers) or None, pure=False).result()
    RUNS.append(len(config.workers) or len(client.nthreads()))
    if SWITCH.fail_next:
        SWITCH.fail_next -= 1
        raise RuntimeError("flaky failure")
    return {"value": value}
