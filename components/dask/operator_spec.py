"""Pure builders of the Dask Kubernetes operator's resources: the ``DaskCluster`` (scheduler
and the default GPU worker group), an optional CPU ``DaskWorkerGroup``, the ``DaskAutoscaler``,
the operator chart's values (the NetworkPolicies: ``network_policy.py``).

Shaped like dask-kubernetes' own ``make_cluster_spec`` / ``make_worker_spec`` /
``make_scheduler_spec`` (dask-kubernetes 2026.3.0, ``operator/kubecluster/kubecluster.py``):
the controller (``operator/controller/controller.py``) copies ``spec.scheduler.spec`` into the
scheduler Deployment, ``spec.scheduler.service`` into its Service, and ``spec.worker.spec``
into one Deployment per worker named ``<group>-worker-<uuid>``, whose name it passes as
``DASK_WORKER_NAME``. What the pods are made of (image, environment, TLS, mounts, resources)
comes from ``podspec``, the source the Helm values use too.

Facts of the controller these builders rely on:
- it looks the scheduler's ports up by name, ``tcp-comm`` and ``http-dashboard``
  (``networking._get_port``), and the autoscaler only acts once the scheduler pod is ready;
- it retires a worker by the name the scheduler knows it by and deletes the Deployment of that
  name, so workers must run with ``--name $(DASK_WORKER_NAME)``;
- it adds ``DASK_SCHEDULER_ADDRESS=tcp://...`` unless the container sets it: a TLS cluster
  sets its own ``tls://`` address;
- it talks to ``/api/v1/retire_workers`` and ``/api/v1/adaptive_target`` on the dashboard port,
  which distributed serves only when ``distributed.http.scheduler.api`` is among the
  scheduler's HTTP routes (not by default: ``distributed/distributed.yaml``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.dask import operator_rbac, podspec
from components.facts import dask_chart
from components.kube.pod_hardening import pod_security_context
from components.settings.model import DaskSpec, OperatorSpec
from workloads.contract import CLUSTER_LABEL, COMPONENT_LABEL

API_VERSION = "kubernetes.dask.org/v1"
# The dask chart's ports: both backends' scheduler Services answer on the same ones.
SCHEDULER_PORT, DASHBOARD_PORT = dask_chart.SCHEDULER_PORT, dask_chart.DASHBOARD_PORT
OPERATOR_IMAGE = "ghcr.io/dask/dask-kubernetes-operator"  # the pinned chart's image (values.yaml)

# distributed's default scheduler routes (distributed.yaml, 2022.10 to 2026.7) plus the HTTP
# API the operator's controller calls.
SCHEDULER_HTTP_ROUTES = [
    "distributed.http.scheduler.prometheus", "distributed.http.scheduler.info",
    "distributed.http.scheduler.json", "distributed.http.health", "distributed.http.proxy",
    "distributed.http.statics", "distributed.http.scheduler.api",
]


@dataclass(frozen=True)
class DaskClusterInputs:
    dask: DaskSpec
    name: str  # the DaskCluster's name: its Services are <name>-scheduler
    # None: namespace-neutral (a person's cluster, components/dask/team/cluster_spec.py): the workers are
    # given no scheduler address, the controller sets DASK_SCHEDULER_ADDRESS in the cluster's own
    namespace: str | None
    scheduler_selector: Mapping[str, str]
    worker_selector: Mapping[str, str]
    cpu_worker_selector: Mapping[str, str]
    claims: podspec.Claims
    initial_workers: int
    tls_secret: str | None = None
    enforces_psp: bool = False  # the cluster admits pods by PodSecurityPolicy (up to 1.24)

    @property
    def operator(self) -> OperatorSpec:
        if self.dask.operator is None:
            raise ValueError("the DaskCluster is built only with daskBackend=operator")
        return self.dask.operator


def scheduler_host(name: str, namespace: str) -> str:
    return f"{name}-scheduler.{namespace}.svc.cluster.local"


def scheduler_address(name: str, namespace: str, tls: bool) -> str:
    return f"{'tls' if tls else 'tcp'}://{scheduler_host(name, namespace)}:{SCHEDULER_PORT}"


def dashboard_url(name: str, namespace: str) -> str:
    return f"http://{scheduler_host(name, namespace)}:{DASHBOARD_PORT}"


def _pod(inputs: DaskClusterInputs, role: podspec.Role, container: dict[str, Any],
         selector: Mapping[str, str]) -> dict[str, Any]:
    """``container`` of ``role`` with its mounts, in its pod (``podspec.role_pod``)."""
    mounts = podspec.role_mounts(inputs.dask, inputs.claims, role)
    if mounts["volumeMounts"]:
        container = {**container, "volumeMounts": mounts["volumeMounts"]}
    return podspec.role_pod(inputs.dask, role, container, mounts["volumes"], selector, inputs.tls_secret,
                            inputs.enforces_psp)


def _quantities(resources: dict[str, Any]) -> dict[str, Any]:
    """The operator's CRDs type every resource quantity as a string (``additionalProperties:
    {type: string}`` in the chart's crds/), unlike a Pod's int-or-string: ``nvidia.com/gpu: 1``
    is rejected by the API server, ``"1"`` is the same quantity."""
    return {kind: {name: str(amount) for name, amount in amounts.items()} for kind, amounts in resources.items()}


def _health_probe(initial_delay: int, period: int) -> dict[str, Any]:
    return {"httpGet": {"port": "http-dashboard", "path": "/health"}, "initialDelaySeconds": initial_delay,
            "periodSeconds": period}


def scheduler_spec(inputs: DaskClusterInputs) -> dict[str, Any]:
    """``spec.scheduler``: the scheduler pod (off the GPU nodes) and its ClusterIP Service."""
    d = inputs.dask
    args = ["dask", "scheduler", "--port", str(SCHEDULER_PORT), "--dashboard-address", f":{DASHBOARD_PORT}"]
    if inputs.tls_secret:
        args += ["--protocol", "tls"]
    env = [{"name": "DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES", "value": repr(SCHEDULER_HTTP_ROUTES)},
           *podspec.role_env(d, "scheduler", inputs.tls_secret)]
    container = {
        "name": "scheduler", "image": d.image, "imagePullPolicy": "IfNotPresent", "args": args, "env": env,
        "resources": _quantities(podspec.resources(d.scheduler.cpu, d.scheduler.memory)),
        "ports": [{"name": "tcp-comm", "containerPort": SCHEDULER_PORT, "protocol": "TCP"},
                  {"name": "http-dashboard", "containerPort": DASHBOARD_PORT, "protocol": "TCP"}],
        "readinessProbe": {**_health_probe(0, 1), "timeoutSeconds": 300},
        "livenessProbe": _health_probe(15, 20),
    }
    service = {
        "type": "ClusterIP",  # exposure is a separate, guarded Service (exposure.py), as for Helm
        "selector": {CLUSTER_LABEL: inputs.name, COMPONENT_LABEL: "scheduler"},
        "ports": [{"name": "tcp-comm", "protocol": "TCP", "port": SCHEDULER_PORT, "targetPort": "tcp-comm"},
                  {"name": "http-dashboard", "protocol": "TCP", "port": DASHBOARD_PORT,
                   "targetPort": "http-dashboard"}],
    }
    return {"spec": _pod(inputs, "scheduler", container, inputs.scheduler_selector), "service": service}


def worker_spec(inputs: DaskClusterInputs, *, replicas: int, gpus: int, cpu: int, memory: str,
                selector: Mapping[str, str]) -> dict[str, Any]:
    """A worker group's ``worker``: GPU workers with ``gpus=1``, CPU-only ones with 0."""
    d = inputs.dask
    command = [podspec.worker_command(d)] if gpus else ["dask", "worker"]
    threads = d.workers.threads if gpus else cpu
    args = [*command, "--name", "$(DASK_WORKER_NAME)", "--nthreads", str(threads),
            "--memory-limit", podspec.worker_memory_limit(memory), "--no-dashboard",
            "--local-directory", podspec.SCRATCH_MOUNT]
    env = podspec.role_env(d, "worker", inputs.tls_secret)
    if inputs.namespace is not None:
        address = scheduler_address(inputs.name, inputs.namespace, bool(inputs.tls_secret))
        args.insert(len(command), address)
        env.append({"name": "DASK_SCHEDULER_ADDRESS", "value": address})
    container = {
        "name": "worker", "image": d.image, "imagePullPolicy": "IfNotPresent", "args": args, "env": env,
        "resources": _quantities(podspec.resources(cpu, memory, gpus)),
    }
    return {"replicas": replicas, "spec": _pod(inputs, "worker", container, selector)}


def dask_cluster(inputs: DaskClusterInputs) -> dict[str, Any]:
    """The ``DaskCluster``: scheduler plus the default worker group of GPU workers."""
    d = inputs.dask
    gpu_workers = worker_spec(inputs, replicas=inputs.initial_workers, gpus=d.workers.gpus, cpu=d.workers.cpu,
                              memory=d.workers.memory, selector=inputs.worker_selector)
    return {
        "apiVersion": API_VERSION, "kind": "DaskCluster",
        "metadata": {"name": inputs.name, "namespace": inputs.namespace},
        # idleTimeout 0: the controller must never delete the cluster it was given (Pulumi owns it); its idle
        # GPUs go back through its DaskAutoscaler instead (docs/dask.md, "For a team")
        "spec": {"idleTimeout": 0, "worker": gpu_workers, "scheduler": scheduler_spec(inputs)},
    }


def cpu_worker_group(inputs: DaskClusterInputs) -> dict[str, Any] | None:
    """The optional ``DaskWorkerGroup`` of CPU-only workers on the role=cpu pool (None without)."""
    op = inputs.operator
    if not op.cpu_workers:
        return None
    worker = worker_spec(inputs, replicas=op.cpu_workers, gpus=0, cpu=op.cpu_worker_cpu,
                         memory=op.cpu_worker_memory, selector=inputs.cpu_worker_selector)
    return {
        "apiVersion": API_VERSION, "kind": "DaskWorkerGroup",
        "metadata": {"name": f"{inputs.name}-cpu", "namespace": inputs.namespace},
        "spec": {"cluster": inputs.name, "worker": worker},
    }


def autoscaler(inputs: DaskClusterInputs) -> dict[str, Any] | None:
    """The ``DaskAutoscaler`` of the default (GPU) worker group, or None when it is off."""
    op = inputs.operator
    if not op.autoscale:
        return None
    return {
        "apiVersion": API_VERSION, "kind": "DaskAutoscaler",
        "metadata": {"name": inputs.name, "namespace": inputs.namespace},
        "spec": {"cluster": inputs.name, "minimum": op.min_workers, "maximum": op.max_workers},
    }


def operator_values(op: OperatorSpec, selector: Mapping[str, str], served: list[str],
                    enforces_psp: bool = False) -> dict[str, Any]:
    """Values of the pinned dask-kubernetes-operator chart: its image pinned to the chart's own
    version, the controller watching only the ``served`` namespaces with no RBAC of the chart's
    (the program's Role in each, ``operator_rbac``), off the GPU nodes, the chart's restrictive
    container securityContext kept (values.yaml: non-root 1000, no escalation, every capability
    dropped, read-only root) and the pod's seccomp profile where Pod Security Admission wants one
    (``podSecurityContext``: {} in values.yaml), so the controller's namespace is ``restricted``."""
    # the chart's template writes "name:tag", so a digest rides on the tag
    tag = f"{op.chart_version}@{op.image_digest}" if op.image_digest else op.chart_version
    values: dict[str, Any] = {"image": {"name": OPERATOR_IMAGE, "tag": tag,
                                        "pullPolicy": "IfNotPresent"},
                              **operator_rbac.rbac_values(), "kopfArgs": operator_rbac.kopf_args(served)}
    pod_context = pod_security_context(enforces_psp)
    if pod_context:
        values["podSecurityContext"] = pod_context
    if selector:
        values["nodeSelector"] = dict(selector)
    return values
