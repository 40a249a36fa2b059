"""examples/images.ipynb: valid nbformat 4 without outputs, and its code runs as written
against a real cluster (paths and model come from the Dask config keys ``tkg.*`` it documents),
with the project imported as installed, without path tricks."""
from __future__ import annotations

import json
from pathlib import Path

import dask.config

from .support import COLOUR_MODEL

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "images.ipynb"


def test_notebook_is_nbformat_4_without_outputs():
    notebook = json.loads(NOTEBOOK.read_text())
    assert notebook["nbformat"] == 4 and notebook["cells"]
    for cell in notebook["cells"]:
        assert cell["cell_type"] in ("markdown", "code") and isinstance(cell["source"], list)
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
            compile("".join(cell["source"]), str(NOTEBOOK), "exec")


def test_notebook_code_runs(client, data_root, manifest, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", client.scheduler.address)
    monkeypatch.setenv("DASK_TKG__DATA", str(data_root))
    monkeypatch.setenv("DASK_TKG__MODEL", COLOUR_MODEL)
    monkeypatch.setenv("DASK_TKG__WEIGHTS", "random")
    dask.config.refresh()  # Dask reads DASK_* variables when it collects its config
    namespace: dict = {}
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    try:
        for cell in cells:
            exec(compile("".join(cell["source"]), str(NOTEBOOK), "exec"), namespace)
        metrics = namespace["metrics"]
        assert metrics["images_total"] == len(manifest["files"]) and metrics["images_failed"] == 3
        assert metrics["accuracy"] is not None and namespace["checked"].device == "cpu"
        assert list(namespace["timer"].phases)[:3] == ["list", "load_model", "infer"]
    finally:
        if "client" in namespace:
            namespace["client"].close()
        monkeypatch.undo()
        dask.config.refresh()
