"""Pure builder of the Dask chart's values: scheduler, GPU workers, Jupyter.

Decisions the seed got wrong, made here once:
- one image (so one Dask version) for scheduler, workers and Jupyter;
- node selection by the pool-role label, never by node names;
- the chart's own Services stay ClusterIP: exposure is a separate, guarded Service
  (``exposure.py``), because the pinned chart cannot restrict a LoadBalancer's sources;
- Jupyter's resources are always set explicitly (the seed's kept the chart default GPU);
- worker scratch on the node's local disk (emptyDir), never on the NFS share;
- TLS material from a Kubernetes Secret through Dask's own config variables.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from components.dask import chart
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
_ROLE_KEYS = {
    "scheduler": ("ca.crt", "scheduler.crt", "scheduler.key"),
    "worker": ("ca.crt", "worker.crt", "worker.key", "client.crt", "client.key"),
    "jupyter": ("ca.crt", "client.crt", "client.key"),
}


@dataclass(frozen=True)
class DaskValuesInputs:
    dask: DaskSpec
    namespace: str
    release: str
    scheduler_selector: Mapping[str, str]
    jupyter_selector: Mapping[str, str]
    worker_selector: Mapping[str, str]
    dataset_claim: str
    pip_cache_claim: str
    dataset_mount: str
    jupyter_password_hash: str = field(repr=False)
    tls_secret: str | None = None


def image_parts(image: str) -> tuple[str, str]:
    """``repo/name:tag`` -> (``repo/name``, ``tag``); digests keep ``@sha256:...`` as the tag
    the chart templates append after a colon, so they are not supported there."""
    repository, _, tag = image.rpartition(":")
    return repository, tag


def fullname(release: str) -> str:
    """The chart's object-name prefix: the release name when it contains "dask"."""
    return release if chart.CHART in release else f"{release}-{chart.CHART}"


def scheduler_host(release: str, namespace: str) -> str:
    return f"{fullname(release)}-scheduler.{namespace}.svc.cluster.local"


def dashboard_url(release: str, namespace: str) -> str:
    return f"http://{scheduler_host(release, namespace)}:{chart.DASHBOARD_PORT}"


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


def _resources(cpu: Any, memory: str, gpus: int = 0) -> dict[str, Any]:
    amounts: dict[str, Any] = {"cpu": str(cpu), "memory": memory}
    if gpus:
        amounts[GPU_RESOURCE] = gpus
    return {"limits": dict(amounts), "requests": dict(amounts)}


def _tls_env(role: str, secret: str | None) -> list[dict[str, Any]]:
    if not secret:
        return []
    env: list[dict[str, Any]] = [
        {"name": "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION", "value": "True"},
        {"name": "DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME", "value": "tls"},
    ]
    env += [{"name": TLS_KEYS[key], "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
            for key in _ROLE_KEYS[role]]
    return env


def _claims(inputs: DaskValuesInputs, scratch: bool) -> dict[str, list]:
    volumes = [
        {"name": "dataset", "persistentVolumeClaim": {"claimName": inputs.dataset_claim}},
        {"name": "pip-cache", "persistentVolumeClaim": {"claimName": inputs.pip_cache_claim}},
    ]
    mounts = [
        {"name": "dataset", "mountPath": inputs.dataset_mount},
        {"name": "pip-cache", "mountPath": PIP_CACHE_MOUNT},
    ]
    if scratch:
        volumes.append({"name": "scratch", "emptyDir": {}})
        mounts.append({"name": "scratch", "mountPath": SCRATCH_MOUNT})
    return {"volumes": volumes, "volumeMounts": mounts}


def labextension_config(url: str) -> str:
    """Jupyter server config (Python) that points the Dask JupyterLab extension at the
    scheduler's dashboard, so nobody types its address in by hand."""
    settings = json.dumps({"dask-labextension:plugin": {"defaultURL": url}})
    return "\n".join([
        "# Written by dask-tkg: default dashboard of the Dask JupyterLab extension.",
        "import json as _json, os as _os, sys as _sys",
        "_dir = _os.path.join(_sys.prefix, 'share', 'jupyter', 'lab', 'settings')",
        "_os.makedirs(_dir, exist_ok=True)",
        "_path = _os.path.join(_dir, 'overrides.json')",
        "_doc = _json.load(open(_path)) if _os.path.exists(_path) else {}",
        f"_doc.update(_json.loads({settings!r}))",
        "_json.dump(_doc, open(_path, 'w'))",
    ])


def dask_values(inputs: DaskValuesInputs) -> dict[str, Any]:
    """Values for the pinned dask chart. Raises ValueError if a key would be ignored."""
    d = inputs.dask
    repository, tag = image_parts(d.image)
    image = {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}
    worker_env = [{"name": "DASK_TEMPORARY_DIRECTORY", "value": SCRATCH_MOUNT},
                  *worker_tuning_env(d.workers.threads, d.workers.tcmalloc)]
    if d.extra_pip_packages:
        worker_env.append({"name": "EXTRA_PIP_PACKAGES", "value": d.extra_pip_packages})
    values: dict[str, Any] = {
        "scheduler": {
            "image": dict(image),
            "replicas": 1,
            "serviceType": "ClusterIP",
            "servicePort": chart.SCHEDULER_PORT,
            "extraArgs": ["--protocol", "tls"] if inputs.tls_secret else [],
            "env": _tls_env("scheduler", inputs.tls_secret),
            "resources": _resources(d.scheduler.cpu, d.scheduler.memory),
            "nodeSelector": dict(inputs.scheduler_selector),
        },
        "webUI": {"servicePort": chart.DASHBOARD_PORT},
        "worker": {
            "image": {**image, "dask_worker": "dask-cuda-worker" if d.workers.gpus else "dask-worker"},
            "replicas": d.workers.replicas,
            "threads_per_worker": d.workers.threads,
            "extraArgs": ["--local-directory", SCRATCH_MOUNT],
            "env": worker_env + _tls_env("worker", inputs.tls_secret),
            "resources": _resources(d.workers.cpu, d.workers.memory, d.workers.gpus),
            "mounts": _claims(inputs, scratch=True),
            "nodeSelector": dict(inputs.worker_selector),
        },
        "jupyter": {
            "enabled": d.jupyter.enabled,
            "image": dict(image),
            "serviceType": "ClusterIP",
            "servicePort": chart.JUPYTER_PORT,
            "password": inputs.jupyter_password_hash,
            "passwordHint": "see the jupyterPassword stack output (pulumi stack output --show-secrets)",
            "env": _tls_env("jupyter", inputs.tls_secret),
            "extraConfig": labextension_config(dashboard_url(inputs.release, inputs.namespace)),
            "resources": _resources(d.jupyter.cpu, d.jupyter.memory, 1 if d.jupyter.gpu else 0),
            "mounts": _claims(inputs, scratch=False),
            "nodeSelector": dict(inputs.jupyter_selector),
        },
    }
    problems = chart.unknown_keys(values)
    if problems:
        raise ValueError("dask chart values: " + "; ".join(problems))
    return values
