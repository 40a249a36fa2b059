"""The project's settings live in Dask's config under ``tkg`` (workloads/core/dask-tkg.yaml):
set by ``DASK_TKG__*`` as every Dask key is; the single-underscore names of earlier releases
still work, with a deprecation warning."""
from __future__ import annotations

from pathlib import Path

import dask.config
import pytest

from workloads.core import config


@pytest.fixture
def fresh_config(monkeypatch):
    for name in ("DASK_TKG__CACHE", "DASK_TKG_CACHE"):
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch
    monkeypatch.undo()
    dask.config.refresh()


def test_defaults_come_from_the_packaged_yaml(fresh_config):
    dask.config.refresh()
    assert config.cache_dir() == Path("~/.cache/dask-tkg").expanduser()
    assert dask.config.get("tkg.model") == "resnet50"


def test_the_dask_variable_sets_the_key(fresh_config, tmp_path):
    fresh_config.setenv("DASK_TKG__CACHE", str(tmp_path))
    dask.config.refresh()
    assert dask.config.get("tkg.cache") == str(tmp_path) and config.cache_dir() == tmp_path


def test_the_old_variable_still_works_and_says_it_is_deprecated(fresh_config, tmp_path):
    fresh_config.setenv("DASK_TKG_CACHE", str(tmp_path / "old"))
    dask.config.refresh()
    with pytest.warns(FutureWarning, match="DASK_TKG_CACHE is deprecated: set DASK_TKG__CACHE"):
        assert config.cache_dir() == tmp_path / "old"
    fresh_config.setenv("DASK_TKG__CACHE", str(tmp_path / "new"))  # the new name wins
    dask.config.refresh()
    assert config.cache_dir() == tmp_path / "new"
