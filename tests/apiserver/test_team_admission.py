"""A hostile person of the team against the current stacks' real 1.33 API server: the program's
team objects (dev stack with ``users``) applied as declared: the admission policies and their
bindings, the people's namespaces with their parameters, Roles, quotas and limits; then each
attack made the way a person can make it, and the way the Dask operator would then carry it out.

- As alice (impersonated as ``sso:alice@vsphere.local``: the server authorizes and admits the
  request as her), her own DaskCluster, built by the runner's own builder from the stack's
  ``teamClusterSpec``, with one attack each: refused, with the server's message naming the
  rule, and nothing of it stored.
- As the Dask operator's account (the ServiceAccount the program binds in her namespace, the
  identity that creates a DaskCluster's Deployments, pods and Service), the pod or Service
  the operator would make of such a cluster: refused too (the policies match what it creates,
  whoever asks), so an attack that got past the DaskCluster could not get further.
- The benign path: alice's own cluster as the runner builds it, and the pods and Service of it
  as the operator makes them, admitted.

There is no controller-manager here: the ResourceQuota and LimitRange admission that need one are
off (tests/kube/apiserver.py), and the quota's attacks are the real node's (tests/cluster/test_team.py).
"""
from __future__ import annotations

import copy
import secrets
import time

import pytest

from components.addons import environment_job
from components.dask.team import reclaim as team_reclaim
from components.dask.team.admission import PARAMS, RULE_PREFIX
from tests.kube.rest import KubeApiError, api_request, apply_manifest
from tests.program.graph import run_program
from workloads.cluster import own_spec

pytestmark = pytest.mark.apiserver

ALICE = "sso:alice@vsphere.local"
USERS = ["name=alice@vsphere.local,gpus=2,idleTimeout=600", "name=bob@vsphere.local,gpus=1"]
NAMESPACE = "dask-alice"
KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Namespace", "ConfigMap", "Role",
         "RoleBinding", "ResourceQuota", "LimitRange")


@pytest.fixture(scope="module")
def team(kube_apiserver, operator_crds) -> dict:
    """The program's team objects applied (the shared Dask namespace under a name of its own);
    the stack's outputs."""
    api = kube_apiserver.api_client
    shared = f"team-admission-{secrets.token_hex(3)}"
    graph = run_program("dev", config={"users": USERS, "daskNamespace": shared})
    assert graph.error is None, graph.traceback
    declared = [r.manifest() for r in graph.kubernetes_objects()]
    for kind in KINDS:
        for obj in declared:
            namespace = obj["metadata"].get("namespace") or (obj["metadata"]["name"] if kind == "Namespace" else None)
            if obj["kind"] == kind and (namespace in (None, NAMESPACE, "dask-bob") or kind.startswith("Validating")):
                apply_manifest(api, obj, update_existing=True)
    # the RuntimeClass the GPU operator makes on a GPU cluster (its handler: the toolkit's runtime)
    apply_manifest(api, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
                         "handler": "nvidia"}, update_existing=True)
    [operator] = [subject for obj in declared if obj["kind"] == "RoleBinding"
                  and obj["metadata"].get("namespace") == NAMESPACE
                  and obj["metadata"]["name"] not in (team_reclaim.NAME, environment_job.RECORDER_ROLE)
                  for subject in obj["subjects"] if subject["kind"] == "ServiceAccount"]
    outputs = {**graph.outputs, "operator_user": f"system:serviceaccount:{operator['namespace']}:{operator['name']}"}
    wait_enforced(kube_apiserver, outputs)
    return outputs


def wait_enforced(server, outputs: dict, timeout_s: float = 30.0) -> None:
    """Until the server enforces the new bindings: it loads policies and bindings from its own
    informers, a moment after they are stored (a probe: a cluster kept for ever, dry run)."""
    for policy in ("pods", "services", "lifetime"):
        probe_for = own_cluster(outputs, name="probe")  # one attack each, so that only that policy refuses it
        if policy == "pods":
            probe_for["spec"]["worker"]["spec"]["nodeName"] = "x"
        elif policy == "services":
            probe_for["spec"]["scheduler"]["service"]["type"] = "NodePort"
        else:
            probe_for["spec"]["idleTimeout"] = 0
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                apply_manifest(as_alice(server), probe_for, dry_run=True)
            except KubeApiError as exc:
                if f"dask-tkg-team-{policy}" in exc.message:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"dask-tkg-team-{policy} not enforced {timeout_s:.0f} s after it was bound")
            time.sleep(0.2)


def as_user(server, user: str):
    """An admin client acting as ``user`` (impersonation: the server adds ``system:authenticated``
    and, for a service account, its groups; the admin's own rights play no part)."""
    api = server.new_api_client()
    api.set_default_header("Impersonate-User", user)
    return api


def as_alice(server):
    return as_user(server, ALICE)


def as_operator(server, outputs: dict):
    return as_user(server, outputs["operator_user"])


def own_cluster(outputs: dict, name: str = "alice-run", idle_timeout: int = 600) -> dict:
    """Alice's DaskCluster exactly as the runner builds it (workloads/cluster/own_spec.py)."""
    return own_spec.build(outputs["teamClusterSpec"], name=name, namespace=NAMESPACE, workers=2,
                          idle_timeout=idle_timeout, secret=f"dask-tls-{name}")


def refused(api, manifest: dict) -> str:
    """The server's message refusing ``manifest`` (a real create: nothing must be stored)."""
    with pytest.raises(KubeApiError) as info:
        apply_manifest(api, manifest)
    assert info.value.status in (403, 422), info.value
    return info.value.message


def gone(api, manifest: dict) -> bool:
    plural = {"DaskCluster": "daskclusters", "Pod": "pods", "Service": "services"}[manifest["kind"]]
    prefix = "/apis/kubernetes.dask.org/v1" if manifest["kind"] == "DaskCluster" else "/api/v1"
    try:
        api_request(api, "GET", f"{prefix}/namespaces/{NAMESPACE}/{plural}/{manifest['metadata']['name']}")
    except KubeApiError as exc:
        return exc.status == 404
    return False


def _pod_specs(cluster: dict) -> list[dict]:
    return [cluster["spec"]["scheduler"]["spec"], cluster["spec"]["worker"]["spec"]]


def _every_container(spec: dict) -> list[dict]:
    return spec["containers"]


POD_ATTACKS = {  # name -> (the rule that refuses it, what the person writes into each pod spec)
    "every GPU of a node": ("no-nvidia-variables", lambda s: [c.setdefault("env", []).append(
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}) for c in _every_container(s)]),
    "the GPU runtime": ("no-runtime-class", lambda s: s.update(runtimeClassName="nvidia")),
    "variables from a Secret": ("no-env-from", lambda s: [c.update(envFrom=[{"secretRef": {"name": "mine"}}])
                                                          for c in _every_container(s)]),
    "preempting others": ("no-priority-class", lambda s: s.update(priorityClassName="system-node-critical")),
    "a control-plane node": ("no-node-name", lambda s: s.update(nodeName="control-plane-0")),
    "every taint": ("pool-tolerations-only", lambda s: s.update(tolerations=[{"operator": "Exists"}])),
    "the control plane's taint": ("pool-tolerations-only", lambda s: s.update(tolerations=[
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}])),
    "claims on the share": ("no-ephemeral-volumes", lambda s: s.setdefault("volumes", []).append(
        {"name": "fill", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteMany"], "storageClassName": "nfs-external",
            "resources": {"requests": {"storage": "500Gi"}}}}}})),
}
SERVICE_ATTACKS = {
    "a published dashboard": ("cluster-ip-only", {"type": "LoadBalancer"}),
    "a node port": ("cluster-ip-only", {"type": "NodePort"}),
    "rerouted traffic": ("no-external-ips", {"externalIPs": ["10.20.0.10"]}),
}
LIFETIME_ATTACKS = {
    "kept for ever": lambda c: c["spec"].update(idleTimeout=0),
    "no idle timeout": lambda c: c["spec"].pop("idleTimeout"),
    "longer than hers": lambda c: c["spec"].update(idleTimeout=601),
}


def test_alice_s_own_cluster_as_the_runner_builds_it_is_admitted(kube_apiserver, team):
    cluster = own_cluster(team)
    answer = apply_manifest(as_alice(kube_apiserver), cluster, dry_run=True)
    assert answer["spec"]["idleTimeout"] == 600


@pytest.mark.parametrize("attack", list(POD_ATTACKS))
def test_a_pod_spec_attack_in_alice_s_cluster_is_refused_naming_its_rule(kube_apiserver, team, attack):
    rule, change = POD_ATTACKS[attack]
    cluster = own_cluster(team, name=f"attack-{secrets.token_hex(2)}")
    for spec in _pod_specs(cluster):
        change(spec)
    message = refused(as_alice(kube_apiserver), cluster)
    assert f"{RULE_PREFIX} {rule}:" in message and "dask-tkg-team-pods" in message, message
    assert gone(kube_apiserver.api_client, cluster)


@pytest.mark.parametrize("attack", list(SERVICE_ATTACKS))
def test_a_scheduler_service_attack_in_alice_s_cluster_is_refused_naming_its_rule(kube_apiserver, team, attack):
    rule, change = SERVICE_ATTACKS[attack]
    cluster = own_cluster(team, name=f"attack-{secrets.token_hex(2)}")
    cluster["spec"]["scheduler"]["service"].update(change)
    message = refused(as_alice(kube_apiserver), cluster)
    assert f"{RULE_PREFIX} {rule}:" in message and "dask-tkg-team-services" in message, message
    assert gone(kube_apiserver.api_client, cluster)


@pytest.mark.parametrize("attack", list(LIFETIME_ATTACKS))
def test_a_cluster_that_would_outlive_alice_s_idle_timeout_is_refused(kube_apiserver, team, attack):
    cluster = own_cluster(team, name=f"attack-{secrets.token_hex(2)}")
    LIFETIME_ATTACKS[attack](cluster)
    message = refused(as_alice(kube_apiserver), cluster)
    assert f"{RULE_PREFIX} idle-timeout:" in message and PARAMS in message, message
    assert gone(kube_apiserver.api_client, cluster)


def test_alice_cannot_switch_her_idle_timeout_off_later(kube_apiserver, team):
    api = as_alice(kube_apiserver)
    cluster = own_cluster(team, name=f"later-{secrets.token_hex(2)}")
    apply_manifest(api, cluster)
    path = f"/apis/kubernetes.dask.org/v1/namespaces/{NAMESPACE}/daskclusters/{cluster['metadata']['name']}"
    with pytest.raises(KubeApiError) as info:
        api_request(api, "PATCH", path, body={"spec": {"idleTimeout": 0}}, content_type="application/merge-patch+json")
    assert f"{RULE_PREFIX} idle-timeout:" in info.value.message, info.value.message
    stored = api_request(kube_apiserver.api_client, "GET", path)
    assert stored["spec"]["idleTimeout"] == 600
    api_request(api, "DELETE", path)


def operator_pod(cluster: dict, role: str = "worker") -> dict:
    """The pod the operator's Deployment would make of a DaskCluster's ``role`` spec."""
    spec = copy.deepcopy(cluster["spec"][role]["spec"])
    return {"apiVersion": "v1", "kind": "Pod", "spec": spec,
            "metadata": {"name": f"{cluster['metadata']['name']}-{role}", "namespace": NAMESPACE,
                         "labels": {"dask.org/cluster-name": cluster["metadata"]["name"]}}}


def operator_service(cluster: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "spec": copy.deepcopy(cluster["spec"]["scheduler"]["service"]),
            "metadata": {"name": f"{cluster['metadata']['name']}-scheduler", "namespace": NAMESPACE}}


def test_what_the_operator_makes_of_alice_s_cluster_is_admitted(kube_apiserver, team):
    cluster = own_cluster(team)
    api = as_operator(kube_apiserver, team)
    for role in ("scheduler", "worker"):
        assert apply_manifest(api, operator_pod(cluster, role), dry_run=True)["kind"] == "Pod"
    assert apply_manifest(api, operator_service(cluster), dry_run=True)["spec"]["type"] == "ClusterIP"


@pytest.mark.parametrize("attack", list(POD_ATTACKS))
def test_the_operator_cannot_make_an_attacking_pod_in_alice_s_namespace(kube_apiserver, team, attack):
    rule, change = POD_ATTACKS[attack]
    pod = operator_pod(own_cluster(team, name=f"op-{secrets.token_hex(2)}"))
    change(pod["spec"])
    message = refused(as_operator(kube_apiserver, team), pod)
    assert f"{RULE_PREFIX} {rule}:" in message, message
    assert gone(kube_apiserver.api_client, pod)


@pytest.mark.parametrize("attack", list(SERVICE_ATTACKS))
def test_the_operator_cannot_make_an_attacking_service_in_alice_s_namespace(kube_apiserver, team, attack):
    rule, change = SERVICE_ATTACKS[attack]
    service = operator_service(own_cluster(team, name=f"op-{secrets.token_hex(2)}"))
    service["spec"].update(change)
    message = refused(as_operator(kube_apiserver, team), service)
    assert f"{RULE_PREFIX} {rule}:" in message, message
    assert gone(kube_apiserver.api_client, service)


def test_the_policies_do_not_act_outside_the_team_s_namespaces(kube_apiserver, team, kube_namespace):
    """The shared Dask namespace and any other keep their own rules (a LoadBalancer there is the
    platform's choice, checked at preview)."""
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "published", "namespace": kube_namespace},
               "spec": {"type": "LoadBalancer", "ports": [{"port": 8786}]}}
    assert apply_manifest(kube_apiserver.api_client, service, dry_run=True)["spec"]["type"] == "LoadBalancer"


def test_no_container_runs_unbounded_nor_past_one_worker(kube_apiserver, team):
    """The namespace's LimitRange (LimitRanger admission, on in this server): a container without
    limits gets the scheduler's and no GPU; one asking for more than a GPU worker is refused."""
    api = as_operator(kube_apiserver, team)
    pod = operator_pod(own_cluster(team, name=f"limits-{secrets.token_hex(2)}"))
    for container in pod["spec"]["containers"]:
        container.pop("resources", None)
    [container] = apply_manifest(api, pod, dry_run=True)["spec"]["containers"]
    assert container["resources"] == {"limits": {"cpu": "1", "memory": "4Gi"},
                                      "requests": {"cpu": "1", "memory": "4Gi"}}
    for container in pod["spec"]["containers"]:
        container["resources"] = {"limits": {"cpu": "64", "memory": "48Gi"}}
    message = refused(api, pod)
    assert "maximum cpu usage per Container is 6, but limit is 64" in message, message
