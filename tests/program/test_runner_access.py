"""The runner's namespaced identity, as the program declares it under Pulumi's mocks: a
ServiceAccount of the Dask namespace, a Role with exactly the rules the runner calls, bound to
that account alone, nothing cluster-wide, and the stack output ``runnerKubeconfig`` (a secret)
built on the account's token, in place of the cluster's admin kubeconfig.

What the Role allows and refuses on a real API server: tests/apiserver/test_runner_access.py.
"""
from __future__ import annotations

import base64

import pytest
import yaml

from tests.operator.support import OPERATOR
from tests.program.graph import run_program, walk_strings
from tests.program.harness import ADMIN_KUBECONFIG, RUNNER_TOKEN
from workloads import contract

NAMESPACE = "rapidsai"
SUBJECT = {"kind": "ServiceAccount", "name": "dask-runner", "namespace": NAMESPACE}
READ = [
    {"apiGroups": [""], "resources": ["services", "endpoints", "pods"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    # get: the websocket upgrade on Kubernetes up to 1.34; create: 1.35 asks for both
    {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get", "create"]},
]
RESIZE = [
    {"apiGroups": ["kubernetes.dask.org"], "resources": ["daskworkergroups/scale"], "resourceNames": ["dask-default"],
     "verbs": ["get", "patch"]},
    {"apiGroups": ["kubernetes.dask.org"], "resources": ["daskautoscalers"], "resourceNames": ["dask"],
     "verbs": ["get", "patch", "delete"]},
    {"apiGroups": ["kubernetes.dask.org"], "resources": ["daskautoscalers"], "verbs": ["create"]},
]
BACKENDS = {"helm": ({}, READ), "operator": (OPERATOR, READ + RESIZE)}


def graph_of(backend: str):
    graph = run_program("reference", config=BACKENDS[backend][0])
    assert graph.error is None, graph.traceback
    return graph


def objects(graph, kind: str) -> list[dict]:
    return [m for m in (r.manifest() for r in graph.kubernetes_objects()) if m.get("kind") == kind]


def binds_runner(binding: dict) -> bool:
    return any(s.get("kind") == "ServiceAccount" and s.get("name") == "dask-runner"
               for s in binding.get("subjects") or [])


def plain(value):
    return value["__secret__"] if isinstance(value, dict) and "__secret__" in value else value


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_runner_gets_an_account_and_a_role_of_the_dask_namespace_and_nothing_cluster_wide(backend):
    graph = graph_of(backend)
    [account] = [a for a in objects(graph, "ServiceAccount") if a["metadata"]["name"] == "dask-runner"]
    assert account["metadata"]["namespace"] == NAMESPACE and account["automountServiceAccountToken"] is False
    [role] = [r for r in objects(graph, "Role") if r["metadata"]["name"] == "dask-runner"]
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == BACKENDS[backend][1]
    for rule in role["rules"]:  # nothing on Secrets, no exec or attach, no pod creation, no wildcard
        assert not {"secrets", "pods/exec", "pods/attach", "*"} & set(rule["resources"]), rule
        assert "*" not in rule["verbs"] and "*" not in rule["apiGroups"], rule
        assert not (rule["resources"] == ["pods"] and {"create", "update", "patch", "delete"} & set(rule["verbs"]))
    [binding] = [b for b in objects(graph, "RoleBinding") if binds_runner(b)]
    assert binding["metadata"]["namespace"] == NAMESPACE
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "dask-runner"}
    assert binding["subjects"] == [SUBJECT]
    assert not [b for b in objects(graph, "ClusterRoleBinding") if binds_runner(b)]
    assert not [r for r in objects(graph, "ClusterRole") if r["metadata"]["name"].startswith("dask-runner")]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_token_secret_names_the_account_and_is_created_after_it(backend):
    graph = graph_of(backend)
    [token] = [r for r in graph.of_type("kubernetes:core/v1:Secret")
               if r.inputs.get("type") == "kubernetes.io/service-account-token"]
    meta = token.inputs["metadata"]
    assert (meta["name"], meta["namespace"]) == ("dask-runner-token", NAMESPACE)
    assert meta["annotations"] == {"kubernetes.io/service-account.name": "dask-runner"}
    account = next(r for r in graph.of_type("kubernetes:core/v1:ServiceAccount")
                   if r.inputs["metadata"]["name"] == "dask-runner")
    assert graph.depends_on(token, account)  # the token controller deletes a token of no account


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_stack_exports_the_runners_kubeconfig_as_a_secret_and_not_the_admin_one(backend):
    outputs = graph_of(backend).outputs
    assert "kubeconfig" not in outputs  # the cluster's admin kubeconfig is no output
    exported = outputs[contract.RUNNER_KUBECONFIG]
    assert isinstance(exported, dict) and set(exported) == {"__secret__"}
    config = yaml.safe_load(exported["__secret__"])
    admin = yaml.safe_load(ADMIN_KUBECONFIG)
    assert config["clusters"] == [{"name": "tkc", "cluster": admin["clusters"][0]["cluster"]}]
    assert config["users"] == [{"name": "dask-runner@tkc", "user": {"token": RUNNER_TOKEN}}]
    assert config["contexts"][0]["context"] == {"cluster": "tkc", "user": "dask-runner@tkc", "namespace": NAMESPACE}
    # nothing of the admin's client certificate or key, anywhere in the outputs
    admin_user = admin["users"][0]["user"]
    strings = [s for s, _ in walk_strings(outputs)]
    for credential in (admin_user["client-certificate-data"], admin_user["client-key-data"]):
        assert not [s for s in strings if credential in s]
    assert contract.parse_outputs({k: plain(v) for k, v in outputs.items()}).kubeconfig == exported["__secret__"]


def test_the_runner_reads_only_its_own_kubeconfig_never_an_admin_one():
    """A stack deployed before the runner had its own identity exports ``kubeconfig`` (the
    admin's): the runner takes nothing from it."""
    outputs = {"schedulerAddress": "tcp://dask-scheduler.rapidsai.svc.cluster.local:8786",
               "dashboardUrl": "http://x:8787", "jupyterUrl": "", "daskNamespace": NAMESPACE, "daskRelease": "dask",
               "datasetMountPath": "/ml-share", "datasetLayout": {}, "workerCount": 1, "gpusPerWorker": 1,
               "threadsPerWorker": 1, "daskImage": "i", "daskVersion": "2026.7.1"}
    assert contract.parse_outputs({**outputs, "kubeconfig": ADMIN_KUBECONFIG}).kubeconfig == ""
    assert contract.parse_outputs({**outputs, "runnerKubeconfig": "k"}).kubeconfig == "k"


def test_a_token_the_controller_has_not_filled_is_refused_naming_the_secret():
    from components.dask.runner_access import RunnerKubeconfigError, runner_kubeconfig

    with pytest.raises(RunnerKubeconfigError, match=r"Secret rapidsai/dask-runner-token has no data.token"):
        runner_kubeconfig(ADMIN_KUBECONFIG, None, NAMESPACE)


def test_an_admin_kubeconfig_without_the_clusters_ca_is_refused():
    from components.dask.runner_access import RunnerKubeconfigError, runner_kubeconfig

    admin = yaml.safe_load(ADMIN_KUBECONFIG)
    del admin["clusters"][0]["cluster"]["certificate-authority-data"]
    token = base64.b64encode(b"t").decode()
    with pytest.raises(RunnerKubeconfigError, match="no server or no certificate-authority-data"):
        runner_kubeconfig(yaml.safe_dump(admin), token, NAMESPACE)
