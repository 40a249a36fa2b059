"""The taxi benchmark's settings: one frozen config, from defaults < profile < command line.

Every default is written once, here, as a dataclass field. ``profiles.yaml`` names the
data sizes (and any setting) per profile; a command-line flag beats both.
"""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import backends, rules
from . import schema as s

PROFILES_FILE = Path(__file__).with_name("profiles.yaml")
DEVICES = ("cpu", "cuda")
RANKS = ("per-worker", "per-host")


@dataclass(frozen=True)
class XGBoostSettings:
    """Booster parameters; the defaults are the RAPIDS end-to-end taxi notebook's."""

    num_boost_round: int = 100
    learning_rate: float = 0.3
    max_depth: int = 8
    subsample: float = 0.6
    gamma: float = 1.0
    seed: int = 0
    objective: str = "reg:squarederror"
    # which workers become XGBoost ranks: every worker, or one per host with the threads of
    # all that host's workers (workloads.taxi.training.rank_workers)
    ranks: str = "per-worker"

    def __post_init__(self) -> None:
        if self.ranks not in RANKS:
            raise ValueError(f"--xgb-ranks must be one of {RANKS}, got {self.ranks!r}")


@dataclass(frozen=True)
class Config:
    data_dir: str
    device: str  # the runner's resolved device: cpu | cuda (XGBoost's device)
    dataframe: str = "auto"  # pandas | cudf | auto
    target: str = s.TOTAL
    files: str = "yellow_tripdata_*"  # glob under <data_dir>/taxi, without .csv/.parquet
    block_mib: int = 64  # CSV bytes (Parquet: uncompressed row-group bytes) per partition
    rules: tuple[str, ...] = rules.RULE_NAMES
    test_fraction: float = 0.25
    split_seed: int = 42
    xgboost: XGBoostSettings = field(default_factory=XGBoostSettings)
    train_attempts: int = 3  # a worker lost mid-training: retry the whole training (workloads.taxi.training)
    recovery_timeout_s: float = 300.0  # ... once the cluster has its workers back, within this long
    require_all_files: bool = False  # a file that gives no rows fails the run instead of being skipped
    workers: tuple[str, ...] = ()  # run only on these worker addresses (filled by the runner)

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.dataframe not in backends.CHOICES:
            raise ValueError(f"--dataframe must be one of {backends.CHOICES}, got {self.dataframe!r}")
        if self.dataframe == backends.CUDF and self.device != "cuda":
            raise ValueError("--dataframe cudf needs --device cuda (cuDF frames live on the GPU)")
        if self.target not in s.TARGETS:
            raise ValueError(f"--target must be one of {s.TARGETS}, got {self.target!r}")
        if not 0 < self.block_mib <= 1024:
            raise ValueError(f"--taxi-block-mib must be in 1..1024, got {self.block_mib}")
        if not 0.0 < self.test_fraction < 1.0:
            raise ValueError(f"--test-fraction must be in (0, 1), got {self.test_fraction}")
        rules.select(self.rules)  # raises on an unknown name
        if self.xgboost.num_boost_round <= 0:
            raise ValueError(f"--xgb-rounds must be positive, got {self.xgboost.num_boost_round}")
        if self.train_attempts < 1:
            raise ValueError(f"--train-attempts must be >= 1, got {self.train_attempts}")
        if self.recovery_timeout_s <= 0:
            raise ValueError(f"--recovery-timeout must be positive, got {self.recovery_timeout_s}")

    @property
    def block_bytes(self) -> int:
        return self.block_mib << 20


# command-line dest -> (Config field or "xgboost.<field>", type, metavar, help)
_FLAGS: dict[str, tuple[str, Any, str | None, str]] = {
    "dataframe": ("dataframe", str, None, "partition type: pandas, cudf, or auto (cudf when "
                                          "the device is cuda and dask_cudf is everywhere)"),
    "target": ("target", str, None, "what to predict"),
    "taxi_files": ("files", str, "GLOB", "file glob under <data-dir>/taxi, without the suffix"),
    "taxi_block_mib": ("block_mib", int, "MIB", "MiB of input per partition"),
    "taxi_rules": ("rules", str, "NAME,...", "cleansing rules to apply (default: all of "
                                             f"{', '.join(rules.RULE_NAMES)})"),
    "test_fraction": ("test_fraction", float, "F", "share of rows held out for inference"),
    "split_seed": ("split_seed", int, "N", "seed of the train/test split"),
    "xgb_rounds": ("xgboost.num_boost_round", int, "N", "boosting rounds"),
    "xgb_learning_rate": ("xgboost.learning_rate", float, "F", "learning rate (eta)"),
    "xgb_max_depth": ("xgboost.max_depth", int, "N", "tree depth"),
    "xgb_subsample": ("xgboost.subsample", float, "F", "row subsample per tree"),
    "xgb_gamma": ("xgboost.gamma", float, "F", "minimum loss reduction to split"),
    "xgb_ranks": ("xgboost.ranks", str, None, "XGBoost ranks: per-worker (default), or per-host: one rank per"
                                              " host with all its workers' threads (CPU; fewer allreduces)"),
    "train_attempts": ("train_attempts", int, "N", "training attempts when workers are lost mid-training"),
    "recovery_timeout": ("recovery_timeout_s", float, "SECONDS",
                         "how long a retry waits for the lost workers to be replaced"),
}


# command-line dest -> Config field, for the flags the runner defines for every benchmark (workloads/run.py)
_SHARED = {"require_all_files": "require_all_files"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The taxi benchmark's flags (none collides with the runner's or the images ones)."""
    group = parser.add_argument_group("taxi benchmark")
    for dest, (_, kind, metavar, help_text) in _FLAGS.items():
        flag = "--" + dest.replace("_", "-")
        choices = {"dataframe": backends.CHOICES, "target": s.TARGETS, "xgb_ranks": RANKS}.get(dest)
        group.add_argument(flag, dest=dest, type=kind, default=None, choices=choices,
                           metavar=metavar, help=help_text + " (default: profile, else built in)")


def load_profile(name: str, path: Path = PROFILES_FILE) -> dict[str, Any]:
    """This benchmark's section of profile ``name`` (smoke | small | reference)."""
    import yaml

    profiles = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if name not in profiles:
        raise ValueError(f"unknown profile {name!r} in {path}; known: {', '.join(profiles)}")
    return dict(profiles[name])


def make_config(args: argparse.Namespace | None, profile: dict[str, Any], data_dir: Path | str,
                device: str) -> Config:
    """Defaults, overridden by ``profile`` (less its ``generate`` section), overridden by
    the flags in ``args`` that were given."""
    values: dict[str, Any] = {}
    booster: dict[str, Any] = {}
    known = {f.name for f in dataclasses.fields(Config)} - {"data_dir", "device", "workers"}
    for key, value in profile.items():
        if key == "generate":
            continue
        if key not in known:
            raise ValueError(f"profile setting {key!r} is not a taxi setting; known: "
                             f"{', '.join(sorted(known | {'generate'}))}")
        if key == "xgboost":
            booster.update(_xgboost_values(value))
        else:
            values[key] = value
    for dest, target in [*((dest, flag[0]) for dest, flag in _FLAGS.items()), *_SHARED.items()]:
        value = getattr(args, dest, None) if args is not None else None
        if value is None:
            continue
        if target.startswith("xgboost."):
            booster[target.split(".", 1)[1]] = value
        else:
            values[target] = value
    if isinstance(values.get("rules"), str):
        values["rules"] = [name.strip() for name in values["rules"].split(",") if name.strip()]
    if "rules" in values:
        values["rules"] = tuple(values["rules"])
    return Config(data_dir=str(data_dir), device=device, xgboost=XGBoostSettings(**booster),
                  **values)


def _xgboost_values(value: Any) -> dict[str, Any]:
    known = {f.name for f in dataclasses.fields(XGBoostSettings)}
    if not isinstance(value, dict) or set(value) - known:
        raise ValueError(f"profile setting 'xgboost' takes keys {', '.join(sorted(known))}; "
                         f"got {value!r}")
    return dict(value)
