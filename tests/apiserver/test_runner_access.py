"""The runner's namespaced identity on the current stacks' real Kubernetes (1.33) API server: the program's
ServiceAccount, Role and RoleBinding applied as declared, a token the server issues for the
account, and the runner's own kubeconfig built on it by the program's builder.

What it may do is what the runner calls (components/dask/runner_access.py), asked of the
server's RBAC authorizer through SelfSubjectAccessReviews made with that token; what it must
not do (Secrets, exec and attach, pod creation, the worker group's pod template, other
namespaces, anything cluster-wide, minting tokens) is refused there and, for a few, by real
requests answered 403. The runner's own port-forward code reaches the API server's streaming
endpoint with it; a Role granting only ``create`` on ``pods/portforward`` is refused there,
the websocket upgrade being a GET. The operator backend's resizing with this identity runs
against the real controller in tests/operator/test_controller.py.
"""
from __future__ import annotations

import secrets

import pytest

from tests.apiserver.runner_identity import apply_runner_identity, kubeconfig_for, request_token
from tests.kube.rest import KubeApiError, access_review, api_request, apply_manifest
from tests.operator.support import OPERATOR
from tests.program.graph import run_program

pytestmark = pytest.mark.apiserver

DASK = "kubernetes.dask.org"
ALLOWED = [  # (verb, group, resource, subresource, name): what the runner calls
    ("get", "", "services", "", "dask-scheduler"), ("list", "", "services", "", ""),
    ("get", "", "endpoints", "", "dask-scheduler"), ("list", "", "endpoints", "", ""),
    ("get", "", "pods", "", "dask-scheduler-0"), ("list", "", "pods", "", ""),
    ("get", "", "pods", "log", "dask-scheduler-0"),
    ("get", "", "pods", "portforward", "dask-scheduler-0"), ("create", "", "pods", "portforward", "dask-scheduler-0"),
]
RESIZING = [
    ("get", DASK, "daskworkergroups", "scale", "dask-default"),
    ("patch", DASK, "daskworkergroups", "scale", "dask-default"),
    ("get", DASK, "daskautoscalers", "", "dask"), ("patch", DASK, "daskautoscalers", "", "dask"),
    ("delete", DASK, "daskautoscalers", "", "dask"), ("create", DASK, "daskautoscalers", "", ""),
]
REFUSED = [
    ("get", "", "secrets", "", "dask-runner-token"), ("list", "", "secrets", "", ""), ("watch", "", "secrets", "", ""),
    ("create", "", "pods", "exec", "dask-scheduler-0"), ("get", "", "pods", "exec", "dask-scheduler-0"),
    ("create", "", "pods", "attach", "dask-scheduler-0"),
    ("create", "", "pods", "", ""), ("delete", "", "pods", "", "dask-scheduler-0"), ("patch", "", "pods", "", "x"),
    ("create", "", "serviceaccounts", "token", "dask-runner"), ("create", "", "serviceaccounts", "token", "default"),
    ("update", "", "configmaps", "", "x"), ("create", "rbac.authorization.k8s.io", "rolebindings", "", ""),
    ("create", "apps", "deployments", "", ""), ("patch", "apps", "deployments", "", "dask-scheduler"),
    ("patch", DASK, "daskworkergroups", "", "dask-default"),  # the group itself: its workers' pod template
    ("create", DASK, "daskworkergroups", "", ""), ("patch", DASK, "daskclusters", "", "dask"),
    ("create", DASK, "daskclusters", "", ""), ("create", DASK, "daskjobs", "", ""),
    ("patch", DASK, "daskworkergroups", "scale", "dask-cpu"),  # another group than the DaskCluster's own
    ("delete", DASK, "daskautoscalers", "", "other"),
]
ELSEWHERE = [  # the same rights, in other namespaces: refused
    ("get", "", "services", "", "kubernetes", "default"), ("list", "", "pods", "", "", "kube-system"),
    ("create", "", "pods", "portforward", "x", "kube-system"),
    ("patch", DASK, "daskworkergroups", "scale", "dask-default", "default"),
]
CLUSTER_WIDE = [("list", "", "namespaces", ""), ("list", "", "nodes", ""), ("list", "", "secrets", ""),
                ("list", "", "pods", ""), ("impersonate", "", "users", "")]


@pytest.fixture(scope="module")
def runner(kube_apiserver, operator_crds):
    """The operator stack's identity in a namespace of its own; the runner's kubeconfig."""
    api = kube_apiserver.api_client
    ns = f"runner-access-{secrets.token_hex(3)}"
    apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    graph = run_program("dev", config={**OPERATOR, "daskNamespace": ns})
    assert graph.error is None, graph.traceback
    apply_runner_identity(api, [r.manifest() for r in graph.kubernetes_objects()], ns)
    kubeconfig = kubeconfig_for(kube_apiserver.kubeconfig, request_token(api, ns), ns)
    return ns, kubeconfig


def client_of(kubeconfig: str):
    """A client as the runner makes one (workloads/cluster/port_forward.py)."""
    from workloads.cluster.port_forward import api_client

    return api_client(kubeconfig)


def test_the_runners_token_is_its_service_account(runner):
    ns, kubeconfig = runner
    with client_of(kubeconfig) as api:
        review = api_request(api, "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                             body={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                                   "spec": {"namespace": ns}})
    granted = {(tuple(r.get("apiGroups", [])), tuple(r["resources"]), tuple(r["verbs"]))
               for r in review["status"]["resourceRules"]}
    assert ((DASK,), ("daskworkergroups/scale",), ("get", "patch")) in granted
    assert not [g for g in granted if "secrets" in g[1] or "*" in g[1]], granted


@pytest.mark.parametrize("verb, group, resource, subresource, name", ALLOWED + RESIZING)
def test_the_runner_may_do_what_it_calls(runner, verb, group, resource, subresource, name):
    ns, kubeconfig = runner
    with client_of(kubeconfig) as api:
        answer = access_review(api, verb, group, resource, subresource, name, ns)
    assert answer["allowed"] is True, answer


@pytest.mark.parametrize("verb, group, resource, subresource, name", REFUSED)
def test_the_runner_may_not_read_secrets_exec_create_pods_or_rewrite_workers(runner, verb, group, resource,
                                                                            subresource, name):
    ns, kubeconfig = runner
    with client_of(kubeconfig) as api:
        answer = access_review(api, verb, group, resource, subresource, name, ns)
    assert answer["allowed"] is False, answer


@pytest.mark.parametrize("verb, group, resource, subresource, name, namespace", ELSEWHERE)
def test_the_runner_has_no_right_in_another_namespace(runner, verb, group, resource, subresource, name, namespace):
    _, kubeconfig = runner
    with client_of(kubeconfig) as api:
        assert access_review(api, verb, group, resource, subresource, name, namespace)["allowed"] is False


@pytest.mark.parametrize("verb, group, resource, subresource", CLUSTER_WIDE)
def test_the_runner_has_no_cluster_wide_right(runner, verb, group, resource, subresource):
    _, kubeconfig = runner
    with client_of(kubeconfig) as api:
        assert access_review(api, verb, group, resource, subresource, "", None)["allowed"] is False


def test_real_requests_for_secrets_other_namespaces_and_exec_are_answered_403(kube_apiserver, runner):
    ns, kubeconfig = runner
    apply_manifest(kube_apiserver.api_client, {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "dask-tls", "namespace": ns}, "stringData": {"tls.key": "k"}})
    with client_of(kubeconfig) as api:
        for method, path in (("GET", f"/api/v1/namespaces/{ns}/secrets/dask-tls"),
                             ("GET", f"/api/v1/namespaces/{ns}/secrets"),
                             ("GET", "/api/v1/namespaces"),
                             ("GET", "/api/v1/namespaces/kube-system/services"),
                             ("POST", f"/api/v1/namespaces/{ns}/pods/dask-scheduler-0/exec"),
                             ("POST", f"/api/v1/namespaces/{ns}/serviceaccounts/dask-runner/token")):
            with pytest.raises(KubeApiError) as refused:
                api_request(api, method, path, body={} if method == "POST" else None)
            assert refused.value.status == 403, (method, path, refused.value)
            assert f"system:serviceaccount:{ns}:dask-runner" in refused.value.message


def scheduler_objects(api, ns: str) -> tuple[dict, dict]:
    """A scheduler Service, its Endpoints and a pod (Pending: no node here), as the runner finds them."""
    pod = apply_manifest(api,
                         {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dask-scheduler-0", "namespace": ns},
                               "spec": {"containers": [{"name": "scheduler", "image": "x"}]}})
    service = apply_manifest(api, {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "dask-scheduler", "namespace": ns}, "spec": {"ports": [{"name": "tcp-comm", "port": 8786}]}})
    apply_manifest(api,
                   {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "dask-scheduler", "namespace": ns},
                         "subsets": [{"addresses": [{"ip": "10.1.0.5", "targetRef": {
                             "kind": "Pod", "name": "dask-scheduler-0", "namespace": ns}}],
                                      "ports": [{"name": "tcp-comm", "port": 8786}]}]})
    return service, pod


def test_the_runners_port_forward_code_gets_through_with_this_identity_alone(kube_apiserver, runner):
    from kubernetes import client as k8s

    from workloads.cluster import port_forward

    ns, kubeconfig = runner
    service, _ = scheduler_objects(kube_apiserver.api_client, ns)
    with client_of(kubeconfig) as api, client_of(kubeconfig) as stream_api:
        core = k8s.CoreV1Api(api)
        found = port_forward.find_service(core, port_forward.ServiceRef(ns, cluster_ip=service["spec"]["clusterIP"]))
        assert found.metadata.name == "dask-scheduler"  # listed, then matched by ClusterIP
        target = port_forward.ready_pod(core, found, (8786,))
        assert target == port_forward.PodTarget(ns, "dask-scheduler-0", {8786: 8786})
        assert port_forward.pod_state(core, target) == f"pod {ns}/dask-scheduler-0 is not ready"
        # past authorization: the server looks for the pod's node, which a Pending pod lacks
        with pytest.raises(port_forward.StreamNotOpened) as stream:
            port_forward.open_stream(k8s.CoreV1Api(stream_api), target, 8786, timeout=15)
    assert "does not have a host assigned" in str(stream.value), stream.value


def test_a_role_granting_only_create_on_portforward_is_refused_the_websocket(kube_apiserver, runner):
    """Control: the websocket upgrade is a GET, authorized as ``get`` on Kubernetes 1.20."""
    from kubernetes import client as k8s

    from workloads.cluster import port_forward

    ns, kubeconfig = runner
    api = kube_apiserver.api_client
    role = api_request(api, "GET", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/dask-runner")
    original = [dict(r) for r in role["rules"]]
    role["rules"] = [{**r, "verbs": ["create"]} if r["resources"] == ["pods/portforward"] else r for r in original]
    api_request(api, "PUT", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/dask-runner", body=role)
    try:
        with client_of(kubeconfig) as stream_api:
            target = port_forward.PodTarget(ns, "dask-scheduler-0", {8786: 8786})
            with pytest.raises(port_forward.StreamNotOpened) as refused:
                port_forward.open_stream(k8s.CoreV1Api(stream_api), target, 8786, timeout=15)
        assert 'cannot get resource "pods/portforward"' in str(refused.value), refused.value
    finally:
        role = api_request(api, "GET", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/dask-runner")
        role["rules"] = original
        api_request(api, "PUT", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/dask-runner", body=role)
