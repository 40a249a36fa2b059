"""The pure builders of the operator's resources: the DaskCluster's scheduler and GPU workers,
the optional CPU worker group, the autoscaler, the chart values and the scheduler's
NetworkPolicy. Where the operator's own code decides what a field must be, the test asks that
code (dask-kubernetes 2026.3.0, imported), not a copy of it."""
from __future__ import annotations

import ast
from pathlib import Path

import distributed
import pytest
import yaml
from dask_kubernetes.operator.controller.controller import build_worker_deployment_spec
from dask_kubernetes.operator.kubecluster.kubecluster import make_cluster_spec

from components.dask import operator_spec, podspec, post_render
from components.dask.values import DaskValuesInputs, dask_values
from components.settings.model import POOL_ROLE_LABEL
from tests.operator.support import NAMESPACE, cluster_inputs, operator_settings
from tests.unit.support import settings

GPU = {POOL_ROLE_LABEL: "gpu"}


def container(worker_or_scheduler: dict) -> dict:
    [only] = worker_or_scheduler["spec"]["containers"]
    return only


def env_of(c: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


@pytest.fixture(scope="module")
def s():
    return operator_settings()


@pytest.fixture(scope="module")
def cluster(s):
    return operator_spec.dask_cluster(cluster_inputs(s))


def helm_worker(s) -> dict:
    """The Helm backend's worker values for the same settings and claims."""
    i = cluster_inputs(s)
    return dask_values(DaskValuesInputs(
        dask=s.dask, namespace=NAMESPACE, release="dask", scheduler_selector=i.scheduler_selector,
        jupyter_selector={}, worker_selector=GPU, dataset_claim=i.claims.dataset_claim,
        pip_cache_claim=i.claims.pip_cache_claim, dataset_mount=i.claims.dataset_mount,
        jupyter_password_hash="argon2:x", tls_secret=i.tls_secret))["worker"]


def test_gpu_workers_are_the_helm_backends_workers(s, cluster):
    """One source: image, environment (tuning, scratch, TLS), mounts and resources equal the
    Helm values' for the same settings; the operator adds only the scheduler address."""
    worker = cluster["spec"]["worker"]
    c = container(worker)
    helm = helm_worker(s)
    assert c["image"] == s.dask.image == f"{helm['image']['repository']}:{helm['image']['tag']}"
    assert [e for e in c["env"] if e["name"] != "DASK_SCHEDULER_ADDRESS"] == helm["env"]
    # the chart's worker pod as Helm installs it: its values' mounts, then the release's post-renderer
    rendered = post_render.harden({
        "kind": "Deployment", "metadata": {"name": "dask-worker", "labels": {"app": "dask", "release": "dask"}},
        "spec": {"template": {"spec": {"volumes": helm["mounts"]["volumes"], "containers": [
            {"name": "worker", "env": helm["env"], "volumeMounts": helm["mounts"]["volumeMounts"]}],
            **({"securityContext": helm["securityContext"]} if "securityContext" in helm else {})}}}})
    helm_pod = rendered["spec"]["template"]["spec"]
    assert {"volumes": worker["spec"]["volumes"], "volumeMounts": c["volumeMounts"]} == {
        "volumes": helm_pod["volumes"], "volumeMounts": helm_pod["containers"][0]["volumeMounts"]}
    assert c["securityContext"] == helm_pod["containers"][0]["securityContext"]
    assert {k: worker["spec"][k] for k in ("securityContext", "automountServiceAccountToken")} == {
        k: helm_pod[k] for k in ("securityContext", "automountServiceAccountToken")}
    # the same quantities, as strings: the operator's CRDs type them so (see test_apiserver_crs)
    assert c["resources"] == {kind: {k: str(v) for k, v in amounts.items()}
                              for kind, amounts in helm["resources"].items()}
    assert c["resources"]["limits"][podspec.GPU_RESOURCE] == c["resources"]["requests"][podspec.GPU_RESOURCE] == "1"
    assert worker["spec"]["nodeSelector"] == GPU
    assert worker["replicas"] == 8
    threads = s.dask.workers.threads
    assert ast.literal_eval(env_of(c)["DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON"])["OMP_NUM_THREADS"] == str(threads)


def test_workers_take_the_name_the_controller_retires_them_by(cluster):
    args = container(cluster["spec"]["worker"])["args"]
    assert args[0] == "dask-cuda-worker"
    assert args[args.index("--name") + 1] == "$(DASK_WORKER_NAME)"
    assert args[1] == f"tls://dask-scheduler.{NAMESPACE}.svc.cluster.local:8786"


def test_the_controller_keeps_the_tls_scheduler_address(cluster):
    """The real controller's worker Deployment builder adds DASK_SCHEDULER_ADDRESS=tcp://...
    unless the container sets it: ours must survive, or a TLS worker dials plain TCP."""
    worker = cluster["spec"]["worker"]
    deployment = build_worker_deployment_spec("dask-default", NAMESPACE, "dask", "abc", worker["spec"], {}, {})
    env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
    assert env["DASK_SCHEDULER_ADDRESS"] == f"tls://dask-scheduler.{NAMESPACE}.svc.cluster.local:8786"
    assert env["DASK_WORKER_NAME"] == deployment["metadata"]["name"] == "dask-default-worker-abc"


def test_without_tls_the_workers_still_name_their_scheduler(s):
    plain = operator_spec.dask_cluster(cluster_inputs(operator_settings(daskTls=False), tls=False))
    c = container(plain["spec"]["worker"])
    assert env_of(c)["DASK_SCHEDULER_ADDRESS"] == f"tcp://dask-scheduler.{NAMESPACE}.svc.cluster.local:8786"
    assert not any(e["name"].startswith("DASK_DISTRIBUTED__COMM__TLS") for e in c["env"])
    assert "--protocol" not in container(plain["spec"]["scheduler"])["args"]


def test_scheduler_matches_what_the_controller_looks_up(s, cluster):
    """Port names and the Service's shape are those of dask-kubernetes' own make_scheduler_spec
    (the controller finds ports by name); the scheduler stays off the GPU nodes."""
    ours = cluster["spec"]["scheduler"]
    theirs = make_cluster_spec("dask", image=s.dask.image)["spec"]["scheduler"]
    assert [p["name"] for p in ours["service"]["ports"]] == [p["name"] for p in theirs["service"]["ports"]]
    assert ours["service"]["selector"] == theirs["service"]["selector"]
    assert [p["name"] for p in container(ours)["ports"]] == [p["name"] for p in container(theirs)["ports"]]
    assert container(ours)["readinessProbe"]["httpGet"] == container(theirs)["readinessProbe"]["httpGet"]
    assert ours["spec"]["nodeSelector"].get(POOL_ROLE_LABEL) not in (None, "gpu")
    assert podspec.GPU_RESOURCE not in container(ours)["resources"]["limits"]
    c = container(ours)
    assert c["args"][:2] == ["dask", "scheduler"] and c["args"][-2:] == ["--protocol", "tls"]
    assert c["image"] == s.dask.image


def test_scheduler_serves_the_http_api_the_controller_calls(cluster):
    """distributed serves /api/v1/retire_workers and /api/v1/adaptive_target only with the api
    route enabled; the value is what Dask's config parser reads (a Python literal)."""
    scheduler_env = env_of(container(cluster["spec"]["scheduler"]))
    routes = ast.literal_eval(scheduler_env["DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES"])
    defaults = yaml.safe_load((Path(distributed.__file__).parent / "distributed.yaml").read_text())
    default_routes = defaults["distributed"]["scheduler"]["http"]["routes"]
    assert routes == [*default_routes, "distributed.http.scheduler.api"]


def test_cpu_worker_group_only_when_asked(s):
    assert operator_spec.cpu_worker_group(cluster_inputs(s)) is None
    group = operator_spec.cpu_worker_group(cluster_inputs(operator_settings(cpuWorkers=2, cpuWorkerCpu=3)))
    assert group["kind"] == "DaskWorkerGroup" and group["spec"]["cluster"] == "dask"
    worker = group["spec"]["worker"]
    c = container(worker)
    assert worker["replicas"] == 2 and worker["spec"]["nodeSelector"] == {POOL_ROLE_LABEL: "cpu"}
    assert podspec.GPU_RESOURCE not in c["resources"]["limits"]
    assert c["args"][:2] == ["dask", "worker"] and c["args"][c["args"].index("--nthreads") + 1] == "3"
    assert c["image"] == s.dask.image


def test_autoscaler_bounds_come_from_the_settings(s):
    scaler = operator_spec.autoscaler(cluster_inputs(s))
    assert scaler["spec"] == {"cluster": "dask", "minimum": 1, "maximum": 8}
    scaler = operator_spec.autoscaler(cluster_inputs(operator_settings(autoscaleMinWorkers=2, autoscaleMaxWorkers=4)))
    assert scaler["spec"] == {"cluster": "dask", "minimum": 2, "maximum": 4}
    assert operator_spec.autoscaler(cluster_inputs(operator_settings(daskAutoscale=False))) is None


def test_initial_workers_sit_within_the_autoscalers_bounds():
    cluster = operator_spec.dask_cluster(cluster_inputs(operator_settings(autoscaleMaxWorkers=4)))
    assert cluster["spec"]["worker"]["replicas"] == 4
    cluster = operator_spec.dask_cluster(cluster_inputs(operator_settings(gpuWorkers=2, daskAutoscale=False)))
    assert cluster["spec"]["worker"]["replicas"] == 2


def test_operator_chart_values_pin_the_controller_image(s):
    values = operator_spec.operator_values(s.dask.operator, {POOL_ROLE_LABEL: "cpu"}, ["rapidsai"])
    assert values["image"] == {"name": "ghcr.io/dask/dask-kubernetes-operator", "tag": "2026.3.0",
                               "pullPolicy": "IfNotPresent"}
    assert values["nodeSelector"] == {POOL_ROLE_LABEL: "cpu"}


def test_helm_settings_cannot_build_a_dask_cluster():
    with pytest.raises(ValueError, match="only with daskBackend=operator"):
        operator_spec.autoscaler(cluster_inputs(settings()))
