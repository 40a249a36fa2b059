"""The cluster's GPU metrics as the program declares them under Pulumi's mocks (setting
``gpuMetrics``): on the current stacks, a namespace of their own with the recording rules, the
configuration that loads them and the team's dashboard, as ConfigMaps on the workload cluster,
carrying exactly the files promtool judges (tests/monitoring/test_recording_rules.py); none on the
paper's stacks, nor where the setting is off.
"""
from __future__ import annotations

import json

import pytest

from components.addons import gpu_metrics
from components.addons.gpu_metrics.objects import DASHBOARD_CONFIGMAP, NAMESPACE, RULES_CONFIGMAP
from tests.program.graph import run_program


def declared(stack: str, config: dict | None = None) -> dict[str, dict]:
    """The stack's GPU-metrics objects by kind/name, each with its provider's name."""
    graph = run_program(stack, config=config)
    assert graph.error is None, graph.traceback
    objects = {}
    for resource in graph.kubernetes_objects():
        manifest = resource.manifest()
        meta = manifest.get("metadata") or {}
        if NAMESPACE in (meta.get("namespace"), meta.get("name") if manifest.get("kind") == "Namespace" else None):
            provider = (resource.raw.get("provider") or "").rsplit("::", 2)[-2:]
            objects[f"{manifest['kind']}/{meta['name']}"] = {**manifest, "__provider": provider}
    return objects


@pytest.mark.parametrize("stack", ["dev", "full"])
def test_the_current_stacks_declare_the_rules_and_the_dashboard_on_the_workload_cluster(stack):
    objects = declared(stack)
    assert set(objects) == {f"Namespace/{NAMESPACE}", f"ConfigMap/{RULES_CONFIGMAP}",
                            f"ConfigMap/{DASHBOARD_CONFIGMAP}"}
    providers = {key: o["__provider"] for key, o in objects.items()}
    assert all(provider[0] == "guest" for provider in providers.values()), providers
    rules = objects[f"ConfigMap/{RULES_CONFIGMAP}"]["data"]
    assert rules == {gpu_metrics.RULES_KEY: gpu_metrics.rules_text(),
                     gpu_metrics.PROMETHEUS_KEY: gpu_metrics.prometheus_text()}
    dashboard = objects[f"ConfigMap/{DASHBOARD_CONFIGMAP}"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"][gpu_metrics.DASHBOARD_KEY])["uid"] == "dask-tkg-gpu"
    labels = objects[f"Namespace/{NAMESPACE}"]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("stack", ["reference", "reference-dev"])
def test_the_paper_stacks_declare_none(stack):
    assert declared(stack) == {}


def test_the_setting_off_declares_none():
    assert declared("dev", {"gpuMetrics": False}) == {}
