"""A minimal protocol module: one task per run; ``--fake-mode`` makes it fail or be
interrupted after its first phase."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.workloads.fakes import FakeConfig, generate  # noqa: F401 - generate: the protocol's data step

NAME = "tiny"
REQUIRED_PACKAGES: tuple[str, ...] = ("numpy",)
HEADLINE_METRICS = ("value",)


@dataclass(frozen=True)
class Config(FakeConfig):
    mode: str = "ok"


def add_arguments(parser) -> None:
    parser.add_argument("--fake-mode", choices=("ok", "fail", "interrupt"), default="ok")


def make_config(args, profile, data_dir: Path, device: str) -> Config:
    return Config(str(data_dir), device, mode=args.fake_mode)


def _square(x):
    return x * x


def run(client, config: Config, timer) -> dict:
    with timer.phase("work"):
        value = client.submit(_square, 7, workers=list(config.workers) or None, pure=False).result()
    with timer.phase("after"):
        if config.mode == "fail":
            raise RuntimeError("boom")
        if config.mode == "interrupt":
            raise KeyboardInterrupt
    return {"value": value, "workers_seen": len(config.workers)}
