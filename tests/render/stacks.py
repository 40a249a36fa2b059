"""Settings of a stack file plus overrides, as the program loads them (dummy secrets)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.settings import DictSource, Settings, load
from tests.program.graph import SECRETS

REPO = Path(__file__).resolve().parents[2]


def stack_source(stack: str, config: dict[str, Any]) -> DictSource:
    declared = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]
    project = {k.split(":", 1)[1]: v for k, v in declared.items() if k.startswith("dask-tkg:")}
    provider = {k: v for k, v in declared.items() if not k.startswith("dask-tkg:")}
    provider["vsphere:password"] = SECRETS["vsphere:password"]
    secrets = {k: v for k, v in SECRETS.items() if ":" not in k and k != "supervisorKubeconfig"}
    return DictSource({**project, **secrets, **config}, provider)


def stack_settings(stack: str, config: dict[str, Any]) -> Settings:
    return load(stack_source(stack, config))
