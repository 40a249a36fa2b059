"""What the real-node tests share: the runtime that stands in for the image (the project's own
interpreter and virtual environment mounted into the pods), the shared claims' volumes, the
program's guest objects applied, the set-up scripts' reports and the smoke dataset."""
from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.data_job import smoke_sources
from tests.cluster.kube import in_namespace, wait_default_service_account
from tests.cluster.node import REAL_NODE_TOLERATION
from tests.cluster.program import DeclaredStack
from tests.kube.rest import apply_manifest

REPO = Path(__file__).resolve().parents[2]
RELEASE_WORKERS = 2  # the Dask release's workers on the real node
SMALL = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "2Gi"}}
IMAGE_HOME = "/home/dask"  # components/facts/dask_facts.py: RUN_AS_HOME (python:3.11 runs as root)


# JupyterLab's app settings directory (jupyterlab 4.6.6 jupyterlab/commands.py, get_app_dir:
# <sys.prefix>/share/jupyter/lab; settings under it), where the program's extraConfig writes
LAB_SETTINGS = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"


def interpreter_mounts() -> list[dict]:
    """The base interpreter and the virtual environment, mounted read-only at their own
    paths. A distribution's Python (Debian's python3.11: base prefix ``/usr``) would hide
    the image's own ``/usr`` behind the node's, read-only, where runc cannot make a
    volume's mount point (the Jupyter pod failed so: ``.../local/etc/jupyter: read-only
    file system``); there only its standard library and its executable are mounted."""
    venv, base = Path(sys.prefix), Path(sys.base_prefix)
    if base in (Path("/usr"), Path("/usr/local")):
        stdlib = base / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
        executable = Path(os.path.realpath(sys.executable))  # <venv>/bin/python -> /usr/bin/python3.11
        interpreter: list[dict[str, Any]] = [{"host": str(stdlib), "container": str(stdlib)},
                       {"host": str(executable), "container": str(executable), "directory": False}]
    else:
        interpreter = [{"host": str(base), "container": str(base)}]
    return [*interpreter, {"host": str(venv), "container": str(venv)}]


def runtime_differences(kube_cluster) -> dict:
    """What the pods get in place of the image's runtime and the stack's sizes: the image stand-in with
    this venv mounted, small requests, the node's toleration (tests/cluster/post_render.py applies it)."""
    venv = Path(sys.prefix)
    interpreter = interpreter_mounts()
    mounts = [*interpreter, {"host": str(REPO / "workloads"), "container": "/opt/dask-tkg/workloads"}]
    LAB_SETTINGS.mkdir(parents=True, exist_ok=True)  # the writable mount's mount point in the read-only venv
    return {"image": kube_cluster.images["dask-runtime"], "mounts": mounts, "interpreter_mounts": interpreter,
            "writable": {"jupyter": [str(LAB_SETTINGS)]},
            "env": {"PATH": f"{venv}/bin:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": "/opt/dask-tkg",
                    "HOME": "/tmp"},
            "resources": {"scheduler": SMALL, "worker": SMALL, "jupyter": SMALL},
            "worker_replicas": RELEASE_WORKERS, "worker_threads": "1", "worker_memory": "2Gi",
            "toleration": REAL_NODE_TOLERATION, "scheduler_service": "dask-scheduler",
            "scheduler_ip": str(ipaddress.ip_network(kube_cluster.net.service_cidr)[251])}


def read_only_claims(api, namespace: str, mounts: list[dict]) -> list[dict]:
    """The stand-in's host paths (``mounts``: the runtime's interpreter and environment) as
    read-only claims in ``namespace``, each bound to a PersistentVolume of its own on the node's
    path; each mount gets its claim's name under ``"claim"``, which the pod spec changes mount
    instead of a hostPath volume. Returns the PersistentVolumes made (cluster-scoped: the test
    deletes them). A claim is what the restricted Pod Security level admits in the program's
    namespaces (a hostPath volume is refused from baseline up, and 1.25+ judges pods by the
    namespace's label alone); under PodSecurityPolicy (1.20), TKG's restricted policy admits
    claims too."""
    volumes = []
    for i, mount in enumerate(mounts):
        claim = f"stand-in-runtime-{i}"
        volume: dict[str, Any] = {
                  "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{namespace}-{claim}"},
                  "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadOnlyMany"], "storageClassName": "",
                           "persistentVolumeReclaimPolicy": "Retain",
                           "hostPath": {"path": mount["host"],
                                        "type": "Directory" if mount.get("directory", True) else "File"},
                           "claimRef": {"namespace": namespace, "name": claim}}}
        apply_manifest(api, volume, update_existing=True)
        apply_manifest(api, {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                             "metadata": {"name": claim, "namespace": namespace},
                             "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": "",
                                      "volumeName": volume["metadata"]["name"],
                                      "resources": {"requests": {"storage": "1Gi"}}}})
        mount["claim"] = claim
        volumes.append(volume)
    return volumes


def shared_volume_stand_ins(stack: DeclaredStack, root) -> list[dict]:
    """A PersistentVolume pre-bound to each of the program's claims in the Dask namespace."""
    volumes = []
    for claim in in_namespace(stack.objects, "PersistentVolumeClaim", stack.dask_namespace):
        name = f"stand-in-{stack.dask_namespace}-{claim['metadata']['name']}"
        path = root / claim["metadata"]["name"]
        path.mkdir(parents=True, exist_ok=True)
        # writable by every user, as the NFS provisioner leaves each volume's directory (its
        # provisioner.go: Chmod 0777): the pods run as non-root users
        path.chmod(0o777)
        volumes.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                        "spec": {"capacity": {"storage": claim["spec"]["resources"]["requests"]["storage"]},
                                 "accessModes": claim["spec"]["accessModes"],
                                 "storageClassName": claim["spec"].get("storageClassName", ""),
                                 "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": str(path)},
                                 "claimRef": {"namespace": stack.dask_namespace,
                                              "name": claim["metadata"]["name"]}}})
    return volumes


def apply_guest_half(api, stack: DeclaredStack, kinds=("Namespace", "RoleBinding", "Secret", "ConfigMap",
                                                         "PersistentVolumeClaim")) -> None:
    ns = stack.dask_namespace
    apply_manifest(api, next(o for o in stack.of_kind("Namespace") if o["metadata"]["name"] == ns))
    wait_default_service_account(api, ns)
    for kind in kinds[1:]:
        for obj in in_namespace(stack.objects, kind, ns):
            apply_manifest(api, obj)


def set_up_report(script: Path, timeout_s: float, *args: str) -> dict:
    """The last JSON line of a set-up script run with ``--check`` and ``args`` (it builds and
    fetches nothing: what make test prepared); the test fails with the script's words if it is not there."""
    out = subprocess.run([sys.executable, str(script), "--check", *args], check=False, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, cwd=REPO, timeout=timeout_s)
    if out.returncode != 0:
        pytest.fail(out.stderr.strip() or out.stdout.strip(), pytrace=False)
    return json.loads(out.stdout.splitlines()[-1])


def smoke_dataset(share: Path, settings) -> None:
    """The smoke datasets on the dataset claim's volume, where the data Job would put them."""
    import torch

    smoke_sources(share)
    weights = share / "models" / settings.data.value("modelWeightsUrl").rsplit("/", 1)[1]
    weights.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"fc.bias": torch.zeros(1000)}, weights)
