"""The project's settings in Dask's configuration (key ``tkg``, defaults in ``dask-tkg.yaml``).

Every ``DASK_*`` environment variable is a Dask config key, so the project's variables live
under ``DASK_TKG__*`` (``tkg.cache`` is ``DASK_TKG__CACHE``). The deprecated single-underscore
names (``DASK_TKG_CACHE``, ...) are still read, with a warning.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import dask.config
import yaml

from workloads.tuning import dask_env_name

_DEFAULTS = Path(__file__).with_name("dask-tkg.yaml")
_DEPRECATED = {  # deprecated environment variable -> the config key it sets
    "DASK_TKG_CACHE": "tkg.cache",
    "DASK_TKG_OUTPUTS": "tkg.outputs",
    "DASK_TKG_DATA": "tkg.data",
    "DASK_TKG_MODEL": "tkg.model",
    "DASK_TKG_WEIGHTS": "tkg.weights",
}

with _DEFAULTS.open(encoding="utf-8") as _f:
    dask.config.update_defaults(yaml.safe_load(_f))


def get(key: str, default: Any = None) -> Any:
    """``dask.config.get(key)``, honouring a deprecated ``DASK_TKG_*`` variable that is set
    where its ``DASK_TKG__*`` successor is not."""
    for old, new_key in _DEPRECATED.items():
        if new_key == key and old in os.environ and dask_env_name(key) not in os.environ:
            warnings.warn(f"{old} is deprecated: set {dask_env_name(key)} (Dask's config key {key!r})",
                          FutureWarning, stacklevel=2)
            return os.environ[old]
    return dask.config.get(key, default=default)


def cache_dir() -> Path:
    """Where generated data, built stand-ins and fetched artifacts live (``tkg.cache``)."""
    return Path(str(get("tkg.cache"))).expanduser()
