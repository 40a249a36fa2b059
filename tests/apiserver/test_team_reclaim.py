"""The team's reclaimer (components/dask/team/reclaimer.py) against the current stacks' real 1.33 API
server, with exactly the rights the program gives it: its ServiceAccount, Role and RoleBinding as
declared for the dev stack with ``users``, a token the server issues for that account, the script
run as the CronJob runs it (its ConfigMap's files), from outside a pod (the server's address and
the token's files given by environment, as the pod's own would be).

alice's clusters are deleted once older than her ``maxLifetime`` (a few seconds here), whatever
they are doing; bob's (12 h) are not; the account may not touch anything else; the CronJob is
admitted as declared (restricted Pod Security in the operator's namespace); a person's finalizer,
which would keep a deleted cluster and its pods, is refused by the team's admission.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.dask.team.admission import RULE_PREFIX
from tests.kube.rest import KubeApiError, access_review, api_request, apply_manifest
from tests.operator.operator_identity import request_token
from tests.program.graph import run_program

pytestmark = pytest.mark.apiserver

ALICE_LIFETIME_S = 3
USERS = [f"name=alice@vsphere.local,gpus=2,maxLifetime={ALICE_LIFETIME_S}", "name=bob@vsphere.local,gpus=1"]
OPERATOR_NAMESPACE = "dask-operator"
DASK = "/apis/kubernetes.dask.org/v1/namespaces/{ns}/daskclusters"


@pytest.fixture(scope="module")
def reclaimer(kube_apiserver, operator_crds, tmp_path_factory) -> dict:
    """The program's reclaimer objects and the people's namespaces applied; its files written out."""
    api = kube_apiserver.api_client
    graph = run_program("dev", config={"users": USERS})
    assert graph.error is None, graph.traceback
    declared = [r.manifest() for r in graph.kubernetes_objects()]
    namespaces = {"dask-alice", "dask-bob", OPERATOR_NAMESPACE}
    for kind in ("Namespace", "ConfigMap", "ServiceAccount", "Role", "RoleBinding", "ValidatingAdmissionPolicy",
                 "ValidatingAdmissionPolicyBinding"):
        for obj in declared:
            namespace = obj["metadata"].get("namespace") or obj["metadata"]["name"]
            if obj["kind"] == kind and (namespace in namespaces or kind.startswith("Validating")):
                apply_manifest(api, obj, update_existing=True)
    [code] = [o for o in declared if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "dask-reclaimer"]
    [cron] = [o for o in declared if o["kind"] == "CronJob" and o["metadata"]["name"] == "dask-reclaimer"]
    folder = tmp_path_factory.mktemp("reclaimer")
    for name, text in code["data"].items():
        (folder / name).write_text(text)
    token = request_token(api, OPERATOR_NAMESPACE, "dask-reclaimer")
    (folder / "token").write_text(token)
    return {"folder": folder, "cron": cron, "limits": json.loads(code["data"]["limits.json"])}


def cluster(namespace: str, name: str) -> dict:
    pod = {"containers": [{"name": "c", "image": "registry.example/dask:1"}]}
    return {"apiVersion": "kubernetes.dask.org/v1", "kind": "DaskCluster",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"idleTimeout": 60, "worker": {"replicas": 0, "spec": pod},
                     "scheduler": {"spec": pod, "service": {"ports": [{"name": "tcp-comm", "port": 8786}]}}}}


def run_reclaimer(server, reclaimer) -> subprocess.CompletedProcess:
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    folder = reclaimer["folder"]
    env = {"PATH": "/usr/bin:/bin", "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
           "RECLAIM_TOKEN_FILE": str(folder / "token"), "RECLAIM_CA_FILE": str(server.ca_file)}
    return subprocess.run([sys.executable, str(folder / "reclaimer.py"), str(folder / "limits.json")], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def names(api, namespace: str) -> set[str]:
    return {c["metadata"]["name"] for c in api_request(api, "GET", DASK.format(ns=namespace))["items"]}


def test_the_limits_are_each_persons_max_lifetime(reclaimer):
    assert reclaimer["limits"] == {"dask-alice": ALICE_LIFETIME_S, "dask-bob": 43200}


def test_a_cluster_past_its_owners_max_lifetime_is_deleted_and_others_are_kept(kube_apiserver, reclaimer):
    api = kube_apiserver.api_client
    apply_manifest(api, cluster("dask-alice", "old"))
    apply_manifest(api, cluster("dask-bob", "bobs"))
    time.sleep(ALICE_LIFETIME_S + 1)
    apply_manifest(api, cluster("dask-alice", "young"))
    done = run_reclaimer(kube_apiserver, reclaimer)
    assert done.returncode == 0, done.stderr
    assert "reclaimer: deleted dask-alice/old:" in done.stdout and f"the maximum there is {ALICE_LIFETIME_S} s" \
        in done.stdout, done.stdout
    assert "old" not in names(api, "dask-alice") and "young" in names(api, "dask-alice")
    assert "bobs" in names(api, "dask-bob")


def test_the_reclaimers_account_may_list_and_delete_clusters_and_nothing_else(kube_apiserver, reclaimer):
    token = (reclaimer["folder"] / "token").read_text()
    api = kube_apiserver.new_api_client(token)
    group = "kubernetes.dask.org"
    for namespace in ("dask-alice", "dask-bob"):
        assert access_review(api, "delete", group, "daskclusters", "", "x", namespace)["allowed"]
        assert access_review(api, "list", group, "daskclusters", "", "", namespace)["allowed"]
        for verb, grp, resource in (("create", group, "daskclusters"), ("patch", group, "daskclusters"),
                                    ("delete", "", "pods"), ("get", "", "secrets"), ("create", "", "pods")):
            assert not access_review(api, verb, grp, resource, "", "", namespace)["allowed"], (verb, resource)
    for namespace in ("default", OPERATOR_NAMESPACE, None):
        assert not access_review(api, "delete", group, "daskclusters", "", "x", namespace)["allowed"], namespace


def test_the_cron_job_is_admitted_as_declared(kube_apiserver, reclaimer):
    cron = reclaimer["cron"]
    answer = apply_manifest(kube_apiserver.api_client, cron, dry_run=True)
    pod = answer["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "dask-reclaimer" and pod["securityContext"]["runAsNonRoot"] is True
    namespace = api_request(kube_apiserver.api_client, "GET", f"/api/v1/namespaces/{OPERATOR_NAMESPACE}")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    # its pod, as the Job controller would create it, passes the namespace's restricted level
    job_pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "reclaimer-probe", "namespace": OPERATOR_NAMESPACE},
               "spec": pod}
    apply_manifest(kube_apiserver.api_client, job_pod, dry_run=True)


def test_a_persons_finalizer_on_their_cluster_is_refused(kube_apiserver, reclaimer):
    api = kube_apiserver.new_api_client()
    api.set_default_header("Impersonate-User", "sso:alice@vsphere.local")
    held = cluster("dask-alice", "held")
    held["metadata"]["finalizers"] = ["example.com/keep-my-gpus"]
    deadline = time.monotonic() + 30  # the server loads new bindings a moment after they are stored
    while True:
        try:
            apply_manifest(api, held, dry_run=True)
        except KubeApiError as exc:
            assert f"{RULE_PREFIX} operator-finalizers-only:" in exc.message, exc.message
            break
        assert time.monotonic() < deadline, "a person's finalizer was admitted"
        time.sleep(0.2)
    held["metadata"]["finalizers"] = ["kopf.zalando.org/KopfFinalizerMarker"]  # the operator's own
    assert apply_manifest(api, held, dry_run=True)["metadata"]["finalizers"] == held["metadata"]["finalizers"]


def test_a_namespace_the_reclaimer_cannot_read_is_reported_and_the_others_done(kube_apiserver, reclaimer, tmp_path):
    limits = tmp_path / "limits.json"
    limits.write_text(json.dumps({"dask-alice": ALICE_LIFETIME_S, "kube-system": 1}))
    folder = reclaimer["folder"]
    host, port = kube_apiserver.url.removeprefix("https://").rsplit(":", 1)
    env = {"PATH": "/usr/bin:/bin", "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
           "RECLAIM_TOKEN_FILE": str(folder / "token"), "RECLAIM_CA_FILE": str(kube_apiserver.ca_file)}
    done = subprocess.run([sys.executable, str(folder / "reclaimer.py"), str(limits)], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "reclaimer: kube-system: HTTPError: HTTP Error 403: Forbidden" in done.stderr, done.stderr


def test_the_script_is_the_repositorys(reclaimer):
    repo = Path(__file__).resolve().parents[2]
    assert (reclaimer["folder"] / "reclaimer.py").read_text() == \
        (repo / "components/dask/team/reclaimer.py").read_text()
