"""The two Helm releases of the operator backend rendered by a real Helm 3 engine (``helm
template`` on the pinned, sha256-verified chart archives, offline) from the values the
program declares for the dev stack, and the rendered objects created on the current stacks'
Kubernetes (1.33) API server (server-side dry run): the operator chart with its CRDs, RBAC and controller Deployment,
and the dask chart reduced to Jupyter.

Helm is the cached binary of the project's Helm stand-in (``$DASK_TKG_CACHE/helm/bin/helm``).
"""
from __future__ import annotations

import json
import subprocess
import tempfile

import pytest
import yaml

from tests.artifacts import DASK_CHART, DASK_OPERATOR_CHART, artifact_path
from tests.kube.binaries import CURRENT
from tests.kube.rest import KubeApiError, apply_manifest
from tests.operator.support import MODERN_IMAGE, OPERATOR
from tests.program.graph import run_program
from workloads.core.config import cache_dir

pytestmark = pytest.mark.apiserver
HELM = cache_dir() / "helm" / "bin" / "helm"
DRY_RUN_KINDS = {"Deployment"}  # nothing would start it here; a dry run still validates it


def helm_template(chart, release: str, namespace: str, values: dict) -> list[dict]:
    if not HELM.is_file():
        pytest.fail(f"{HELM} is missing: the Helm stand-in is not installed in the cache", pytrace=False)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(values, handle)
        handle.flush()
        done = subprocess.run([str(HELM), "template", release, str(chart), "--namespace", namespace, "--values",
                               handle.name, "--include-crds", "--kube-version", CURRENT.version],
                              check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.fixture(scope="module")
def graph():
    g = run_program("dev", config=OPERATOR)
    assert g.error is None, g.traceback
    return g


def test_operator_chart_renders_and_is_accepted(kube_apiserver, operator_crds, kube_namespace, graph):
    release = graph.named("dask-operator").inputs
    objects = helm_template(artifact_path(DASK_OPERATOR_CHART), release["name"], kube_namespace, release["values"])
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    assert sorted(c["spec"]["names"]["kind"] for c in by_kind["CustomResourceDefinition"]) == [
        "DaskAutoscaler", "DaskCluster", "DaskJob", "DaskWorkerGroup"]
    [deployment] = by_kind["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "ghcr.io/dask/dask-kubernetes-operator:2026.3.0"
    assert pod["nodeSelector"] == release["values"]["nodeSelector"]
    assert pod["containers"][0]["securityContext"]["runAsNonRoot"] is True
    for o in objects:
        if o["kind"] == "CustomResourceDefinition":
            continue  # installed by the operator_crds fixture, from the same chart
        if o["kind"] in ("ClusterRoleBinding", "RoleBinding"):
            for subject in o.get("subjects", []):
                subject["namespace"] = kube_namespace
        try:
            apply_manifest(kube_apiserver.api_client, o, namespace=kube_namespace, dry_run=True)
        except KubeApiError as exc:
            pytest.fail(f"the 1.20 server refused the operator chart's {o['kind']} {o['metadata']['name']}: "
                        f"{exc.message}")


def test_jupyter_release_renders_jupyter_alone(kube_apiserver, kube_namespace, graph):
    release = graph.named("dask-jupyter-release").inputs
    objects = helm_template(artifact_path(DASK_CHART), release["name"], kube_namespace, release["values"])
    deployments = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}
    services = [o["metadata"]["name"] for o in objects if o["kind"] == "Service"]
    assert "dask-scheduler" not in deployments and "dask-scheduler" not in services  # the operator's instead
    assert deployments["dask-worker"]["spec"]["replicas"] == 0  # the chart always renders its worker Deployment
    jupyter = deployments["dask-jupyter"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in jupyter["env"]}
    # the chart points Jupyter at <release>-scheduler: the DaskCluster "dask"'s Service
    assert env["DASK_SCHEDULER_ADDRESS"] == "dask-scheduler:8786"
    assert jupyter["image"] == MODERN_IMAGE
    for o in objects:
        apply_manifest(kube_apiserver.api_client, o, namespace=kube_namespace, dry_run=True)
