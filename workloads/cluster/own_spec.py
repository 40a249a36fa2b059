"""A person's DaskCluster, from the stack's ``teamClusterSpec`` output.

The program exports the spec it builds for the shared cluster (its image, worker resources
with ``nvidia.com/gpu``, environment, the dataset claims mounted read-only by name, node
selectors and tolerations) without TLS and with no workers. This module turns it into one
cluster of the person's: it names the cluster and its namespace wherever the spec names them,
sets the workers and the idle timeout, and adds the cluster's own TLS as the stack adds its
own. Pure: no API call, so the spec is tested without a cluster.

What names a cluster in a DaskCluster (dask-kubernetes 2026.3.0):
- ``spec.scheduler.service`` is copied into the Service as it is (controller.py
  ``build_scheduler_service_spec``), so its selector must carry ``dask.org/cluster-name``
  (as upstream's ``make_scheduler_spec`` writes it);
- each worker dials the scheduler at the address in its arguments, else at
  ``DASK_SCHEDULER_ADDRESS``, which the controller sets to ``tcp://`` unless the container
  sets its own (controller.py ``build_worker_deployment_spec``): a TLS cluster sets both.
- ``idleTimeout``: the controller deletes a DaskCluster whose scheduler has been idle that
  many seconds, asking the scheduler's HTTP API every 5 s (controller.py
  ``daskcluster_autoshutdown``, ``check_scheduler_idle``); 0 never. ``KubeCluster``'s own
  ``idle_timeout`` argument goes only into the spec it generates itself
  (kubecluster.py ``_create_cluster``: ``make_cluster_spec(..., idle_timeout=...)`` unless
  ``custom_cluster_spec`` is given), so it is written into the spec here.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from workloads import contract
from workloads.contract import CLUSTER_LABEL, COMPONENT_LABEL

API_VERSION = "kubernetes.dask.org/v1"
SCHEDULER_PORT = 8786
DASHBOARD_PORT = 8787
ADDRESS_PREFIXES = ("tcp://", "tls://")


def scheduler_host(name: str, namespace: str) -> str:
    return f"{name}-scheduler.{namespace}.svc.cluster.local"


def scheduler_address(name: str, namespace: str) -> str:
    return f"tls://{scheduler_host(name, namespace)}:{SCHEDULER_PORT}"


def dashboard_url(name: str, namespace: str) -> str:
    """The dashboard stays HTTP: the controller's idle check and retirement call it so."""
    return f"http://{scheduler_host(name, namespace)}:{DASHBOARD_PORT}"


def scheduler_names(name: str, namespace: str) -> list[str]:
    """Every name of the scheduler's Service a client may dial, for its certificate."""
    service = f"{name}-scheduler"
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", scheduler_host(name, namespace)]


def build(team_spec: Mapping[str, Any], *, name: str, namespace: str, workers: int, idle_timeout: int,
          secret: str) -> dict[str, Any]:
    """The DaskCluster ``name`` in ``namespace``: ``workers`` workers, ``idleTimeout``, its
    TLS Secret ``secret`` mounted by the scheduler and the workers."""
    spec = copy.deepcopy(dict(team_spec))
    spec["idleTimeout"] = int(idle_timeout)
    scheduler, worker = spec["scheduler"], spec["worker"]
    worker["replicas"] = int(workers)
    service = scheduler.setdefault("service", {})
    service["selector"] = {**(service.get("selector") or {}), CLUSTER_LABEL: name, COMPONENT_LABEL: "scheduler"}
    for container in scheduler["spec"]["containers"]:
        container["args"] = with_tls_protocol(container.get("args") or [])
    address = scheduler_address(name, namespace)
    for container in worker["spec"]["containers"]:
        container["args"] = with_scheduler_address(container.get("args") or [], address)
        _set_env(container, [{"name": "DASK_SCHEDULER_ADDRESS", "value": address}])
    for role, part in (("scheduler", scheduler), ("worker", worker)):
        _add_tls(part["spec"], role, secret)
    return {"apiVersion": API_VERSION, "kind": "DaskCluster",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "dask-tkg-runner"}},
            "spec": spec}


def with_tls_protocol(args: list[str]) -> list[str]:
    """The scheduler's arguments listening on TLS only (``--protocol tls``)."""
    args = list(args)
    for i, arg in enumerate(args):
        if arg == "--protocol" and i + 1 < len(args):
            args[i + 1] = "tls"
            return args
        if arg.startswith("--protocol="):
            args[i] = "--protocol=tls"
            return args
    return [*args, "--protocol", "tls"]


def with_scheduler_address(args: list[str], address: str) -> list[str]:
    """A worker's arguments dialling ``address``: an address there is replaced, else it goes
    before the first option (``dask worker ADDR --name ...``, ``dask-cuda-worker ADDR ...``)."""
    args = list(args)
    for i, arg in enumerate(args):
        if arg.startswith(ADDRESS_PREFIXES):
            args[i] = address
            return args
    first_option = next((i for i, arg in enumerate(args) if arg.startswith("-")), len(args))
    return [*args[:first_option], address, *args[first_option:]]


def _set_env(container: dict[str, Any], env: list[dict[str, Any]]) -> None:
    """``env`` set in the container, replacing variables of the same name."""
    names = {e["name"] for e in env}
    container["env"] = [e for e in container.get("env") or [] if e["name"] not in names] + list(env)


def _add_tls(pod_spec: dict[str, Any], role: str, secret: str) -> None:
    """The role's TLS files mounted and named in each container, as the stack's pods have them."""
    volumes = [v for v in pod_spec.get("volumes") or [] if v["name"] != contract.TLS_VOLUME]
    pod_spec["volumes"] = [*volumes, contract.tls_volume(role, secret)]
    for container in pod_spec["containers"]:
        mounts = [m for m in container.get("volumeMounts") or [] if m["name"] != contract.TLS_VOLUME]
        container["volumeMounts"] = [*mounts, dict(contract.TLS_MOUNT)]
        _set_env(container, contract.tls_env(role))


def worker_image(cluster: Mapping[str, Any]) -> str:
    return cluster["spec"]["worker"]["spec"]["containers"][0].get("image", "")
