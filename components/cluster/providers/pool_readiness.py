"""``pulumi up`` waits for the GPU node pools of a Cluster API Cluster, not only for the Cluster.

The Cluster's Ready condition, which ``pulumi.com/waitFor`` waits for, summarises the
control plane and the infrastructure; the worker pools' machines may still be provisioning
(8 vGPU VMs in the full stack) when it turns true, and the GPU operator and Dask would start
on a cluster without GPU nodes. ``GpuPoolsReady`` polls the Supervisor until the
MachineDeployment of each GPU pool has all its replicas ready.

Cluster API v1.10.10 (kubernetes-sigs/cluster-api@5757c1c5, the release whose CRDs
``scripts/artifacts.toml`` pins), what this relies on:

- each MachineDeployment the topology controller makes for
  ``Cluster.spec.topology.workers.machineDeployments[]`` carries the labels
  ``cluster.x-k8s.io/cluster-name: <cluster>`` and
  ``topology.cluster.x-k8s.io/deployment-name: <that entry's name>``
  (exp/topology/desiredstate/desired_state.go, computeMachineDeployment; the names:
  api/v1beta1/common_types.go, ``ClusterNameLabel``,
  ``ClusterTopologyMachineDeploymentNameLabel``); its own name is generated, so the pool is
  found by the label, as the controller itself does (internal/controllers/topology/cluster/
  current_state.go, getCurrentMachineDeploymentState);
- ``spec.replicas`` is the topology entry's ``replicas``; ``status.readyReplicas``,
  ``status.observedGeneration``, ``status.phase`` (ScalingUp, ScalingDown, Running, Failed,
  Unknown) and ``status.conditions`` (``MachinesReady`` among them, api/v1beta1/
  condition_consts.go) are in the v1beta1 schema (config/crd/bases/
  cluster.x-k8s.io_machinedeployments.yaml, the pinned CRD), status behind the ``status``
  subresource.

A pool is ready when its MachineDeployment's controller has seen the current spec
(``observedGeneration >= generation``) and ``readyReplicas`` reaches both ``spec.replicas``
and the replicas the program declares (the topology controller may not have copied a new
count yet). The Supervisor is read with the kubeconfig the Cluster's provider uses, kept a
secret in the state.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic as dyn
import requests

from components.cluster.providers.kube_api import ApiTarget, KubeApiError, api_session, get_json, parse_kubeconfig
from components.vsphere.providers.session import changed_keys

MACHINE_DEPLOYMENTS = "/apis/cluster.x-k8s.io/v1beta1/namespaces/{namespace}/machinedeployments"
CLUSTER_NAME_LABEL = "cluster.x-k8s.io/cluster-name"
DEPLOYMENT_NAME_LABEL = "topology.cluster.x-k8s.io/deployment-name"
TIMEOUT_SETTING = "gpuPoolsReadyTimeoutMinutes"
# answers that no retry changes: the credentials or the API itself are wrong
FATAL_STATUSES = (401, 403, 404)
REPLACE_KEYS = ("namespace", "cluster_name")
WAIT_KEYS = ("pools", "revision", "timeout_seconds")


class PoolsNotReadyError(RuntimeError):
    """A GPU pool did not come up in time, or the Supervisor refused the read."""


@dataclass(frozen=True)
class PoolState:
    """What the Supervisor says of one GPU pool's MachineDeployment."""

    pool: str
    wanted: int  # the replicas the program declares
    machine_deployment: str = ""  # "" when none carries the pool's label
    desired: int = 0
    ready_replicas: int = 0
    current: bool = False  # its controller has seen the current spec
    phase: str = ""
    failing: tuple[str, ...] = ()  # "Type (Reason): message" of each condition that is False

    @property
    def ready(self) -> bool:
        return bool(self.machine_deployment) and self.current and self.ready_replicas >= self.desired

    def describe(self) -> str:
        if not self.machine_deployment:
            return (f"GPU pool {self.pool!r}: no MachineDeployment labelled {DEPLOYMENT_NAME_LABEL}={self.pool}"
                    f" ({self.wanted} replicas wanted)")
        seen = "" if self.current else ", its controller has not seen the current spec yet"
        failing = "; ".join(self.failing) or "no failing condition"
        return (f"GPU pool {self.pool!r} (MachineDeployment {self.machine_deployment}): {self.ready_replicas}/"
                f"{self.desired} replicas ready, phase {self.phase or 'unknown'}{seen}; {failing}")


def _failing(status: Mapping[str, Any]) -> tuple[str, ...]:
    conditions = [*(status.get("conditions") or []), *((status.get("v1beta2") or {}).get("conditions") or [])]
    found: list[str] = []
    for c in conditions:
        if str(c.get("status")) == "False":
            text = f"{c.get('type')} False ({c.get('reason') or 'no reason'})" + (
                f": {c['message']}" if c.get("message") else "")
            if text not in found:
                found.append(text)
    return tuple(found)


def pool_state(pool: str, wanted: int, deployment: Mapping[str, Any] | None) -> PoolState:
    """The state of ``pool`` from its MachineDeployment (None: there is none)."""
    if deployment is None:
        return PoolState(pool, wanted)
    meta, spec, status = deployment["metadata"], deployment.get("spec") or {}, deployment.get("status") or {}
    replicas = spec.get("replicas")
    return PoolState(
        pool, wanted, machine_deployment=meta["name"],
        desired=max(wanted, replicas if replicas is not None else wanted),
        ready_replicas=int(status.get("readyReplicas") or 0),
        current=int(status.get("observedGeneration") or 0) >= int(meta.get("generation") or 0),
        phase=status.get("phase") or "", failing=_failing(status))


def read_pools(session: requests.Session, target: ApiTarget, namespace: str, cluster: str,
               pools: Mapping[str, int]) -> list[PoolState]:
    """One read of the cluster's MachineDeployments: the state of each pool in ``pools``."""
    answer = get_json(session, target, MACHINE_DEPLOYMENTS.format(namespace=namespace),
                      {"labelSelector": f"{CLUSTER_NAME_LABEL}={cluster}"})
    by_pool = {(md["metadata"].get("labels") or {}).get(DEPLOYMENT_NAME_LABEL): md for md in answer.get("items") or []}
    return [pool_state(pool, wanted, by_pool.get(pool)) for pool, wanted in pools.items()]


def _timeout_message(namespace: str, cluster: str, timeout_s: float, states: list[PoolState],
                     last_error: str) -> str:
    pending = [s for s in states if not s.ready] if states else []
    after = f"{timeout_s / 60:g} min" if timeout_s % 60 == 0 else f"{timeout_s:g} s"
    lines = [f"the GPU pools of Cluster {namespace}/{cluster} were not ready after {after}"
             f" ({TIMEOUT_SETTING}):", *(f"  {s.describe()}" for s in pending)]
    if last_error:
        lines.append(f"  the last read of the Supervisor failed: {last_error}")
    return "\n".join(lines)


def wait_for_pools(target: ApiTarget, namespace: str, cluster: str, pools: Mapping[str, int], timeout_s: float,
                   poll_s: float = 15.0, clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> list[PoolState]:
    """Poll until every pool is ready; PoolsNotReadyError naming each one that is not, at
    ``timeout_s``. A failed read is tried again (the Supervisor's API may blink) unless the
    answer says the credentials or the API are wrong."""
    deadline = clock() + timeout_s
    states: list[PoolState] = []
    with api_session(target) as session:
        while True:
            last_error = ""
            try:
                states = read_pools(session, target, namespace, cluster, pools)
            except KubeApiError as exc:
                if exc.status in FATAL_STATUSES:
                    raise PoolsNotReadyError(f"cannot read the MachineDeployments of Cluster {namespace}/{cluster}:"
                                             f" {exc}") from None
                last_error = str(exc)
            if not last_error and all(s.ready for s in states):
                return states
            if clock() >= deadline:
                raise PoolsNotReadyError(_timeout_message(namespace, cluster, timeout_s, states, last_error))
            sleep(max(0.0, min(poll_s, deadline - clock())))


# --- the dynamic resource ----------------------------------------------------------------------

class GpuPoolsReadyProvider(dyn.ResourceProvider):
    """Create and update wait; delete has nothing to undo. The kubeconfig is not compared:
    a login mints a new token on every run, and a new token is no reason to wait again."""

    def _wait(self, props: Mapping[str, Any]) -> dict[str, Any]:
        pools = {p["name"]: int(p["replicas"]) for p in props["pools"]}
        states = wait_for_pools(parse_kubeconfig(props["kubeconfig"]), props["namespace"], props["cluster_name"],
                                pools, float(props["timeout_seconds"]), float(props.get("poll_seconds") or 15))
        ready = {s.pool: f"{s.ready_replicas}/{s.desired}" for s in states}
        return {**props, "ready": ready}

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        outs = self._wait(props)
        return dyn.CreateResult(f"{props['namespace']}/{props['cluster_name']}/gpu-pools", outs)

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        replaces = changed_keys(olds, news, REPLACE_KEYS)
        return dyn.DiffResult(changes=bool(replaces or changed_keys(olds, news, WAIT_KEYS)), replaces=replaces,
                              delete_before_replace=False)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        return dyn.UpdateResult(self._wait(news))


class GpuPoolsReady(dyn.Resource, module="cluster", name="GpuPoolsReady"):
    """Created (and updated) once every GPU pool's MachineDeployment of ``cluster_name`` has
    its replicas ready; ``revision`` changes whenever the pools' declaration does, so a
    change that rolls their machines waits again. Outputs ``ready``: pool -> "ready/desired".
    """

    ready: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *,
                 kubeconfig: pulumi.Input[str], namespace: pulumi.Input[str], cluster_name: pulumi.Input[str],
                 pools: Mapping[str, int], revision: str, timeout_seconds: int, poll_seconds: float = 15) -> None:
        props = {"kubeconfig": pulumi.Output.secret(kubeconfig), "namespace": namespace,
                 "cluster_name": cluster_name, "pools": [{"name": k, "replicas": v} for k, v in pools.items()],
                 "revision": revision, "timeout_seconds": timeout_seconds, "poll_seconds": poll_seconds,
                 "ready": None}
        secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        super().__init__(GpuPoolsReadyProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
