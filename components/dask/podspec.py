"""What every Dask pod is made of, whichever backend runs it: the image, the workers'
environment (tuning, scratch, extra packages), the TLS material (files from the Secret),
the pod security, the dataset and pip-cache mounts, the resources and the scheduler's
failure detection. One source for the Helm values
(``values.py``) and the operator's ``DaskCluster`` (``operator_spec.py``), so both backends
start the same workers.

Each role's pod is asked for here once per concern: ``role_env`` (its variables),
``role_mounts`` (its volumes) and, for the pods this program writes whole, ``role_pod`` (TLS
files, the prepared environment's check, hardening). Where the pods' packages come from
(``DaskSpec.prepared``) reaches the pods only through these, and they alone call
``components/kube/prepared_env.py``.

Pure functions on plain data; the tests compare both backends' output of them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypedDict, get_args

import components.facts.dask_facts as facts
import components.kube.prepared_env as prepared_env
from components.kube.pod_hardening import hardened_pod, pod_security_context, run_as
from components.settings.model import DaskSpec
from components.settings.values import quantity_bytes
from workloads import contract, tuning
from workloads.contract import GPU_RESOURCE, TLS_DIR, TLS_KEYS, TLS_ROLE_KEYS

SCRATCH_MOUNT = "/scratch"
# A Dask pod's role: a closed choice mypy holds every caller to (a misspelt role is a type error)
Role: TypeAlias = Literal["scheduler", "worker", "jupyter"]
ROLES: tuple[Role, ...] = get_args(Role)
# Every pod: the RAPIDS images' entrypoint starts an unauthenticated JupyterLab in the
# background unless this is set (facts.IMAGES); harmless for images without one.
NO_BACKGROUND_JUPYTER = {"name": "DISABLE_JUPYTER", "value": "true"}

# Where each pod finds its TLS material (TLS_DIR, the keys of each role, the Dask config each
# feeds): workloads/contract.py's layout, which the runner's own clusters share.
# The scheduler's dashboard over TLS with the scheduler's certificate (it is served on the
# scheduler's Services, whose names that certificate carries): distributed's
# ``distributed.scheduler.dashboard.tls.{cert,key}`` (node.py ``start_http_server``; in every
# release since 2.15, 2020, the paper's 2021.09.1 included), which also makes the dashboard
# link https (utils.py ``format_dashboard_link``). No ``ca-file``: browsers bring no client
# certificate.
DASHBOARD_TLS_KEYS = {
    "scheduler.crt": "DASK_DISTRIBUTED__SCHEDULER__DASHBOARD__TLS__CERT",
    "scheduler.key": "DASK_DISTRIBUTED__SCHEDULER__DASHBOARD__TLS__KEY",
}


def tls_secret_name(prefix: str) -> str:
    """The TLS Secret of a Dask cluster whose objects are named ``prefix`` (both backends: ``dask``)."""
    return f"{prefix}-tls"


@dataclass(frozen=True)
class Claims:
    """The shared-storage claims every worker and Jupyter mounts."""

    dataset_claim: str
    pip_cache_claim: str
    dataset_mount: str
    # workerEnvironment=prepared: the prepared environment's directory on the pip-cache claim
    # (prepared_env.subdir), mounted read-only instead of pip's cache; None: the image as it is
    environment: str | None = None
    # every claim mounted read-only: a person's own claims of the shared volumes, bound to
    # read-only PersistentVolumes (components/dask/team/team.py), which a pod must mount read-only too
    read_only: bool = False


def worker_tuning_env(threads: int, tcmalloc: bool, dask_version: str | None = None) -> list[dict[str, str]]:
    """The workers' tuning environment (``workloads.tuning``, shared with the runner's local
    cluster) as pod variables, through the nanny key the image's Dask reads
    (``facts.NANNY_ENVIRON``; the newest when ``dask_version`` is None). Dask reads it from
    its variable as a Python literal."""
    environ = tuning.worker_environ(threads, tuning.IMAGE_TCMALLOC if tcmalloc else None)
    fact = facts.nanny_environ_fact(dask_version) if dask_version else max(facts.NANNY_ENVIRON, key=lambda f: f.since)
    if not fact.none_unsets:
        # Under the older key every value becomes a string ("None"), and the environment is
        # applied in the already started worker process, where glibc has already read
        # MALLOC_TRIM_THRESHOLD_: the variable is left out there.
        environ = {name: value for name, value in environ.items() if value is not None}
    env = [{"name": fact.variable, "value": repr(environ)}]
    # The nanny prefers a variable already in the pod's environment over its config, so an
    # image that sets OMP_NUM_THREADS=1 would win: set them in the pod too.
    env += [{"name": name, "value": value} for name, value in environ.items()
            if value is not None and name in (*tuning.THREAD_VARIABLES, "LD_PRELOAD")]
    return env


def worker_env(dask: DaskSpec) -> list[dict[str, str]]:
    """Scratch directory, tuning and extra packages of a GPU worker (without TLS)."""
    env = [NO_BACKGROUND_JUPYTER, {"name": "DASK_TEMPORARY_DIRECTORY", "value": SCRATCH_MOUNT},
           *worker_tuning_env(dask.workers.threads, dask.workers.tcmalloc, dask.dask_version)]
    if dask.extra_pip_packages and not dask.prepared:
        env.append({"name": "EXTRA_PIP_PACKAGES", "value": dask.extra_pip_packages})
    return env + environment_env(dask) + user_env(dask.image)


def environment_env(dask: DaskSpec) -> list[dict[str, str]]:
    """With workerEnvironment=prepared, the prepared environment first on PATH (every pod)."""
    return prepared_env.pod_env() if dask.prepared else []


def user_env(image: str) -> list[dict[str, str]]:
    """HOME, when the pods' user has no home in the image (``facts.pod_user``): the emptyDir
    ``mounts`` adds, where pip and Jupyter write."""
    user = facts.pod_user(image)
    return [{"name": "HOME", "value": user.home}] if user.own_home else []


def pod_security(image: str, enforces_psp: bool) -> dict[str, Any]:
    """The pod-level security context of a Dask pod: the image's non-root user (or RUN_AS),
    its group as the volumes' group (so the TLS files, mode 0440, are readable), and the
    seccomp profile where the cluster's admission allows one (``pod_security_context``)."""
    user = facts.pod_user(image)
    return {**run_as(user.uid, user.gid), **pod_security_context(enforces_psp)}


def scheduler_env(tls_secret: str | None) -> list[dict[str, Any]]:
    """The scheduler's variables: no background JupyterLab, the failure detection the runner
    expects (a silent worker restarted after ``tuning.WORKER_TTL_S``, not Dask's 5 minutes),
    and its TLS material."""
    detection = [{"name": name, "value": value} for name, value in tuning.failure_detection_env().items()]
    return [NO_BACKGROUND_JUPYTER, *detection, *tls_env("scheduler", tls_secret)]


def worker_memory_limit(container_memory: str) -> str:
    """Dask's ``--memory-limit`` for a worker container: 90 % of the container's limit, so Dask
    spills, pauses and restarts a worker (at 60/80/95 % of it) before the kernel's OOM killer
    ends the container at 100 %."""
    mib = quantity_bytes(container_memory) * 9 // 10 // 2**20
    return f"{mib}Mi"


def tls_env(role: str, secret: str | None) -> list[dict[str, Any]]:
    """Dask's TLS config variables for ``role`` (``contract.tls_env``); none without a Secret."""
    return list(contract.tls_env(role)) if secret else []


def dashboard_tls_env(secret: str | None) -> list[dict[str, Any]]:
    """The scheduler's dashboard served over TLS (``DASHBOARD_TLS_KEYS``); none without a Secret."""
    return [{"name": name, "value": f"{TLS_DIR}/{key}"} for key, name in DASHBOARD_TLS_KEYS.items()] if secret else []


def jupyter_tls_args(secret: str | None) -> list[str]:
    """The Jupyter server's certificate and key: ``--certfile``/``--keyfile``, the aliases of
    ``ServerApp.certfile``/``keyfile`` in Jupyter Server (1.x and 2.x, serverapp.py ``aliases``)
    and of ``NotebookApp.*`` in the classic Notebook server, so every JupyterLab reads them."""
    return [f"--certfile={TLS_DIR}/jupyter.crt", f"--keyfile={TLS_DIR}/jupyter.key"] if secret else []


def role_env(dask: DaskSpec, role: Role, tls_secret: str | None) -> list[dict[str, Any]]:
    """Every variable a Dask pod of ``role`` gets from this program (a backend's own come
    before): what the role needs, the prepared environment's PATH where the pods run it, HOME
    where the image gives its user none, and the role's TLS files."""
    if role == "scheduler":
        return [*scheduler_env(tls_secret), *environment_env(dask)]
    if role == "worker":
        return [*worker_env(dask), *tls_env("worker", tls_secret)]
    if role == "jupyter":
        return [NO_BACKGROUND_JUPYTER, *environment_env(dask), *user_env(dask.image), *tls_env("jupyter", tls_secret)]
    raise ValueError(f"no Dask role {role!r}: one of {', '.join(ROLES)}")


class PodMounts(TypedDict):
    """A Dask pod's volumes and its container's mounts of them: the two keys a PodSpec and a
    container take them under (a misspelt key would reach the API server as an unknown field)."""

    volumes: list[dict[str, Any]]
    volumeMounts: list[dict[str, Any]]


def role_mounts(dask: DaskSpec, claims: Claims, role: Role) -> PodMounts:
    """The volumes and mounts of a Dask pod of ``role``: workers and Jupyter the shared claims
    (``mounts``; workers their scratch too); the scheduler reads no data, only the prepared
    environment where the pods run it."""
    if role == "scheduler":
        if not claims.environment:
            return {"volumes": [], "volumeMounts": []}
        return {"volumes": [prepared_env.pod_volume(claims.pip_cache_claim)],
                "volumeMounts": [prepared_env.pod_mount(claims.environment)]}
    if role in ("worker", "jupyter"):
        return mounts(claims, scratch=role == "worker", image=dask.image)
    raise ValueError(f"no Dask role {role!r}: one of {', '.join(ROLES)}")


def role_pod(dask: DaskSpec, role: Role, container: dict[str, Any], volumes: list[dict[str, Any]],
             selector: Mapping[str, str], tls_secret: str | None, enforces_psp: bool) -> dict[str, Any]:
    """A hardened PodSpec of one container of ``role`` running as the image's user, with the
    role's TLS files from ``tls_secret`` and the prepared environment's check where it mounts it
    (the operator's pods; the Helm chart's get the same from the post-renderer)."""
    volumes = list(volumes)
    if tls_secret:
        volumes.append(contract.tls_volume(role, tls_secret))
        container = {**container, "volumeMounts": [*container.get("volumeMounts", []), contract.TLS_MOUNT]}
    spec: dict[str, Any] = {"containers": [container]}
    if volumes:
        spec["volumes"] = volumes
    if selector:
        spec["nodeSelector"] = dict(selector)
    return hardened_pod(with_environment_check(spec), pod_security(dask.image, enforces_psp))


def tls_role(env: list[dict[str, Any]]) -> str | None:
    """The role whose TLS files a container's environment names (None: no TLS files): the
    Dask comm keys it names, which differ per role."""
    wanted = {e["name"] for e in env
              if e["name"] in TLS_KEYS.values() and str(e.get("value", "")).startswith(f"{TLS_DIR}/")}
    for role, keys in TLS_ROLE_KEYS.items():
        if wanted and wanted == {TLS_KEYS[k] for k in keys if k in TLS_KEYS}:
            return role
    return None


def resources(cpu: Any, memory: str, gpus: int = 0) -> dict[str, Any]:
    """Equal requests and limits (Kubernetes requires it for GPUs; it keeps workers Guaranteed)."""
    amounts: dict[str, Any] = {"cpu": str(cpu), "memory": memory}
    if gpus:
        amounts[GPU_RESOURCE] = gpus
    return {"limits": dict(amounts), "requests": dict(amounts)}


def mounts(claims: Claims, scratch: bool, image: str) -> PodMounts:
    """Volumes and mounts: dataset and pip cache on the shared claims (the cache where the
    image's user keeps it, ``facts.pip_cache_mount``); worker scratch on the node's local
    disk (emptyDir), never on the NFS share."""
    read_only = {"readOnly": True} if claims.read_only else {}
    volumes: list[dict[str, Any]] = [
        {"name": "dataset", "persistentVolumeClaim": {"claimName": claims.dataset_claim, **read_only}}]
    volume_mounts: list[dict[str, Any]] = [{"name": "dataset", "mountPath": claims.dataset_mount, **read_only}]
    if claims.environment:  # the prepared environment, read-only; nothing installs at start
        volumes.append(prepared_env.pod_volume(claims.pip_cache_claim))
        volume_mounts.append(prepared_env.pod_mount(claims.environment))
    else:
        volumes.append({"name": "pip-cache",
                        "persistentVolumeClaim": {"claimName": claims.pip_cache_claim, **read_only}})
        volume_mounts.append({"name": "pip-cache", "mountPath": facts.pip_cache_mount(image), **read_only})
    if scratch:
        volumes.append({"name": "scratch", "emptyDir": {}})
        volume_mounts.append({"name": "scratch", "mountPath": SCRATCH_MOUNT})
    user = facts.pod_user(image)
    if user.own_home:
        volumes.append({"name": "home", "emptyDir": {}})
        volume_mounts.append({"name": "home", "mountPath": user.home})
    return {"volumes": volumes, "volumeMounts": volume_mounts}


def with_environment_check(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` (a PodSpec) with the prepared environment's check first among its init
    containers when a container mounts the environment (``prepared_env.verify_container``, of
    that container's image and directory); unchanged otherwise. Both backends' pods, Jupyter's
    included, pass here, so none runs an environment the Job did not record."""
    for container in spec.get("containers", []):
        mount = next((m for m in container.get("volumeMounts") or [] if m.get("mountPath") == prepared_env.ENV_MOUNT
                      and m.get("subPath")), None)
        if mount:
            others = [c for c in spec.get("initContainers") or [] if c.get("name") != prepared_env.VERIFY_CONTAINER]
            check = prepared_env.verify_container(container["image"], mount["subPath"])
            return {**spec, "initContainers": [check, *others]}
    return spec


def worker_command(dask: DaskSpec) -> str:
    """``dask-cuda-worker`` for GPU workers (one CUDA context per GPU, RMM), else ``dask-worker``."""
    return "dask-cuda-worker" if dask.workers.gpus else "dask-worker"
