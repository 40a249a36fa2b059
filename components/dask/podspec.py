"""What every Dask pod is made of, whichever backend runs it: the image, the workers'
environment (tuning, scratch, extra packages), the TLS material, the dataset and pip-cache
mounts and the resources. One source for the Helm values (``values.py``) and the operator's
``DaskCluster`` (``operator_spec.py``), so both backends start the same workers.

Pure functions on plain data; the tests compare both backends' output of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.settings.model import DaskSpec
from workloads import tuning

PIP_CACHE_MOUNT = "/root/.cache/pip"
SCRATCH_MOUNT = "/scratch"
GPU_RESOURCE = "nvidia.com/gpu"

# Secret keys of the TLS material (see tls.py) and the Dask config each one feeds.
TLS_KEYS = {
    "ca.crt": "DASK_DISTRIBUTED__COMM__TLS__CA_FILE",
    "scheduler.crt": "DASK_DISTRIBUTED__COMM__TLS__SCHEDULER__CERT",
    "scheduler.key": "DASK_DISTRIBUTED__COMM__TLS__SCHEDULER__KEY",
    "worker.crt": "DASK_DISTRIBUTED__COMM__TLS__WORKER__CERT",
    "worker.key": "DASK_DISTRIBUTED__COMM__TLS__WORKER__KEY",
    "client.crt": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT",
    "client.key": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY",
}
ROLE_KEYS = {
    "scheduler": ("ca.crt", "scheduler.crt", "scheduler.key"),
    "worker": ("ca.crt", "worker.crt", "worker.key", "client.crt", "client.key"),
    "jupyter": ("ca.crt", "client.crt", "client.key"),
}


@dataclass(frozen=True)
class Claims:
    """The shared-storage claims every worker and Jupyter mounts."""

    dataset_claim: str
    pip_cache_claim: str
    dataset_mount: str


def worker_tuning_env(threads: int, tcmalloc: bool) -> list[dict[str, str]]:
    """The workers' tuning environment (``workloads.tuning``, shared with the runner's local
    cluster) as pod variables. Dask reads the nanny's pre-spawn environment from
    ``DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON`` as a Python literal (None unsets)."""
    environ = tuning.worker_environ(threads, tuning.IMAGE_TCMALLOC if tcmalloc else None)
    env = [{"name": "DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON", "value": repr(environ)}]
    # The nanny prefers a variable already in the pod's environment over its config, so an
    # image that sets OMP_NUM_THREADS=1 would win: set them in the pod too.
    env += [{"name": name, "value": value} for name, value in environ.items()
            if value is not None and name in tuning.THREAD_VARIABLES + ("LD_PRELOAD",)]
    return env


def worker_env(dask: DaskSpec) -> list[dict[str, str]]:
    """Scratch directory, tuning and extra packages of a GPU worker (without TLS)."""
    env = [{"name": "DASK_TEMPORARY_DIRECTORY", "value": SCRATCH_MOUNT},
           *worker_tuning_env(dask.workers.threads, dask.workers.tcmalloc)]
    if dask.extra_pip_packages:
        env.append({"name": "EXTRA_PIP_PACKAGES", "value": dask.extra_pip_packages})
    return env


def tls_env(role: str, secret: str | None) -> list[dict[str, Any]]:
    """Dask's TLS config variables for ``role``, read from the Secret ``secret`` (none without)."""
    if not secret:
        return []
    env: list[dict[str, Any]] = [
        {"name": "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION", "value": "True"},
        {"name": "DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME", "value": "tls"},
    ]
    env += [{"name": TLS_KEYS[key], "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
            for key in ROLE_KEYS[role]]
    return env


def resources(cpu: Any, memory: str, gpus: int = 0) -> dict[str, Any]:
    """Equal requests and limits (Kubernetes requires it for GPUs; it keeps workers Guaranteed)."""
    amounts: dict[str, Any] = {"cpu": str(cpu), "memory": memory}
    if gpus:
        amounts[GPU_RESOURCE] = gpus
    return {"limits": dict(amounts), "requests": dict(amounts)}


def mounts(claims: Claims, scratch: bool) -> dict[str, list]:
    """Volumes and mounts: dataset and pip cache on the shared claims; worker scratch on the
    node's local disk (emptyDir), never on the NFS share."""
    volumes = [
        {"name": "dataset", "persistentVolumeClaim": {"claimName": claims.dataset_claim}},
        {"name": "pip-cache", "persistentVolumeClaim": {"claimName": claims.pip_cache_claim}},
    ]
    volume_mounts = [
        {"name": "dataset", "mountPath": claims.dataset_mount},
        {"name": "pip-cache", "mountPath": PIP_CACHE_MOUNT},
    ]
    if scratch:
        volumes.append({"name": "scratch", "emptyDir": {}})
        volume_mounts.append({"name": "scratch", "mountPath": SCRATCH_MOUNT})
    return {"volumes": volumes, "volumeMounts": volume_mounts}


def worker_command(dask: DaskSpec) -> str:
    """``dask-cuda-worker`` for GPU workers (one CUDA context per GPU, RMM), else ``dask-worker``."""
    return "dask-cuda-worker" if dask.workers.gpus else "dask-worker"
