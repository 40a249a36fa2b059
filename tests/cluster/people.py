"""The people of a team on the real node (tests/cluster/test_team.py): their identities, what
the program declares for them applied as declared, and what each person's run is given.

- Identity: each person a client certificate the cluster's CA signs, whose common name is
  the user VKS gives an SSO user inside a workload cluster (``sso:alice@vsphere.local``, the
  RoleBinding's subject: components/dask/team/access.py); the API server authenticates it
  (``--client-ca-file``, tests/cluster/node.py) and RBAC decides, as for a person who ran
  ``kubectl vsphere login``. Their kubeconfig holds that certificate, the CA and the context's
  namespace, inline, like the one the vSphere plugin writes.
- GPUs: the node advertises ``nvidia.com/gpu`` as an extended resource, patched into its
  status (Kubernetes docs, "Advertise Extended Resources for a Node"), so the scheduler places
  a worker that requests one, and the person's ResourceQuota counts real requests.
- Volumes: each person's PersistentVolumes are the program's (ReadOnlyMany, Retain, the
  claimRef to their claim) with the shared stand-in's hostPath in place of the NFS source the
  mocks give (no NFS server here; hostPath takes no mountOptions), over the same directories
  as the shared claims' stand-ins (tests/cluster/support.py).
- The run's outputs: the stack's as ``pulumi stack output --json`` shows them to a person
  (each secret ``"[secret]"``), ``teamClusterSpec`` changed for this node as
  tests/cluster/test_default_image.py changes the shared DaskCluster (the image stand-in with
  the project's own environment, CPU ``dask worker``, small requests, the real node's toleration, no node
  selector, a fixed ClusterIP for the scheduler and ``hostAliases`` for its names: no cluster
  DNS here), except that each worker keeps requesting one ``nvidia.com/gpu``.
"""
from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from components.dask.team import admission as team_admission
from tests.cluster.controller import Controller
from tests.cluster.dask_operator import change_pod_spec
from tests.cluster.kube import bind_stand_in_pod_security, in_namespace, wait_default_service_account
from tests.cluster.node import REAL_NODE_TAINT
from tests.cluster.support import read_only_claims
from tests.kube.pki import sign
from tests.kube.rest import KubeApiError, api_request, apply_manifest
from workloads.cluster import own_spec

REPO = Path(__file__).resolve().parents[2]
NODE_GPUS = "4"
GPU = "nvidia.com/gpu"
SMALL_GPU = {"requests": {"cpu": "100m", "memory": "256Mi", GPU: "1"},
             "limits": {"cpu": "1", "memory": "2Gi", GPU: "1"}}
PERSON_KINDS = ("Role", "RoleBinding", "ConfigMap", "LimitRange", "NetworkPolicy", "ResourceQuota")


def person_kubeconfig(cluster, name: str, namespace: str, folder: Path) -> Path:
    """``name``'s kubeconfig: a client certificate of ``sso:<name>`` from the cluster's CA."""
    pki = cluster.pki.dir
    stem = "person-" + name.split("@", 1)[0]
    sign(pki, stem, f"/CN=sso:{name}", "basicConstraints=critical,CA:FALSE\n"
         "keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n")
    data = {kind: base64.b64encode((pki / f"{stem}.{ext}").read_bytes()).decode()
            for kind, ext in (("client-certificate-data", "crt"), ("client-key-data", "key"))}
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "tkc",
              "clusters": [{"name": "tkc", "cluster": {
                  "server": cluster.url,
                  "certificate-authority-data": base64.b64encode(cluster.ca_file.read_bytes()).decode()}}],
              "users": [{"name": f"wcp:{name}", "user": data}],
              "contexts": [{"name": "tkc",
                            "context": {"cluster": "tkc", "user": f"wcp:{name}", "namespace": namespace}}]}
    path = folder / f"{stem}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def advertise_gpus(api, node: str, count: str | None) -> None:
    """``count`` GPUs in the node's capacity and allocatable (None: removed)."""
    key = GPU.replace("/", "~1")
    ops = [{"op": "add" if count else "remove", "path": f"/status/{field}/{key}", **({"value": count} if count else {})}
           for field in ("capacity", "allocatable")]
    try:
        api_request(api, "PATCH", f"/api/v1/nodes/{node}/status", body=ops, content_type="application/json-patch+json")
    except KubeApiError as exc:
        if count or exc.status != 422:  # removing what is not there
            raise


def person_volumes(stack, namespace: str, share: Path) -> list[dict]:
    """The program's PersistentVolumes for ``namespace``, on the shared stand-ins' directories."""
    volumes = []
    for declared in stack.of_kind("PersistentVolume"):
        claim = declared["spec"].get("claimRef") or {}
        if claim.get("namespace") != namespace:
            continue
        volume = copy.deepcopy(declared)
        spec = volume["spec"]
        assert spec.pop("nfs", None) or spec.pop("csi", None), spec
        spec.pop("mountOptions", None)
        spec["hostPath"] = {"path": str(share / claim["name"])}
        volumes.append(volume)
    return volumes


def apply_person(api, stack, namespace: str, mounts: list[dict], share: Path) -> list[dict]:
    """The program's objects of one person's namespace, as declared, and the stand-in runtime's
    read-only claims there (``mounts`` gets their names); returns the volumes made. The quota
    comes last: it counts the program's two claims only, and existing claims are not refused."""
    (space,) = [o for o in stack.of_kind("Namespace") if o["metadata"]["name"] == namespace]
    apply_manifest(api, space, update_existing=True)
    bind_stand_in_pod_security(api, namespace, [m["host"] for m in mounts])  # where PSP admits pods
    wait_default_service_account(api, namespace)
    runtime = read_only_claims(api, namespace, mounts)
    volumes = person_volumes(stack, namespace, share)
    for volume in volumes:
        apply_manifest(api, volume, update_existing=True)
    for claim in in_namespace(stack.objects, "PersistentVolumeClaim", namespace):
        apply_manifest(api, claim, update_existing=True)
    for kind in PERSON_KINDS:
        for obj in in_namespace(stack.objects, kind, namespace):
            apply_manifest(api, stand_in_params(obj), update_existing=True)
    return runtime + volumes


def stand_in_params(obj: dict) -> dict:
    """The program's admission parameters with the real node's taint among the tolerated ones (the
    node only runs pods that tolerate it, tests/cluster/node.py), as a platform engineer lists a
    tainted GPU pool's; every other object as declared."""
    if obj["kind"] != "ConfigMap" or obj["metadata"]["name"] != team_admission.PARAMS:
        return obj
    keys = [k for k in obj["data"]["tolerationKeys"].split(",") if k] + [REAL_NODE_TAINT["key"]]
    return {**obj, "data": {**obj["data"], "tolerationKeys": ",".join(keys)}}


def apply_team_admission(api, stack) -> None:
    """The team's admission policies and bindings, as declared (cluster-wide objects)."""
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        for obj in stack.of_kind(kind):
            apply_manifest(api, obj, update_existing=True)


def person_outputs(stack, d: dict, cluster: str, namespace: str, scheduler_ip: str) -> dict:
    """What ``pulumi stack output --json`` (no ``--show-secrets``) shows a person, with
    ``teamClusterSpec`` changed for this node (module docstring) for the cluster ``cluster``."""
    outputs: dict[str, Any] = {k: "[secret]" if isinstance(v, dict) and "__secret__" in v else v
                               for k, v in stack.outputs.items()}
    spec = copy.deepcopy(outputs["teamClusterSpec"])
    here = {**d, "scheduler_ip": scheduler_ip, "scheduler_names": own_spec.scheduler_names(cluster, namespace)}
    change_pod_spec(spec["scheduler"]["spec"], "scheduler", here)
    spec["scheduler"]["service"]["clusterIP"] = scheduler_ip
    change_pod_spec(spec["worker"]["spec"], "worker", here)
    for container in spec["worker"]["spec"]["containers"]:
        container["resources"] = copy.deepcopy(SMALL_GPU)
    outputs["teamClusterSpec"] = spec
    return outputs


# one controller on the host serving every person's namespace, naming each person's scheduler
TeamController = Controller


def runner_command(argv: list[str], tmp: Path) -> tuple[list[str], dict[str, str]]:
    """``python -m workloads.run ARGV`` as a person's machine runs it: in a mount namespace whose
    resolv.conf names only 127.0.0.1 (in-cluster names never resolve, nor leave loopback);
    ``unshare`` and ``sh`` exec into the runner, so a signal to the process reaches it."""
    resolv = tmp / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\n")
    command = " ".join(json.dumps(a) for a in [sys.executable, "-m", "workloads.run", *argv])
    script = f'set -e; mount --bind "{resolv}" /etc/resolv.conf; exec {command}'
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "KUBECONFIG"}
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script], env


def runner(argv: list[str], tmp: Path, timeout_s: float) -> subprocess.CompletedProcess:
    command, env = runner_command(argv, tmp)
    return subprocess.run(command, check=False, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=timeout_s)


def start_runner(argv: list[str], tmp: Path) -> subprocess.Popen:
    command, env = runner_command(argv, tmp)
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, env=env)


def wait_team_admission(api, namespace: str, timeout_s: float = 30.0) -> None:
    """Until the server enforces the team's bindings in ``namespace`` (it loads them from its own
    informers a moment after they are stored): a NodePort Service there, dry run, is refused."""
    import time

    probe = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "probe", "namespace": namespace},
             "spec": {"type": "NodePort", "ports": [{"port": 8786}]}}
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            apply_manifest(api, probe, dry_run=True)
        except KubeApiError as exc:
            if "dask-tkg-team-services" in exc.message:
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the team's admission policies not enforced in {namespace} after {timeout_s:.0f} s")
        time.sleep(0.2)
