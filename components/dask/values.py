"""Pure builder of the Dask chart's values: scheduler, GPU workers, Jupyter.

Decisions the paper's scripts got wrong, made here once:
- one image (so one Dask version) for scheduler, workers and Jupyter;
- node selection by the pool-role label, never by node names;
- the chart's own Services stay ClusterIP: exposure is a separate, guarded Service
  (``exposure.py``), because the pinned chart cannot restrict a LoadBalancer's sources;
- Jupyter's resources are always set explicitly (the paper's scripts keep the chart's default GPU);
- worker scratch on the node's local disk (emptyDir), never on the NFS share;
- TLS material as files from a Kubernetes Secret, named by Dask's own config variables
  (mounted by the release's post-renderer, post_render.py);
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import components.facts.dask_chart as chart
from components.artifacts.images import ImageRef
from components.dask import podspec
from components.dask.podspec import SCRATCH_MOUNT, worker_memory_limit
from components.dask.podspec import resources as _resources
from components.settings.model import DaskSpec

# Every pod of the release: the RAPIDS images' entrypoint starts an unauthenticated JupyterLab
# in the background unless DISABLE_JUPYTER is set (facts.IMAGES); harmless for images without one.
# Jupyter in the foreground as the container's main process (the image's CMD may be a shell
# that exits without a TTY), behind the chart's config (the password), named with --config:
# JupyterLab 3+ does not look for that file name by itself (chart.JUPYTER_CONFIG_FILE).
JUPYTER_ARGS = ["jupyter", "lab", "--ip=0.0.0.0", f"--port={chart.JUPYTER_CONTAINER_PORT}", "--no-browser",
                "--allow-root", f"--config={chart.JUPYTER_CONFIG_FILE}"]


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
    # The scheduler serves its dashboard over TLS when there is a Secret (the chart's scheduler);
    # False where another scheduler serves it in plain HTTP (the operator backend's).
    dashboard_tls: bool = True
    enforces_psp: bool = False  # the cluster admits pods by PodSecurityPolicy (up to 1.24)
    environment: str | None = None  # the prepared environment's directory (podspec.Claims.environment)


def image_parts(image: str) -> tuple[str, str]:
    """``repo/name:tag[@sha256:...]`` -> (``repo/name``, ``tag[@sha256:...]``): the chart's
    templates join ``image.repository`` and ``image.tag`` with a colon, so a digest rides on the
    tag and the pods pull by it. The digest alone (``repo/name@sha256:...``) fits the same join
    only as (``repo/name@sha256``, the hex digits)."""
    ref = ImageRef.parse(image)
    if ref.tag:
        return ref.repository, ref.tag_and_digest
    algorithm, _, digits = (ref.digest or "").partition(":")
    return f"{ref.repository}@{algorithm}", digits


def fullname(release: str) -> str:
    """The chart's object-name prefix: the release name when it contains "dask"."""
    return release if chart.CHART in release else f"{release}-{chart.CHART}"


def scheduler_host(release: str, namespace: str) -> str:
    return f"{fullname(release)}-scheduler.{namespace}.svc.cluster.local"


def dashboard_url(release: str, namespace: str, tls: bool = False) -> str:
    """The dashboard in the cluster: https when the scheduler serves it with its certificate
    (``podspec.dashboard_tls_env``)."""
    return f"{'https' if tls else 'http'}://{scheduler_host(release, namespace)}:{chart.DASHBOARD_PORT}"


def jupyter_host(release: str, namespace: str) -> str:
    return f"{fullname(release)}-jupyter.{namespace}.svc.cluster.local"


def jupyter_url(release: str, namespace: str, tls: bool) -> str:
    """Jupyter in the cluster: https when it serves the stack's certificate (``jupyter_tls_args``)."""
    return f"{'https' if tls else 'http'}://{jupyter_host(release, namespace)}:{chart.JUPYTER_PORT}"


def service_names(service: str, namespace: str) -> list[str]:
    """The names a Service answers to in the cluster's DNS: a server certificate's names."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def _mounts(inputs: DaskValuesInputs, role: podspec.Role) -> podspec.PodMounts:
    claims = podspec.Claims(inputs.dataset_claim, inputs.pip_cache_claim, inputs.dataset_mount, inputs.environment)
    return podspec.role_mounts(inputs.dask, claims, role)

def _pod_security(inputs: DaskValuesInputs) -> dict[str, Any]:
    """The chart's pod-level ``securityContext`` (its containers' own are set by post_render.py)."""
    return {"securityContext": podspec.pod_security(inputs.dask.image, inputs.enforces_psp)}


def labextension_config(url: str) -> str:
    """Jupyter server config (Python) that points the Dask JupyterLab extension at the
    scheduler's dashboard, so nobody types its address in by hand. Best effort: it shares
    the chart's one config file with the password, and a file that raises is dropped whole
    (traitlets 5.16.1 ``Application._load_config_files``), so a failure is only reported."""
    settings = json.dumps({"dask-labextension:plugin": {"defaultURL": url}})
    return "\n".join([
        "# Written by dask-tkg: default dashboard of the Dask JupyterLab extension.",
        "import json as _json, os as _os, sys as _sys",
        "_dir = _os.path.join(_sys.prefix, 'share', 'jupyter', 'lab', 'settings')",
        "try:",
        "    _os.makedirs(_dir, exist_ok=True)",
        "    _path = _os.path.join(_dir, 'overrides.json')",
        "    _doc = _json.load(open(_path)) if _os.path.exists(_path) else {}",
        f"    _doc.update(_json.loads({settings!r}))",
        "    _json.dump(_doc, open(_path, 'w'))",
        "except (OSError, ValueError) as _exc:  # the password above must still apply",
        "    print(\"dask-tkg: the Dask dashboard's default URL was not written to %s: %s\" % (_dir, _exc),",
        "          file=_sys.stderr)",
    ])


def _dashboard_secret(inputs: DaskValuesInputs) -> str | None:
    return inputs.tls_secret if inputs.dashboard_tls else None


def _scheduler(inputs: DaskValuesInputs, image: dict[str, str]) -> dict[str, Any]:
    d = inputs.dask
    return {
        "image": dict(image),
        "replicas": 1,
        "serviceType": "ClusterIP",
        "servicePort": chart.SCHEDULER_PORT,
        "extraArgs": ["--protocol", "tls"] if inputs.tls_secret else [],
        # the chart's scheduler runs only with daskBackend=helm, whose pods run the image as it is
        # (the prepared environment is the operator's): no environment of its own
        "env": [*podspec.scheduler_env(inputs.tls_secret), *podspec.dashboard_tls_env(_dashboard_secret(inputs))],
        "resources": _resources(d.scheduler.cpu, d.scheduler.memory),
        "nodeSelector": dict(inputs.scheduler_selector),
        **_pod_security(inputs),
    }


def _worker(inputs: DaskValuesInputs, image: dict[str, str]) -> dict[str, Any]:
    d = inputs.dask
    return {
        "image": {**image, "dask_worker": podspec.worker_command(d)},
        "replicas": d.workers.replicas,
        "strategy": chart.WORKER_STRATEGY,
        "threads_per_worker": d.workers.threads,
        # After the chart's own --memory-limit (the container limit): the last one wins
        # (facts.CLICK_LAST_OPTION_WINS).
        "extraArgs": ["--local-directory", SCRATCH_MOUNT, "--memory-limit", worker_memory_limit(d.workers.memory)],
        "env": podspec.role_env(d, "worker", inputs.tls_secret),
        "resources": _resources(d.workers.cpu, d.workers.memory, d.workers.gpus),
        "mounts": _mounts(inputs, "worker"),
        "nodeSelector": dict(inputs.worker_selector),
        **_pod_security(inputs),
    }


def _jupyter(inputs: DaskValuesInputs, image: dict[str, str]) -> dict[str, Any]:
    d = inputs.dask
    return {
        "enabled": d.jupyter.enabled,
        # The chart's Role lets the notebook's ServiceAccount update and patch Deployments
        # (anyone with the notebook could swap the workers' image): no chart RBAC, and the
        # namespace's default ServiceAccount, which has no rights.
        "rbac": False,
        "serviceAccountName": "",
        "image": dict(image),
        "args": [*JUPYTER_ARGS, *podspec.jupyter_tls_args(inputs.tls_secret)],
        "serviceType": "ClusterIP",
        "servicePort": chart.JUPYTER_PORT,
        "password": inputs.jupyter_password_hash,
        "passwordHint": "see the jupyterPassword stack output (pulumi stack output --show-secrets)",
        "env": podspec.role_env(d, "jupyter", inputs.tls_secret),
        "extraConfig": labextension_config(dashboard_url(inputs.release, inputs.namespace,
                                                         bool(_dashboard_secret(inputs)))),
        "resources": _resources(d.jupyter.cpu, d.jupyter.memory, 1 if d.jupyter.gpu else 0),
        "mounts": _mounts(inputs, "jupyter"),
        "nodeSelector": dict(inputs.jupyter_selector),
        **_pod_security(inputs),
    }


def dask_values(inputs: DaskValuesInputs) -> dict[str, Any]:
    """Values for the pinned dask chart (keys checked against its values.yaml in the render tests)."""
    repository, tag = image_parts(inputs.dask.image)
    image = {"repository": repository, "tag": tag, "pullPolicy": "IfNotPresent"}
    return {
        "scheduler": _scheduler(inputs, image),
        "webUI": {"servicePort": chart.DASHBOARD_PORT},
        "worker": _worker(inputs, image),
        "jupyter": _jupyter(inputs, image),
    }
