"""A minimal protocol module: one task per run; ``--fake-mode`` makes it fail or be
interrupted after its first phase."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NAME = "tiny"
REQUIRED_PACKAGES: tuple[str, ...] = ("numpy",)
HEADLINE_METRICS = ("value",)


@dataclass(frozen=True)
class Config:
    mode: str
    data_dir: str
    device: str
    workers: tuple[str, ...] = ()


def add_arguments(parser) -> None:
    parser.add_argument("--fake-mode", choices=("ok", "fail", "interrupt"), default="ok")


def make_config(args, profile, data_dir: Path, device: str) -> Config:
    return Config(args.fake_mode, str(data_dir), device)


def generate(data_dir: Path, profile) -> None:
    Path(data_dir).mkdir(parents=True, exist_ok=True)


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
