"""When the default image's stand-in environment (scripts/build_default_image_env.py) is reused.

Its ``links/`` point into one checkout's venv. A cache shared by several checkouts (a fresh
clone checked and then deleted, CI on the same disk) must not hand a later checkout links to a
deleted venv: inside the pods a dangling ``torch-*.dist-info`` link makes
``importlib.metadata.version`` fail with ``No package metadata was found``. The build itself
(pip) is replaced here by one that makes a single link; the reuse decision is the real code.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.setup.programs import REPO

SCRIPT = REPO / "scripts" / "build_default_image_env.py"


@pytest.fixture
def script(monkeypatch, tmp_path):
    """The script as a module, its cache under tmp_path, its build making one link into a fake site."""
    spec = importlib.util.spec_from_file_location("build_default_image_env", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("DASK_TKG__CACHE", str(tmp_path / "cache"))
    site = tmp_path / "checkout-a" / "site-packages"
    (site / "torch").mkdir(parents=True)
    module.built = []

    def build(home: Path, key_parts, dists) -> None:
        (home / "links").mkdir()
        (home / "links" / "torch").symlink_to(module.current_site / "torch")
        module.built.append(home)

    module.current_site = site
    monkeypatch.setattr(module, "build", build)
    monkeypatch.setattr(module, "runner_site", lambda: module.current_site, raising=False)
    return module


def _run(script, capsys, *argv) -> tuple[int, dict | str]:
    code = script.main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else err)


def test_a_complete_build_is_reused(script, capsys):
    assert _run(script, capsys)[1]["cached"] is False
    code, facts = _run(script, capsys)
    assert code == 0 and facts["cached"] is True and len(script.built) == 1


def test_links_into_a_deleted_checkout_are_rebuilt_not_reused(script, capsys):
    _run(script, capsys)
    (script.current_site / "torch").rmdir()  # the checkout whose venv the links point into is gone
    code, why = _run(script, capsys, "--check")
    assert code == 1 and "point to nothing" in why and "torch" in why
    code, facts = _run(script, capsys)
    assert code == 0 and facts["cached"] is False and len(script.built) == 2


def test_each_checkouts_venv_gets_its_own_environment(script, capsys, tmp_path):
    first = _run(script, capsys)[1]
    script.current_site = tmp_path / "checkout-b" / "site-packages"
    (script.current_site / "torch").mkdir(parents=True)
    second = _run(script, capsys)[1]
    assert second["cached"] is False and second["venv"] != first["venv"]
    assert second["runner_site_packages"] == str(script.current_site)
    assert (Path(second["links"]) / "torch").resolve() == script.current_site / "torch"
