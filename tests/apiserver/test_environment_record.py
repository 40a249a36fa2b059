"""The environment Job's record (components/dask/environment/env_record.py) against the current
stacks' real 1.33 API server, with exactly the rights the program gives the Job: its
ServiceAccount, the digests ConfigMaps and its Roles and RoleBindings as declared for the dev
stack with ``users``, a token the server issues for that account, the script run as the Job runs
it (the lock ConfigMap's files), from outside a pod (address and token by environment).

``record`` writes the manifest and the digest into the Dask namespace's and each person's
ConfigMap; ``confirm`` vouches for an unchanged tree and asks for a rebuild (exit 3) when the
tree changed or nothing is recorded; the account may change nothing else (not the team's
admission parameters beside it); a person may not change the record in their namespace.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

import components.kube.prepared_env as prepared_env
from tests.kube.rest import api_request, apply_manifest
from tests.operator.operator_identity import request_token
from tests.program.graph import run_program

pytestmark = pytest.mark.apiserver

USERS = ["name=alice@vsphere.local,gpus=2", "name=bob@vsphere.local,gpus=1"]
PEOPLE = ("dask-alice", "dask-bob")
DIGESTS = "/api/v1/namespaces/{ns}/configmaps/dask-environment-digests"


@pytest.fixture(scope="module")
def recorder(kube_apiserver, tmp_path_factory) -> dict:
    api = kube_apiserver.api_client
    graph = run_program("dev", config={"users": USERS})
    assert graph.error is None, graph.traceback
    declared = [r.manifest() for r in graph.kubernetes_objects()]
    [job] = [o for o in declared if o["kind"] == "Job" and o["metadata"]["name"] == "dask-environment"]
    dask_ns = job["metadata"]["namespace"]
    namespaces = {dask_ns, *PEOPLE}
    for kind in ("Namespace", "ServiceAccount", "ConfigMap", "Role", "RoleBinding"):
        for obj in declared:
            namespace = obj["metadata"].get("namespace") or obj["metadata"]["name"]
            if obj["kind"] == kind and namespace in namespaces:
                apply_manifest(api, obj, update_existing=True)
    [lock] = [o for o in declared if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "dask-environment-lock"]
    folder = tmp_path_factory.mktemp("recorder")
    for name in (prepared_env.MANIFEST_SCRIPT, prepared_env.RECORD_SCRIPT):
        (folder / name).write_text(lock["data"][name])
    (folder / "token").write_text(request_token(api, dask_ns, "dask-environment"))
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    tree = folder / "env"
    (tree / "bin").mkdir(parents=True)
    (tree / "bin" / "dask").write_text("#!/opt/dask-env/bin/python\n")
    return {"api": api, "folder": folder, "env": env, "tree": tree, "dask_ns": dask_ns}


def may(api, user: str, groups: list[str], verb: str, resource: str, namespace: str, name: str = "") -> bool:
    """The server's RBAC answer (SubjectAccessReview) for ``user`` in ``groups``."""
    review = api_request(api, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": groups, "resourceAttributes": {
            "verb": verb, "resource": resource, "group": "", "namespace": namespace, "name": name}}})
    return bool(review["status"].get("allowed"))


def run(server, recorder, step: str) -> subprocess.CompletedProcess:
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    folder = recorder["folder"]
    env = {"PATH": "/usr/bin:/bin", "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
           "ENV_RECORD_TOKEN_FILE": str(folder / "token"), "ENV_RECORD_CA_FILE": str(server.ca_file),
           **{k: v for k, v in recorder["env"].items() if k.startswith("RECORD_")}}
    return subprocess.run([sys.executable, "-I", "-S", str(folder / prepared_env.RECORD_SCRIPT), step,
                           str(recorder["tree"])], env=env, capture_output=True, text=True, timeout=60, check=False)


def recorded(api, namespace: str, key: str) -> str:
    return (api_request(api, "GET", DIGESTS.format(ns=namespace)).get("data") or {}).get(key, "")


def test_confirm_without_a_record_asks_for_a_rebuild(kube_apiserver, recorder):
    api_request(recorder["api"], "PATCH", DIGESTS.format(ns=recorder["dask_ns"]),
                body={"data": {recorder["env"]["RECORD_KEY"]: None}}, content_type="application/merge-patch+json")
    done = run(kube_apiserver, recorder, "confirm")
    assert done.returncode == prepared_env.REBUILD_EXIT, done.stderr
    assert "nothing recorded" in done.stdout


def test_record_writes_the_digest_in_every_namespace(kube_apiserver, recorder):
    done = run(kube_apiserver, recorder, "record")
    assert done.returncode == 0, done.stderr
    manifest = (recorder["tree"] / ".manifest").read_text()
    key = recorder["env"]["RECORD_KEY"]
    sys.path.insert(0, str(recorder["folder"]))
    try:
        import env_manifest
    finally:
        sys.path.pop(0)
    for namespace in (recorder["dask_ns"], *PEOPLE):
        assert recorded(recorder["api"], namespace, key) == env_manifest.digest(manifest), namespace


def test_confirm_vouches_for_the_unchanged_tree_and_not_for_a_changed_one(kube_apiserver, recorder):
    assert run(kube_apiserver, recorder, "record").returncode == 0
    done = run(kube_apiserver, recorder, "confirm")
    assert done.returncode == 0, done.stdout + done.stderr
    (recorder["tree"] / "bin" / "dask").write_text("#!/bin/sh\necho changed\n")
    done = run(kube_apiserver, recorder, "confirm")
    assert done.returncode == prepared_env.REBUILD_EXIT, done.stdout + done.stderr
    assert "changed: bin/dask" in done.stdout


@pytest.mark.parametrize("verb, resource, name, namespace_of", [
    ("patch", "configmaps", "dask-team-limits", "person"),
    ("create", "configmaps", "", "dask"),
    ("patch", "configmaps", "dask-environment-lock", "dask"),
    ("delete", "configmaps", "dask-environment-digests", "dask"),
    ("get", "secrets", "", "person"),
    ("list", "configmaps", "", "person"),
])
def test_the_jobs_account_may_change_nothing_else(recorder, verb, resource, name, namespace_of):
    namespace = recorder["dask_ns"] if namespace_of == "dask" else PEOPLE[0]
    user = f"system:serviceaccount:{recorder['dask_ns']}:dask-environment"
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{recorder['dask_ns']}", "system:authenticated"]
    assert not may(recorder["api"], user, groups, verb, resource, namespace, name)
    assert may(recorder["api"], user, groups, "patch", "configmaps", namespace, "dask-environment-digests")


def test_a_person_may_not_change_the_record_in_their_namespace(recorder):
    for verb in ("patch", "update", "delete"):
        assert not may(recorder["api"], "sso:alice@vsphere.local", ["system:authenticated"], verb, "configmaps",
                       "dask-alice", "dask-environment-digests")
    # the same subject is who the program binds (so the refusals above are the Role's, not a wrong name)
    assert may(recorder["api"], "sso:alice@vsphere.local", ["system:authenticated"], "list", "pods", "dask-alice")

