"""A person's rights on the current stacks' real Kubernetes 1.33 API server: the namespaces, Roles and
RoleBindings the program declares for ``users`` (run under Pulumi's mocks) applied as declared,
and the server's RBAC authorizer asked, as ``sso:alice@vsphere.local`` (the subject VKS gives
a vCenter SSO user inside a workload cluster), through impersonation by the admin: access
reviews, and real requests answered 201, 200 or 403.

Alice may create DaskClusters, read her pods and their logs, port-forward and keep her TLS
Secret in dask-alice; she may do none of it in dask-bob, may not read the shared Dask
namespace's Secrets (nor create anything there), and holds nothing cluster-wide. A member of
an SSO group listed with ``kind=Group`` gets the group's namespace.
"""
from __future__ import annotations

import secrets

import pytest

from components.dask.team.admission import PARAMS
from tests.kube.rest import KubeApiError, access_review, api_request, apply_manifest
from tests.program.graph import run_program

pytestmark = pytest.mark.apiserver

ALICE = "sso:alice@vsphere.local"
USERS = ["name=alice@vsphere.local,gpus=2", "name=bob@vsphere.local,gpus=1",
         "name=data-science@vsphere.local,gpus=1,kind=Group"]
DASK = "kubernetes.dask.org"
ALLOWED = [  # (verb, group, resource, subresource, name) in her own namespace
    ("create", DASK, "daskclusters", "", ""), ("get", DASK, "daskclusters", "", "mine"),
    ("list", DASK, "daskclusters", "", ""), ("watch", DASK, "daskclusters", "", ""),
    ("delete", DASK, "daskclusters", "", "mine"), ("patch", DASK, "daskclusters", "", "mine"),
    ("patch", DASK, "daskworkergroups", "scale", "mine-default"), ("create", DASK, "daskautoscalers", "", ""),
    ("get", "", "pods", "", "mine-scheduler"), ("list", "", "pods", "", ""), ("watch", "", "pods", "", ""),
    ("get", "", "pods", "log", "mine-scheduler"), ("get", "", "pods", "portforward", "mine-scheduler"),
    ("create", "", "pods", "portforward", "mine-scheduler"), ("list", "", "services", "", ""),
    ("list", "", "events", "", ""), ("get", "", "resourcequotas", "", "dask-quota"),
    ("create", "", "secrets", "", ""), ("get", "", "secrets", "", "dask-tls-mine"),
    ("delete", "", "secrets", "", "dask-tls-mine"),
]
REFUSED_AT_HOME = [
    ("deletecollection", DASK, "daskclusters", "", ""), ("create", "", "pods", "", ""),
    ("create", "", "pods", "exec", "mine-scheduler"), ("create", "", "pods", "attach", "mine-scheduler"),
    ("list", "", "secrets", "", ""), ("watch", "", "secrets", "", ""), ("update", "", "secrets", "", "x"),
    ("update", "", "resourcequotas", "", "dask-quota"), ("delete", "", "resourcequotas", "", "dask-quota"),
    ("create", "", "persistentvolumeclaims", "", ""), ("delete", "", "persistentvolumeclaims", "", "external-nfs-pvc"),
    ("create", "rbac.authorization.k8s.io", "rolebindings", "", ""),
    ("patch", "rbac.authorization.k8s.io", "roles", "", "dask-user"),
    ("create", "", "serviceaccounts", "token", "default"), ("create", "apps", "deployments", "", ""),
    ("delete", "", "namespaces", "", "dask-alice"),
]
CLUSTER_WIDE = [("list", "", "namespaces"), ("list", "", "nodes"), ("list", "", "secrets"), ("list", "", "pods"),
                ("create", "", "persistentvolumes"), ("patch", "", "persistentvolumes"), ("list", DASK, "daskclusters"),
                ("create", "rbac.authorization.k8s.io", "clusterrolebindings"), ("impersonate", "", "users")]


@pytest.fixture(scope="module")
def team(kube_apiserver, operator_crds):
    """The program's team objects applied: the people's namespaces, Roles and RoleBindings; the
    shared Dask namespace (a name of its own) with a Secret in it."""
    api = kube_apiserver.api_client
    shared = f"team-shared-{secrets.token_hex(3)}"
    graph = run_program("dev", config={"users": USERS, "daskNamespace": shared})
    assert graph.error is None, graph.traceback
    declared = [r.manifest() for r in graph.kubernetes_objects()]
    people = {m["metadata"]["name"] for m in declared if m["kind"] == "Namespace" and
              m["metadata"]["name"] in ("dask-alice", "dask-bob", "dask-data-science")}
    assert len(people) == 3, people
    apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": shared}})
    # (the admission parameters too: where tests/apiserver/test_team_admission.py has bound the
    # team's policies on this server, they deny in a namespace without them)
    for kind in ("Namespace", "Role", "RoleBinding", "ResourceQuota", "ConfigMap"):
        for obj in declared:
            ns = obj["metadata"].get("namespace") if kind != "Namespace" else obj["metadata"]["name"]
            if obj["kind"] == kind and ns in people and obj["metadata"]["name"] in (ns, "dask-user", "dask-quota",
                                                                                  PARAMS):
                apply_manifest(api, obj, update_existing=True)
    apply_manifest(api, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dask-tls", "namespace": shared},
                         "stringData": {"ca.key": "k"}})
    return shared


def as_person(kube_apiserver, user: str = ALICE, group: str | None = None):
    """An admin client that acts as ``user`` (Kubernetes impersonation: the server authorizes
    each request as that user, and the admin's own rights play no part)."""
    api = kube_apiserver.new_api_client()
    api.set_default_header("Impersonate-User", user)
    if group:
        api.set_default_header("Impersonate-Group", group)
    return api


def may(api, verb: str, group: str, resource: str, subresource: str = "", name: str = "",
        namespace: str | None = None) -> bool:
    return access_review(api, verb, group, resource, subresource, name, namespace)["allowed"]


@pytest.mark.parametrize("verb, group, resource, subresource, name", ALLOWED)
def test_alice_may_run_her_clusters_in_her_namespace(kube_apiserver, team, verb, group, resource, subresource, name):
    with as_person(kube_apiserver) as api:
        assert may(api, verb, group, resource, subresource, name, "dask-alice") is True


@pytest.mark.parametrize("verb, group, resource, subresource, name", ALLOWED)
def test_alice_may_do_none_of_it_in_bobs_namespace_or_the_shared_one(kube_apiserver, team, verb, group, resource,
                                                                     subresource, name):
    with as_person(kube_apiserver) as api:
        assert may(api, verb, group, resource, subresource, name, "dask-bob") is False
        assert may(api, verb, group, resource, subresource, name, team) is False


@pytest.mark.parametrize("verb, group, resource, subresource, name", REFUSED_AT_HOME)
def test_alice_may_not_make_pods_exec_list_secrets_or_change_her_limits(kube_apiserver, team, verb, group, resource,
                                                                        subresource, name):
    with as_person(kube_apiserver) as api:
        assert may(api, verb, group, resource, subresource, name, "dask-alice") is False


@pytest.mark.parametrize("verb, group, resource", CLUSTER_WIDE)
def test_alice_holds_nothing_cluster_wide(kube_apiserver, team, verb, group, resource):
    with as_person(kube_apiserver) as api:
        assert may(api, verb, group, resource) is False


def test_a_member_of_a_listed_sso_group_gets_the_groups_namespace(kube_apiserver, team):
    with as_person(kube_apiserver, "sso:carol@vsphere.local", "sso:data-science@vsphere.local") as api:
        assert may(api, "create", DASK, "daskclusters", namespace="dask-data-science") is True
        assert may(api, "create", DASK, "daskclusters", namespace="dask-alice") is False
    with as_person(kube_apiserver, "sso:carol@vsphere.local") as api:  # not in the group: nothing
        assert may(api, "create", DASK, "daskclusters", namespace="dask-data-science") is False


def cluster(namespace: str) -> dict:
    name = f"mine-{secrets.token_hex(2)}"
    pod = {"containers": [{"name": "c", "image": "registry.example/dask:1"}]}
    return {"apiVersion": f"{DASK}/v1", "kind": "DaskCluster", "metadata": {"name": name, "namespace": namespace},
            "spec": {"idleTimeout": 60, "worker": {"replicas": 0, "spec": pod},
                     "scheduler": {"spec": pod, "service": {"ports": [{"name": "tcp-comm", "port": 8786}]}}}}


def test_real_requests_are_answered_201_and_200_at_home_and_403_elsewhere(kube_apiserver, team):
    with as_person(kube_apiserver) as api:
        made = apply_manifest(api, cluster("dask-alice"))
        assert made["metadata"]["namespace"] == "dask-alice"
        assert api_request(api, "GET", "/api/v1/namespaces/dask-alice/pods")["kind"] == "PodList"
        assert api_request(api, "GET", "/api/v1/namespaces/dask-alice/resourcequotas/dask-quota")["spec"]["hard"][
            "requests.nvidia.com/gpu"] == "2"
        refused = [(lambda: apply_manifest(api, cluster("dask-bob")), "DaskCluster in dask-bob"),
                   (lambda: api_request(api, "GET", f"/api/v1/namespaces/{team}/secrets/dask-tls"), "shared Secret"),
                   (lambda: api_request(api, "GET", f"/api/v1/namespaces/{team}/secrets"), "shared Secrets"),
                   (lambda: api_request(api, "GET", "/api/v1/nodes"), "nodes"),
                   (lambda: api_request(api, "GET", "/api/v1/persistentvolumes"), "volumes")]
        for call, what in refused:
            with pytest.raises(KubeApiError) as answer:
                call()
            assert answer.value.status == 403, (what, answer.value)
