"""The real operator controller reconciles the program's DaskCluster (the dev stack's) on the
current stacks' Kubernetes (1.33) API server: dask-kubernetes 2026.3.0's kopf controller (``kopf run -m
dask_kubernetes.operator.controller``, the pinned chart's image runs the same command, see its
``operator/deployment/Dockerfile``) in a subprocess, with the flags the chart renders from the
program's values (watching the Dask namespace only) and as the chart's ServiceAccount, whose
rights are only what the chart and the program grant it (pods, Services, Deployments in the Dask
namespace; cluster-wide, only reading namespaces and CRDs).

The stand-in has no controller-manager or kubelet, so the Deployments the controller creates
get no pods: what is checked is the objects themselves (the pods need not run). Growing a
worker group only creates Deployments; shrinking one asks the scheduler which workers to
retire, which needs a running scheduler and is not exercised here. The runner resizes the
cluster as it does from the stack outputs: with the program's namespaced identity (a token of
its ServiceAccount, whose Role reaches the worker group only through its ``scale``
subresource), not the admin's.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from components.settings.model import POOL_ROLE_LABEL
from tests.apiserver.runner_identity import apply_runner_identity, kubeconfig_for, request_token
from tests.kube.rest import KubeApiError, api_request, apply_manifest, get_object, patch_object
from tests.operator.operator_identity import OperatorDeployment, allowed, kubeconfig_with_token
from tests.operator.operator_identity import request_token as request_token_for
from tests.operator.support import MODERN_IMAGE, OPERATOR
from tests.program.graph import run_program
from workloads.cluster.scaling import ClusterScaler, api_from_kubeconfig

pytestmark = pytest.mark.apiserver

# starts with 2 GPU workers, autoscales between 1 and the dev stack's 2 GPU nodes
CONFIG = {**OPERATOR, "gpuWorkers": 2}
WAIT_S = 90.0


def program_objects(namespace: str, **config) -> dict[str, dict]:
    """The program's operator resources, built for ``namespace`` (the test's) as ``daskNamespace``."""
    return {m["kind"]: m for m in program_manifests(namespace, **config)
            if m["apiVersion"].startswith("kubernetes.dask.org/")}


def program_manifests(namespace: str, **config) -> list[dict]:
    graph = run_program("dev", config={**CONFIG, "daskNamespace": namespace, **config})
    assert graph.error is None, graph.traceback
    return [r.manifest() for r in graph.kubernetes_objects()]


def runner_scaler(server, namespace: str) -> ClusterScaler:
    """The runner's scaler as it makes one from the stack outputs: the program's namespaced
    identity (tests/apiserver/runner_identity.py) applied, its kubeconfig on a token the server
    issues, nothing of the admin's."""
    apply_runner_identity(server.api_client, program_manifests(namespace), namespace)
    kubeconfig = kubeconfig_for(server.kubeconfig, request_token(server.api_client, namespace), namespace)
    return ClusterScaler(api_from_kubeconfig(kubeconfig), namespace, "dask", echo=lambda _: None)


@pytest.fixture
def controller(kube_apiserver, operator_crds, kube_namespace, tmp_path):
    """The controller as the program deploys it: the operator chart's account with only the RBAC
    the chart renders from the program's values and the program's Role in the Dask namespace
    (tests/operator/operator_identity.py), on a token the server issues for it, with the chart's
    kopf flags (the namespaces it watches)."""
    api = kube_apiserver.api_client
    deployment = OperatorDeployment.of_program("dev", {**CONFIG, "daskNamespace": kube_namespace})
    deployment.apply(api)
    for elsewhere in ("default", "gpu-operator", None):  # only the namespaced rights
        assert not allowed(api, deployment.user, "create", "pods", elsewhere), f"{deployment.user} in {elsewhere}"
    token = request_token_for(api, deployment.operator_namespace, deployment.service_account)
    kubeconfig = kubeconfig_with_token(kube_apiserver.kubeconfig, token, tmp_path / "operator.kubeconfig")
    log_path = tmp_path / "controller.log"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(KUBECONFIG=str(kubeconfig), NO_PROXY="127.0.0.1,localhost",
               PYTHONWARNINGS="ignore::UserWarning")
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", *deployment.kopf_args(), "--verbose",
             "-m", "dask_kubernetes.operator.controller"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        yield Controller(proc, log_path)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)


class Controller:
    def __init__(self, proc: subprocess.Popen, log_path):
        self.proc, self.log_path = proc, log_path

    def log(self, lines: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def failed_handlers(self) -> set[str]:
        """Handlers kopf reported as failed. The autoscaler's timer fails while no scheduler pod
        exists (kr8s raises NotFoundError where the handler catches only ValueError) and is
        retried every 5 s: expected here, where no pod ever starts."""
        return set(re.findall(r"(?:Handler|Timer) '([^'/]+)[^']*' failed", self.log_path.read_text(errors="replace")))

    def wait(self, what: str, check, timeout: float = WAIT_S):
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if self.proc.poll() is not None:
                pytest.fail(f"the controller exited ({self.proc.returncode}) while waiting for {what}:\n{self.log()}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} after {timeout:.0f} s; controller log:\n{self.log()}")
            time.sleep(0.5)


def deployments(api, namespace: str, selector: str) -> list[dict]:
    answer = api_request(api, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments",
                         query={"labelSelector": selector})
    return answer["items"]


def workers(api, namespace: str) -> list[dict]:
    return deployments(api, namespace, "dask.org/component=worker,dask.org/workergroup-name=dask-default")


def create(api, manifest: dict, namespace: str) -> dict:
    assert manifest["metadata"]["namespace"] == namespace
    return apply_manifest(api, manifest)


def test_the_controller_reconciles_the_programs_cluster_and_scales_it(kube_apiserver, kube_namespace, controller):
    api = kube_apiserver.api_client
    objects = program_objects(kube_namespace)
    create(api, objects["DaskCluster"], kube_namespace)
    create(api, objects["DaskAutoscaler"], kube_namespace)

    # the scheduler: a Deployment off the GPU nodes and the Service the workers dial
    [scheduler] = controller.wait("scheduler Deployment", lambda: deployments(
        api, kube_namespace, "dask.org/cluster-name=dask,dask.org/component=scheduler"))
    assert scheduler["metadata"]["name"] == "dask-scheduler"
    pod = scheduler["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == MODERN_IMAGE
    assert pod["nodeSelector"][POOL_ROLE_LABEL] not in ("gpu", None)
    assert scheduler["metadata"]["ownerReferences"][0]["kind"] == "DaskCluster"
    service = controller.wait("scheduler Service", lambda: _maybe(
        lambda: get_object(api, "v1", "Service", "dask-scheduler", kube_namespace)))
    assert [p["name"] for p in service["spec"]["ports"]] == ["tcp-comm", "http-dashboard"]

    # the default worker group and its two GPU workers, as the program built them
    group = controller.wait("DaskWorkerGroup dask-default", lambda: _maybe(
        lambda: get_object(api, "kubernetes.dask.org/v1", "DaskWorkerGroup", "dask-default", kube_namespace)))
    assert group["spec"]["worker"] == objects["DaskCluster"]["spec"]["worker"]
    two = controller.wait("2 worker Deployments", lambda: (lambda w: w if len(w) == 2 else None)(
        workers(api, kube_namespace)))
    for deployment in two:
        pod = deployment["spec"]["template"]["spec"]
        [c] = pod["containers"]
        assert c["image"] == MODERN_IMAGE
        assert c["resources"]["limits"]["nvidia.com/gpu"] == c["resources"]["requests"]["nvidia.com/gpu"] == "1"
        assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {POOL_ROLE_LABEL: "gpu"}
        # an image of no recorded user: RUN_AS, with a home of its own holding pip's cache
        assert {m["mountPath"] for m in c["volumeMounts"]} == {"/ml-share", "/home/dask", "/home/dask/.cache/pip",
                                                               "/scratch", "/etc/dask/tls"}
        assert pod["securityContext"]["runAsUser"] == 1000 and pod["securityContext"]["runAsNonRoot"] is True
        # the pod security the program set reaches the Deployment unchanged
        assert pod["automountServiceAccountToken"] is False
        assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["DASK_WORKER_NAME"] == deployment["metadata"]["name"]
        assert env["DASK_SCHEDULER_ADDRESS"] == f"tls://dask-scheduler.{kube_namespace}.svc.cluster.local:8786"
        assert deployment["metadata"]["ownerReferences"][0]["kind"] == "DaskWorkerGroup"

    # the runner's scaling: pin the autoscaler to 4 and the group's replicas to 4
    with runner_scaler(kube_apiserver, kube_namespace) as scaler:
        assert scaler.replicas() == 2
        scaler.pin(4)
        four = controller.wait("4 worker Deployments", lambda: (lambda w: w if len(w) == 4 else None)(
            workers(api, kube_namespace)))
        assert {d["metadata"]["name"] for d in two} < {d["metadata"]["name"] for d in four}
        bounds = get_object(api, "kubernetes.dask.org/v1", "DaskAutoscaler", "dask", kube_namespace)["spec"]
        assert (bounds["minimum"], bounds["maximum"]) == (4, 4)
    bounds = get_object(api, "kubernetes.dask.org/v1", "DaskAutoscaler", "dask", kube_namespace)["spec"]
    declared = objects["DaskAutoscaler"]["spec"]
    assert (bounds["minimum"], bounds["maximum"]) == (declared["minimum"], declared["maximum"]) == (1, 2)
    assert controller.failed_handlers() <= {"daskautoscaler_adapt"}, controller.log(400)


def test_a_dask_cluster_patched_from_2_to_4_workers_gets_4(kube_apiserver, kube_namespace, controller):
    """The DaskCluster's own replicas (what ``pulumi up`` changes) reach the worker group; and
    an adaptive run on a cluster deployed without an autoscaler gets one for the run only."""
    api = kube_apiserver.api_client
    create(api, program_objects(kube_namespace, daskAutoscale=False)["DaskCluster"], kube_namespace)
    controller.wait("2 worker Deployments", lambda: len(workers(api, kube_namespace)) == 2)
    patch_object(api, "kubernetes.dask.org/v1", "DaskCluster", "dask", {"spec": {"worker": {"replicas": 4}}},
                 namespace=kube_namespace)
    controller.wait("4 worker Deployments", lambda: len(workers(api, kube_namespace)) == 4)

    # --adaptive on a cluster deployed without an autoscaler: one is made for the run, then removed
    with runner_scaler(kube_apiserver, kube_namespace) as scaler:
        scaler.adapt(1, 3)
        scaler_object = get_object(api, "kubernetes.dask.org/v1", "DaskAutoscaler", "dask", kube_namespace)
        assert scaler_object["spec"] == {"cluster": "dask", "minimum": 1, "maximum": 3}
        controller.wait("the autoscaler adopted by the cluster", lambda: (get_object(
            api, "kubernetes.dask.org/v1", "DaskAutoscaler", "dask", kube_namespace)["metadata"].get(
            "ownerReferences") or [{}])[0].get("kind") == "DaskCluster")
    # deleted: gone once the controller has dropped kopf's finalizer
    controller.wait("the autoscaler gone", lambda: _maybe(
        lambda: get_object(api, "kubernetes.dask.org/v1", "DaskAutoscaler", "dask", kube_namespace)) is None)


def _maybe(get):
    try:
        return get()
    except KubeApiError as exc:
        if exc.status == 404:
            return None
        raise
