"""Upgrades on a live stack: what ``pulumi up`` does when ``tkr``, the GPU operator's version or
the Dask image and versions change, shown by running the program twice under Pulumi's mocks and
comparing the registered inputs (``update_model.py``: which resources a setting touches, and
whether their provider or their options replace them), and what preview refuses. The table in
docs/deploy.md ("Upgrades") says the same, row by row."""
from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest

from components.artifacts.charts import project_pins, verified_chart
from tests.program.graph import REPO, SECRETS, Graph, _run, run_program
from tests.program.update_model import changes

DEPLOY = REPO / "docs" / "deploy.md"
NEXT_VKR = "v1.34.2---vmware.2-vkr.2"
NEXT_IMAGE = "python:3.11.16-slim-bookworm@sha256:" + "ab" * 32
NEXT_GPU_OPERATOR = "v26.10.0"
GPU_OPERATOR_REPO = "https://nvidia.github.io/gpu-operator/stable"


def actions(before: Graph, after: Graph) -> dict[str, str]:
    assert after.error is None, after.traceback
    return {name: change.action for name, change in changes(before, after).items()}


def test_a_new_tkr_updates_the_cluster_in_place():
    done = actions(run_program("dev"), run_program("dev", config={"tkr": NEXT_VKR}))
    # the Cluster's topology.version (Cluster API then rolls every node), the checks that read tkr
    assert done == {"tkc-cluster": "update", "tkc-gpu-pools-ready": "update", "supervisor-releases": "update",
                    "vsphere-supervisor-release-library": "update"}


def test_a_new_tkr_on_the_papers_cluster_updates_the_tkc_in_place():
    done = actions(run_program("reference"), run_program("reference", config={"tkr": "v1.21.6---vmware.1-tkg.1"}))
    assert done.get("tkc-tkc") == "update" and "replace" not in done.values(), done


def _run_uncached(config: dict) -> Graph:
    """The program for the dev stack, run afresh (``run_program`` caches by spec, not by cache folder)."""
    spec = {"stack": "dev", "config": config, "secrets": SECRETS, "mock": {}}
    return Graph(json.loads(_run.__wrapped__(json.dumps(spec, sort_keys=True))))


def test_a_new_gpu_operator_upgrades_its_release_in_place(tmp_path, monkeypatch):
    """A version the project does not pin, pinned by the site (chartPins): the same archive bytes
    under another version stand in for NVIDIA's next chart."""
    cache = tmp_path / "cache"
    current = None
    for pin in project_pins():  # the project's archives, verified (fetched from the mirror where needed)
        (cache / "artifacts" / pin.file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(verified_chart(pin), cache / "artifacts" / pin.file)
        if (pin.chart, pin.chart_version) == ("gpu-operator", "v26.7.0"):
            current = cache / "artifacts" / pin.file
    site = cache / "artifacts" / "site-charts" / f"gpu-operator-{NEXT_GPU_OPERATOR}.tgz"
    site.parent.mkdir(parents=True)
    shutil.copy(current, site)
    pin = (f"repo={GPU_OPERATOR_REPO},chart=gpu-operator,version={NEXT_GPU_OPERATOR},"
           f"sha256={hashlib.sha256(site.read_bytes()).hexdigest()}")
    monkeypatch.setenv("DASK_TKG__CACHE", str(cache))
    before = _run_uncached({})
    after = _run_uncached({"gpuOperatorVersion": NEXT_GPU_OPERATOR, "chartPins": [pin]})
    done = changes(before, after)
    assert {n: c.action for n, c in done.items()} == {"gpu-operator-release": "update"}
    assert {"chart", "version"} <= set(done["gpu-operator-release"].paths)  # helm upgrade to the new archive


def test_a_new_dask_image_replaces_the_dask_cluster_and_the_environment_job():
    done = actions(run_program("dev"), run_program("dev", config={"daskImage": NEXT_IMAGE}))
    # the DaskCluster's replaceOnChanges (spec.scheduler, spec.worker.spec); a Job's template is immutable
    assert done == {"dask-cluster": "replace", "environment-job": "replace", "dask-jupyter-release": "update"}


def test_a_new_dask_image_on_the_helm_backend_upgrades_the_release_in_place():
    image = "nvcr.io/nvidia/rapidsai/rapidsai:21.12-cuda11.2-runtime-ubuntu20.04"
    done = actions(run_program("reference"), run_program("reference", config={"daskImage": image}))
    assert done.get("dask-release") == "update" and "replace" not in done.values(), done


@pytest.mark.parametrize("key,value", [
    ("daskImageDaskVersion", "2026.8.0"),  # the prepared environment's Dask is the lock's
    ("daskOperatorChartVersion", "2026.4.0"),  # no pinned archive
    ("gpuOperatorVersion", NEXT_GPU_OPERATOR),  # no pinned archive
    ("gpuOperatorVersion", "v1.9.1"),  # APIs Kubernetes 1.25 removed, on a 1.33 tkr
])
def test_preview_refuses_an_upgrade_it_cannot_deploy(key, value):
    graph = run_program("dev", config={key: value})
    assert graph.error is not None and f"dask-tkg:{key}" in graph.error, graph.error


def documented_rows() -> dict[str, str]:
    """``setting`` -> the "Pulumi does" cell of docs/deploy.md's upgrade table."""
    text = DEPLOY.read_text(encoding="utf-8")
    section = text[text.index("\n## Upgrades"):]
    section = section[:section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)`[^|]*\| ([^|]+) \|", section, re.M)}


def test_the_upgrade_table_says_what_pulumi_does():
    rows = documented_rows()
    said = {"tkr": ("in place",), "gpuOperatorVersion": ("in place",), "daskImage": ("replaces", "in place"),
            "daskImageDaskVersion": ("refuses",), "daskOperatorChartVersion": ("refuses",)}
    for key, words in said.items():
        assert key in rows, f"docs/deploy.md's upgrade table has no row for {key}"
        assert all(word in rows[key] for word in words), (key, rows[key])
