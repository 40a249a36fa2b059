"""What every command of the project shares: logging set-up, YAML profiles, and the program
name shown in ``--help`` (``dask-tkg run`` when started through the ``dask-tkg`` command,
``python -m workloads.run`` otherwise)."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import yaml

# dask-tkg sets this for the subcommand it dispatches to (see workloads.cli)
PROG_ENV = "DASK_TKG_CLI_PROG"
NOISY_LOGGERS = {"distributed": logging.WARNING, "tornado": logging.WARNING, "bokeh": logging.ERROR}


def prog(default: str) -> str:
    return os.environ.get(PROG_ENV) or default


def setup_logging(verbose: bool = False, level: int = logging.INFO) -> None:
    """One format for every command; Dask's own chatter kept to warnings (distributed
    configures its loggers on import, so import it first to quieten it after)."""
    import distributed  # noqa: F401

    logging.basicConfig(level=logging.DEBUG if verbose else level, format="%(levelname)s %(name)s: %(message)s")
    for name, noisy_level in NOISY_LOGGERS.items():
        logging.getLogger(name).setLevel(noisy_level)


def load_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping (an empty file is an empty mapping)."""
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}
