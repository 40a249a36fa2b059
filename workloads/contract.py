"""The stack-output contract: what crosses from the infrastructure to the workloads, and the
TLS file layout of the Dask pods that both sides start.

``__main__.py`` exports exactly these names (it imports this module from the installed
package); ``workloads`` reads them. No pulumi import here, so the runner works on machines
without the Pulumi SDK (``--outputs FILE``).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

# Kubernetes names both sides write and read, each written here once: the GPU operator's device
# plugin advertises GPUs as this extended resource (NVIDIA k8s-device-plugin, ``nvidia.com/gpu``);
# dask-kubernetes' controller labels each pod of a DaskCluster with its cluster and role
# (dask-kubernetes 2026.3.0, operator/controller/controller.py ``build_scheduler_deployment_spec``,
# ``build_worker_deployment_spec``: ``dask.org/cluster-name``, ``dask.org/component``), which the
# program's NetworkPolicies select and the runner lists pods by.
GPU_RESOURCE = "nvidia.com/gpu"
CLUSTER_LABEL = "dask.org/cluster-name"
COMPONENT_LABEL = "dask.org/component"

SCHEDULER_ADDRESS = "schedulerAddress"  # tcp://host:8786 or tls://host:8786 (in-cluster DNS)
DASHBOARD_URL = "dashboardUrl"
JUPYTER_URL = "jupyterUrl"  # "" when Jupyter is disabled
JUPYTER_PASSWORD = "jupyterPassword"  # noqa: S105 (an output's name; its value is secret)
# secret: the runner's own kubeconfig, a ServiceAccount token of the Dask namespace whose Role
# reads services, endpoints and pods, opens port-forwards and resizes the DaskCluster, nothing
# more (components/dask/runner_access.py). The cluster's admin kubeconfig is not an output.
RUNNER_KUBECONFIG = "runnerKubeconfig"
NAMESPACE = "daskNamespace"
RELEASE = "daskRelease"  # Helm release name (services are <release>-scheduler, ...)
DATASET_MOUNT = "datasetMountPath"  # where the dataset PVC is mounted in workers/Jupyter
DATASET_LAYOUT = "datasetLayout"  # each benchmark's dataset.json "layout" keys ("dogs_images", "taxi"): paths
WORKERS = "workerCount"
GPUS_PER_WORKER = "gpusPerWorker"
THREADS_PER_WORKER = "threadsPerWorker"
IMAGE = "daskImage"
DASK_VERSION = "daskVersion"
TLS_CA = "tlsCaCert"  # "" when TLS is off
TLS_CLIENT_CERT = "tlsClientCert"  # secret
TLS_CLIENT_KEY = "tlsClientKey"  # secret
BACKEND = "daskBackend"  # a Backend (absent in stacks older than the operator backend: helm)
DASK_CLUSTER_NAME = "daskClusterName"  # the DaskCluster's name (operator backend), "" with Helm
AUTOSCALE_MIN = "autoscaleMinWorkers"  # the DaskAutoscaler's bounds; 0/0 without one
AUTOSCALE_MAX = "autoscaleMaxWorkers"
# A team (the ``users`` setting; absent on a stack without one): each person's namespace, GPU
# quota and idle timeout, {"<user>@<domain>": {"namespace", "gpus", "idleTimeout"}}, and the spec
# of a DaskCluster for a person's own cluster, the shared cluster's pods with no namespace and
# no TLS (components/dask/team/cluster_spec.py says what the runner completes). Neither is secret.
TEAM_USERS = "teamUsers"
TEAM_CLUSTER_SPEC = "teamClusterSpec"

# Exported for the platform's operators; the runner does not read them.
SUPERVISOR_SERVER = "supervisorServer"  # where a person logs in (kubectl vsphere login --server)
SUPERVISOR_NAMESPACE = "supervisorNamespace"
CLUSTER_NAME = "clusterName"  # the TanzuKubernetesCluster
NFS_SERVER = "nfsServer"
NFS_PATH = "nfsPath"

SECRET_OUTPUTS = frozenset({JUPYTER_PASSWORD, RUNNER_KUBECONFIG, TLS_CLIENT_CERT, TLS_CLIENT_KEY})

# Where a Dask pod finds its TLS material, in the stack's pods (components/dask/podspec.py) and in
# a person's own cluster that the runner starts (workloads/cluster/own_tls.py) alike: the Secret's
# keys its role needs, mounted read-only as files (never environment variables, which ``kubectl
# describe``, crash dumps and every child process see). Dask's config keys take file paths
# (distributed ``security.py``, ``Security.__init__``: ``tls_ca_file`` etc.).
TLS_DIR = "/etc/dask/tls"
TLS_VOLUME = "dask-tls"
TLS_FILE_MODE = 0o440  # owner and group (the pod's fsGroup) read; nobody else
TLS_MOUNT = {"name": TLS_VOLUME, "mountPath": TLS_DIR, "readOnly": True}
# The Secret's keys (the stack's: components/dask/tls.py) and the Dask config each one feeds.
TLS_KEYS = {
    "ca.crt": "DASK_DISTRIBUTED__COMM__TLS__CA_FILE",
    "scheduler.crt": "DASK_DISTRIBUTED__COMM__TLS__SCHEDULER__CERT",
    "scheduler.key": "DASK_DISTRIBUTED__COMM__TLS__SCHEDULER__KEY",
    "worker.crt": "DASK_DISTRIBUTED__COMM__TLS__WORKER__CERT",
    "worker.key": "DASK_DISTRIBUTED__COMM__TLS__WORKER__KEY",
    "client.crt": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT",
    "client.key": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY",
}
TLS_ROLE_KEYS = {
    "scheduler": ("ca.crt", "scheduler.crt", "scheduler.key"),
    "worker": ("ca.crt", "worker.crt", "worker.key", "client.crt", "client.key"),
    # Jupyter's Dask clients use the client's pair; the Jupyter server its own (the stack's only).
    "jupyter": ("ca.crt", "client.crt", "client.key", "jupyter.crt", "jupyter.key"),
}


def tls_volume(role: str, secret: str) -> dict[str, Any]:
    """The Secret as a volume holding only the keys ``role`` needs (a worker never sees the
    scheduler's key)."""
    return {"name": TLS_VOLUME, "secret": {"secretName": secret, "defaultMode": TLS_FILE_MODE,
                                           "items": [{"key": k, "path": k} for k in TLS_ROLE_KEYS[role]]}}


def tls_env(role: str) -> list[dict[str, str]]:
    """Dask's TLS config variables for ``role``: TLS required, and the paths of the files
    ``tls_volume`` mounts at ``TLS_DIR`` (Jupyter's own pair is its server's, not Dask's)."""
    return [{"name": "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION", "value": "True"},
            {"name": "DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME", "value": "tls"},
            *({"name": TLS_KEYS[key], "value": f"{TLS_DIR}/{key}"} for key in TLS_ROLE_KEYS[role] if key in TLS_KEYS)]


class Backend(StrEnum):
    """``daskBackend``, the setting and the output of that name: what runs the shared Dask
    cluster. One enum for the program (settings/model.py) and the runner."""

    HELM = "helm"  # the dask chart's release
    OPERATOR = "operator"  # the Dask operator's DaskCluster


class ContractError(ValueError):
    """Stack outputs that are missing a key or carry a value of the wrong type."""


@dataclass(frozen=True)
class StackOutputs:
    """The outputs the runner needs, typed."""

    scheduler_address: str
    dashboard_url: str
    jupyter_url: str
    namespace: str
    release: str
    dataset_mount: str
    dataset_layout: Mapping[str, str]
    workers: int
    gpus_per_worker: int
    threads_per_worker: int
    image: str
    dask_version: str
    tls_ca: str = ""
    tls_client_cert: str = ""
    tls_client_key: str = ""
    jupyter_password: str = ""
    kubeconfig: str = ""  # the runner's (RUNNER_KUBECONFIG), never the admin one
    backend: Backend = Backend.HELM
    dask_cluster: str = ""  # the DaskCluster (operator backend)
    autoscale_min: int = 0
    autoscale_max: int = 0
    team_users: Mapping[str, Any] = field(default_factory=dict)  # TEAM_USERS; empty without a team
    team_cluster_spec: Mapping[str, Any] = field(default_factory=dict)  # TEAM_CLUSTER_SPEC

    def __repr__(self) -> str:  # never print secrets
        shown = {f.name: getattr(self, f.name) for f in fields(self)
                 if f.name not in ("tls_client_cert", "tls_client_key", "jupyter_password", "kubeconfig")}
        return f"StackOutputs({shown}, secrets=[redacted])"

    @property
    def tls(self) -> bool:
        return self.scheduler_address.startswith("tls://")

    @property
    def on_operator(self) -> bool:
        """The Dask operator runs the cluster (its pods are found by the DaskCluster's name)."""
        return self.backend == Backend.OPERATOR


# output name -> (field, type, required)
_SCHEMA: dict[str, tuple[str, type, bool]] = {
    SCHEDULER_ADDRESS: ("scheduler_address", str, True),
    DASHBOARD_URL: ("dashboard_url", str, True),
    JUPYTER_URL: ("jupyter_url", str, False),
    NAMESPACE: ("namespace", str, True),
    RELEASE: ("release", str, True),
    DATASET_MOUNT: ("dataset_mount", str, True),
    DATASET_LAYOUT: ("dataset_layout", dict, True),
    WORKERS: ("workers", int, True),
    GPUS_PER_WORKER: ("gpus_per_worker", int, True),
    THREADS_PER_WORKER: ("threads_per_worker", int, True),
    IMAGE: ("image", str, True),
    DASK_VERSION: ("dask_version", str, True),
    TLS_CA: ("tls_ca", str, False),
    TLS_CLIENT_CERT: ("tls_client_cert", str, False),
    TLS_CLIENT_KEY: ("tls_client_key", str, False),
    JUPYTER_PASSWORD: ("jupyter_password", str, False),
    RUNNER_KUBECONFIG: ("kubeconfig", str, False),
    BACKEND: ("backend", str, False),
    DASK_CLUSTER_NAME: ("dask_cluster", str, False),
    AUTOSCALE_MIN: ("autoscale_min", int, False),
    AUTOSCALE_MAX: ("autoscale_max", int, False),
    TEAM_USERS: ("team_users", dict, False),
    TEAM_CLUSTER_SPEC: ("team_cluster_spec", dict, False),
}
# The stack outputs the runner reads (parse_outputs); the rest are for the platform's operators.
READ_BY_RUNNER = frozenset(_SCHEMA)


def parse_outputs(raw: Mapping[str, Any], source: str = "stack outputs") -> StackOutputs:
    """Validate ``pulumi stack output --json --show-secrets`` (or the same JSON in a file).

    Raises ContractError naming the missing key or the key with the wrong type, and where
    the outputs came from. Unknown keys are ignored (newer stacks may export more).
    """
    if not isinstance(raw, Mapping):
        raise ContractError(f"{source}: expected a JSON object of outputs, got {type(raw).__name__}")
    values: dict[str, Any] = {}
    problems = []
    for key, (field_name, kind, required) in _SCHEMA.items():
        if key not in raw or raw[key] is None:
            if required:
                problems.append(f"missing output {key!r}")
            continue
        value = raw[key]
        if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
            problems.append(f"output {key!r} must be {kind.__name__}, got {type(value).__name__}")
            continue
        values[field_name] = value
    address = values.get("scheduler_address", "")
    if address and not address.startswith(("tcp://", "tls://")):
        problems.append(f"output {SCHEDULER_ADDRESS!r} must start with tcp:// or tls://, got {address!r}")
    if address.startswith("tls://") and not (values.get("tls_client_cert") and values.get("tls_client_key")):
        problems.append(f"scheduler uses TLS but {TLS_CLIENT_CERT!r}/{TLS_CLIENT_KEY!r} are missing"
                        " (read the outputs with --show-secrets)")
    if values.get("backend", Backend.HELM) not in tuple(Backend):
        problems.append(f"output {BACKEND!r} must be {' or '.join(Backend)}, got {values['backend']!r}")
    elif "backend" in values:
        values["backend"] = Backend(values["backend"])
        if values["backend"] == Backend.OPERATOR and not values.get("dask_cluster"):
            problems.append(f"output {BACKEND!r} is operator but {DASK_CLUSTER_NAME!r} (the DaskCluster to scale)"
                            " is missing")
    if problems:
        raise ContractError(f"{source}: " + "; ".join(problems))
    return StackOutputs(**values)
