"""Resizing the deployed cluster between the runs of a sweep, and adaptive runs.

With the operator backend (stack output ``daskBackend=operator``) the GPU workers are the
``<cluster>-default`` DaskWorkerGroup of a DaskCluster: ``--workers 1,2,4,8`` sets its
replicas before each run and waits until exactly that many workers are connected, so the
other GPUs are released, not just left idle. While a DaskAutoscaler exists it would undo a
fixed size within seconds (it rewrites the group's replicas every 5 s, dask-kubernetes
2026.3.0 ``daskautoscaler_adapt``), so a fixed size pins its bounds to the size too and
:meth:`ClusterScaler.restore` puts the deployed bounds back. ``--adaptive MIN,MAX`` sets the
autoscaler's bounds for a run; the worker count over time comes from the utilization samples
(:func:`worker_count_timeline`).

With the Helm backend the worker count is fixed: the runner restricts a run to a subset of
the workers and says so once (:func:`helm_restriction_notice`).

Talks to Kubernetes with the ``kubernetes`` client and the stack's ``runnerKubeconfig`` output,
the runner's namespaced identity (components/dask/runner_access.py): its Role lets it set the
worker group's replicas only through the group's ``scale`` subresource (the pinned CRD's
``.spec.worker.replicas``), never patch the group itself, and read, patch, create and delete
the DaskAutoscaler named after the cluster. Talks to Dask only through the runner's ``Client``.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from workloads.contract import RUNNER_KUBECONFIG

GROUP, VERSION = "kubernetes.dask.org", "v1"
WORKER_GROUPS, AUTOSCALERS = "daskworkergroups", "daskautoscalers"


class ScalingError(RuntimeError):
    """The cluster could not be resized, or did not reach the size in time."""


def parse_adaptive(text: str) -> tuple[int, int]:
    """``--adaptive MIN,MAX`` -> (MIN, MAX); raises ValueError naming what is wrong."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"--adaptive takes MIN,MAX (two whole numbers, e.g. 1,8), got {text!r}")
    minimum, maximum = int(parts[0]), int(parts[1])
    if maximum < 1 or minimum > maximum:
        raise ValueError(f"--adaptive {text}: needs 0 <= MIN <= MAX and MAX >= 1")
    return minimum, maximum


def helm_restriction_notice(connected: int) -> str:
    """What the runner says once when it cannot resize (the Helm backend)."""
    return (f"the Helm backend runs a fixed {connected} worker(s): each run of the sweep is restricted to the"
            " workers it asks for and the others stay idle (their GPUs held); deploy with daskBackend=operator"
            " to resize the cluster between runs")


def api_from_kubeconfig(kubeconfig: str) -> Any:
    """A ``CustomObjectsApi`` for the guest cluster from the runner's kubeconfig text (kept in memory)."""
    import kubernetes.client
    import kubernetes.config
    import yaml

    try:
        config = yaml.safe_load(kubeconfig)
    except yaml.YAMLError as exc:
        raise ScalingError(f"the stack's {RUNNER_KUBECONFIG} output is not YAML: {exc}") from None
    if not isinstance(config, dict) or not config.get("clusters"):
        raise ScalingError(f"the stack's {RUNNER_KUBECONFIG} output holds no cluster: read the outputs with"
                           " --show-secrets")
    return kubernetes.client.CustomObjectsApi(kubernetes.config.new_client_from_config_dict(config))


@dataclass
class ClusterScaler:
    """The operator's DaskCluster ``cluster`` in ``namespace``, through a ``CustomObjectsApi``."""

    api: Any
    namespace: str
    cluster: str
    echo: Callable[[str], None] = print
    _deployed_bounds: dict[str, int] | None = field(default=None, repr=False)
    _created_autoscaler: bool = field(default=False, repr=False)

    @classmethod
    def from_outputs(cls, outputs: Any, echo: Callable[[str], None] = print) -> ClusterScaler | None:
        """For ``contract.StackOutputs`` of the operator backend; None for the Helm backend."""
        if getattr(outputs, "backend", "helm") != "operator":
            return None
        if not outputs.kubeconfig:
            raise ScalingError(f"the operator backend is resized through Kubernetes, but the stack outputs carry no"
                               f" {RUNNER_KUBECONFIG}: read them with --show-secrets (a stack deployed before the"
                               " runner had its own identity exports only the admin kubeconfig, which the runner"
                               " does not use: run pulumi up)")
        return cls(api_from_kubeconfig(outputs.kubeconfig), outputs.namespace, outputs.dask_cluster, echo)

    def __enter__(self) -> ClusterScaler:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.restore()  # also after a failed or interrupted sweep

    @property
    def worker_group(self) -> str:
        return f"{self.cluster}-default"  # the DaskCluster's own group (controller.py)

    def _get(self, plural: str, name: str) -> dict | None:
        return self._read(f"{plural}/{name}", self.api.get_namespaced_custom_object, plural, name)

    def _get_scale(self, plural: str, name: str) -> dict | None:
        """The object's ``scale`` subresource (autoscaling/v1 Scale), None when there is no object."""
        return self._read(f"{plural}/{name}/scale", self.api.get_namespaced_custom_object_scale, plural, name)

    def _read(self, what: str, call: Any, plural: str, name: str) -> dict | None:
        """``call`` for the object (None when there is none); any other refusal named."""
        from kubernetes.client.exceptions import ApiException

        try:
            return call(GROUP, VERSION, self.namespace, plural, name)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise ScalingError(f"reading {what} in {self.namespace}: HTTP {exc.status} {exc.reason}") from None

    def _patch_scale(self, plural: str, name: str, replicas: int) -> dict:
        from kubernetes.client.exceptions import ApiException

        try:
            return self.api.patch_namespaced_custom_object_scale(GROUP, VERSION, self.namespace, plural, name,
                                                                 {"spec": {"replicas": replicas}})
        except ApiException as exc:
            raise ScalingError(f"patching {plural}/{name}/scale in {self.namespace}: HTTP {exc.status} {exc.reason}"
                               f" {exc.body or ''}".strip()) from None

    def _patch(self, plural: str, name: str, body: dict) -> dict:
        from kubernetes.client.exceptions import ApiException

        try:
            return self.api.patch_namespaced_custom_object(GROUP, VERSION, self.namespace, plural, name, body)
        except ApiException as exc:
            raise ScalingError(f"patching {plural}/{name} in {self.namespace}: HTTP {exc.status} {exc.reason}"
                               f" {exc.body or ''}".strip()) from None

    def replicas(self) -> int:
        scale = self._get_scale(WORKER_GROUPS, self.worker_group)
        if scale is None:
            raise ScalingError(f"no DaskWorkerGroup {self.worker_group!r} in {self.namespace}: is the DaskCluster"
                               f" {self.cluster!r} deployed and its operator running?")
        return int(scale["spec"].get("replicas") or 0)

    def pin(self, workers: int) -> None:
        """A fixed size: the autoscaler's bounds (if one exists) and the group's replicas to ``workers``."""
        if workers < 0:
            raise ScalingError(f"cannot scale to {workers} workers")
        scaler = self._get(AUTOSCALERS, self.cluster)
        if scaler is not None:
            if self._deployed_bounds is None:
                self._deployed_bounds = {k: scaler["spec"][k] for k in ("minimum", "maximum")}
            self._patch(AUTOSCALERS, self.cluster, {"spec": {"minimum": workers, "maximum": workers}})
        self._patch_scale(WORKER_GROUPS, self.worker_group, workers)
        self.echo(f"scaling: {self.worker_group} to {workers} worker(s)")

    def adapt(self, minimum: int, maximum: int) -> None:
        """Adaptive scaling between ``minimum`` and ``maximum`` GPU workers for a run."""
        scaler = self._get(AUTOSCALERS, self.cluster)
        bounds = {"minimum": minimum, "maximum": maximum}
        if scaler is None:
            self.api.create_namespaced_custom_object(GROUP, VERSION, self.namespace, AUTOSCALERS, {
                "apiVersion": f"{GROUP}/{VERSION}", "kind": "DaskAutoscaler",
                "metadata": {"name": self.cluster}, "spec": {"cluster": self.cluster, **bounds}})
            self._created_autoscaler = True
        else:
            if self._deployed_bounds is None:
                self._deployed_bounds = {k: scaler["spec"][k] for k in ("minimum", "maximum")}
            self._patch(AUTOSCALERS, self.cluster, {"spec": bounds})
        self.echo(f"scaling: adaptive, {minimum} to {maximum} worker(s)")

    def restore(self) -> None:
        """The autoscaler as deployed: its bounds back, or gone if this scaler made it."""
        if self._created_autoscaler:
            self.api.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, AUTOSCALERS, self.cluster)
            self._created_autoscaler = False
        elif self._deployed_bounds is not None:
            self._patch(AUTOSCALERS, self.cluster, {"spec": self._deployed_bounds})
            self.echo(f"scaling: autoscaler back to {self._deployed_bounds['minimum']}"
                      f"-{self._deployed_bounds['maximum']} worker(s)")
            self._deployed_bounds = None


def wait_for_worker_count(client: Any, workers: int, timeout: float, poll: float = 0.5,
                          echo: Callable[[str], None] | None = None) -> list[str]:
    """Wait until exactly ``workers`` workers are connected (scaling down waits for the
    retired ones to leave); return their addresses, sorted. Raises ScalingError on timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        connected = sorted(client.scheduler_info(n_workers=-1)["workers"])
        if len(connected) == workers:
            return connected
        if echo is not None and len(connected) != last:
            echo(f"scaling: {len(connected)} worker(s) connected, waiting for {workers}")
        last = len(connected)
        if time.monotonic() >= deadline:
            raise ScalingError(f"the cluster has {len(connected)} worker(s) after {timeout:.0f} s, not the {workers}"
                               " asked for (GPU nodes busy or pods Pending? see kubectl get pods)")
        time.sleep(poll)


def worker_count_timeline(samples: Iterable[dict[str, Any]], bin_s: float = 5.0) -> list[dict[str, Any]]:
    """Worker count over a run from the utilization samples (``workloads.observe.utilization``): per
    ``bin_s`` seconds, how many workers reported, and their mean CPU and GPU utilization."""
    bins: dict[int, dict[str, Any]] = {}
    for sample in samples:
        slot = bins.setdefault(int(sample["t"] // bin_s), {"workers": set(), "cpu": [], "gpu": []})
        slot["workers"].add(sample["worker"])
        if sample.get("cpu") is not None:
            slot["cpu"].append(sample["cpu"])
        if sample.get("gpu_utilization") is not None:
            slot["gpu"].append(sample["gpu_utilization"])
    return [{"t": index * bin_s, "workers": len(slot["workers"]),
             "cpu": _mean(slot["cpu"]), "gpu_utilization": _mean(slot["gpu"])}
            for index, slot in sorted(bins.items())]


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None
