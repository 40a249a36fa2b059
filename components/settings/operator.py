"""Settings of the second Dask backend, the Dask Kubernetes operator (``daskBackend``).

Why the image's Dask must be recent (``MIN_OPERATOR_DASK``), from dask-kubernetes 2026.3.0,
the controller the pinned chart runs (``dask_kubernetes/operator/controller/controller.py``):
the controller retires workers (``retire_workers``) and asks for the adaptive target
(``get_desired_workers``) through the scheduler's HTTP API, ``/api/v1/retire_workers`` and
``/api/v1/adaptive_target``. That API exists from distributed 2022.05.1 on (dask/distributed
#6270, ``distributed/http/scheduler/api.py``). Its fallback, the Dask RPC, dials
``tcp://<cluster>-scheduler...`` (``operator/networking.py`` always builds ``tcp://``), which a
TLS scheduler refuses: then scale-down falls back to deleting the newest workers (lost data)
and the autoscaler gets no target at all. And the ``dask-kubernetes`` client the runner
attaches with declares ``dask>=2022.08.1`` / ``distributed>=2022.08.1`` (its pyproject.toml);
the runner's Dask must equal the image's. Finally the pods start with ``dask scheduler`` /
``dask worker``, the only commands a current Dask has (the ``dask-scheduler`` and
``dask-worker`` scripts are gone from distributed 2026.6.0 on, dask/distributed #9240), which
exist from distributed 2022.10.0 on (dask/distributed #6735). So: 2022.10.0.
"""
from __future__ import annotations

import re

import components.settings.values as values
from components.settings.errors import Problem
from components.settings.model import Backend, OperatorSpec, Settings
from components.settings.reader import SettingsReader

BACKENDS = tuple(Backend)
PINNED_OPERATOR_CHART = "2026.3.0"
MIN_OPERATOR_DASK = (2022, 10, 0)
_MIN_TEXT = "2022.10.0"
_OPERATOR_ONLY = ("cpuWorkers",)


def dask_version(text: str) -> tuple[int, ...]:
    """``2021.09.1`` -> (2021, 9, 1); a suffix after the patch number (``rc1``, ``+cu``) is ignored."""
    parts = str(text).lstrip("v").split(".")
    try:
        numbers = [int(parts[0]), int(parts[1])]
        patch = re.sub(r"\D.*", "", parts[2] if len(parts) > 2 else "0") or "0"  # its leading digits
    except (ValueError, IndexError):
        raise ValueError("must be a Dask version such as 2024.1.1") from None
    return (*numbers, int(patch))


def _digest(text: str) -> str:
    if text and not re.fullmatch(r"sha256:[0-9a-f]{64}", text):
        raise ValueError("must be sha256: and 64 lower-case hex digits (docker buildx imagetools inspect"
                         " ghcr.io/dask/dask-kubernetes-operator:<daskOperatorChartVersion>, its Digest)")
    return text


def read_operator(r: SettingsReader, free_gpu_nodes: int) -> OperatorSpec | None:
    """The operator's settings when ``daskBackend`` is ``operator`` (else None). ``r`` is the
    settings reader (``build._Reader``); ``free_gpu_nodes``: GPU nodes Jupyter does not take.

    Every key is read and checked whatever the backend, so that a bad value fails at
    ``pulumi preview`` on the stack that holds it, not later on the day someone switches
    the backend."""
    backend = r.one_of("daskBackend", *BACKENDS)
    maximum = r.at_least("autoscaleMaxWorkers", 0)
    spec = OperatorSpec(
        chart_version=r("daskOperatorChartVersion"),
        namespace=r.check("daskOperatorNamespace", values.rfc1123_label),
        autoscale=r("daskAutoscale"),
        min_workers=r.at_least("autoscaleMinWorkers", 0),
        max_workers=maximum or free_gpu_nodes,  # None only beside a recorded problem
        cpu_workers=r.at_least("cpuWorkers", 0),
        cpu_worker_cpu=r.at_least("cpuWorkerCpu", 1),
        cpu_worker_memory=r.check("cpuWorkerMemory", values.quantity),
        image_digest=r.check("daskOperatorImageDigest", _digest) or "",
    )
    if backend == Backend.OPERATOR:
        return spec
    for key in _OPERATOR_ONLY:
        if r(key):
            r.problems.append(Problem(key, "is read only with daskBackend=operator (the Helm release has one"
                                           " worker group): set daskBackend=operator or leave it 0"))
    return None


def operator_checks(s: Settings) -> list[Problem]:
    """Cross-field checks of the operator backend (none for the Helm backend)."""
    op = s.dask.operator
    if not s.dask.on_operator or op is None:
        return []
    out = []
    try:
        found = dask_version(s.dask.dask_version)
    except ValueError as exc:
        out.append(Problem("daskImageDaskVersion", f"{exc} (got {s.dask.dask_version!r})"))
    else:
        if found < MIN_OPERATOR_DASK:
            out.append(Problem("daskImageDaskVersion", (
                f"{s.dask.dask_version} is older than {_MIN_TEXT}, the oldest Dask the pinned operator"
                f" ({op.chart_version}) supports: its controller retires workers and reads the autoscaling"
                " target through the scheduler's HTTP API (/api/v1/retire_workers, /api/v1/adaptive_target,"
                " distributed >= 2022.05.1; its RPC fallback cannot reach a TLS scheduler), dask-kubernetes needs"
                " dask/distributed >= 2022.08.1, and the pods start with `dask scheduler`/`dask worker`"
                f" (distributed >= {_MIN_TEXT}). Use an image with a newer Dask (images/dask-runtime)"
                " and set daskImage/daskImageDaskVersion, or keep daskBackend=helm")))
    if op.chart_version != PINNED_OPERATOR_CHART:
        out.append(Problem("daskOperatorChartVersion", (
            f"{op.chart_version} is not the pinned {PINNED_OPERATOR_CHART}: the DaskCluster this program builds and"
            " its CRDs were checked against that chart only")))
    free = free_gpu_nodes(s)
    if op.max_workers > free:
        out.append(Problem("autoscaleMaxWorkers", (
            f"{op.max_workers} GPU workers need {op.max_workers} GPU nodes but only {free} are free for workers"
            f" ({s.gpu_nodes} in role=gpu pools{', one taken by Jupyter' if free < s.gpu_nodes else ''});"
            " Kubernetes does not share a GPU between pods")))
    if op.min_workers > op.max_workers:
        out.append(Problem("autoscaleMinWorkers", (
            f"{op.min_workers} is more than autoscaleMaxWorkers ({op.max_workers}): the minimum must be <= the"
            " maximum")))
    if op.cpu_workers and not s.cluster.pools("cpu"):
        out.append(Problem("cpuWorkers", "CPU workers need a node pool with role=cpu (nodePools)"))
    return out


def free_gpu_nodes(s: Settings) -> int:
    """GPU nodes the Dask workers may use: the role=gpu pools less the one Jupyter takes (topology B)."""
    jupyter_on_gpu_node = (s.dask.jupyter.enabled and s.dask.jupyter.gpu
                           and not any(p.role == "jupyter" for p in s.cluster.node_pools))
    return max(s.gpu_nodes - (1 if jupyter_on_gpu_node else 0), 0)


def initial_workers(s: Settings) -> int:
    """GPU workers the DaskCluster starts with: ``gpuWorkers`` (resolved), within the autoscaler's bounds."""
    op = s.dask.operator
    replicas = s.dask.workers.replicas
    if op is None or not op.autoscale:
        return replicas
    return min(max(replicas, op.min_workers), op.max_workers)
