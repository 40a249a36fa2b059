"""A team on the dev stack (``users`` with two people), as the program declares it under
Pulumi's mocks: for each person a namespace of their own (Pod Security restricted, the Dask
NetworkPolicies), a ResourceQuota of their GPUs, a Role and its RoleBinding to their SSO
subject, the Dask operator's Role there (and its kopf flag), the dataset and the prepared
environment as read-only PersistentVolume/claim pairs made from the shared claims' bound
volumes; nothing cluster-wide that names a person; the outputs the runner reads.

The mocks answer the read of a shared claim's bound volume as each provisioner makes it
(tests/program/harness.py: nfs-subdir's nfs source, vSphere CSI's csi source). What the Role
allows on a real API server: tests/apiserver/test_team_access.py.
"""
from __future__ import annotations

import json

import pytest

from components.dask import operator_rbac
from tests.program.graph import run_program, walk_strings
from workloads import contract

USERS = ["name=alice@vsphere.local,gpus=2", "name=bob@vsphere.local,gpus=1,idleTimeout=600"]
PEOPLE = {"alice@vsphere.local": "dask-alice", "bob@vsphere.local": "dask-bob"}
SHARED = "rapidsai"
CLAIMS = ("external-nfs-pvc", "external-nfs-pip-cache-pvc")
DASK = "kubernetes.dask.org"
EDIT = ["get", "list", "watch", "create", "update", "patch", "delete"]
PERSON_RULES = [
    {"apiGroups": [DASK], "resources": ["daskclusters", "daskworkergroups", "daskautoscalers", "daskjobs"],
     "verbs": EDIT},
    {"apiGroups": [DASK], "resources": ["daskworkergroups/scale"], "verbs": ["get", "update", "patch"]},
    {"apiGroups": [""], "resources": ["pods", "services", "endpoints", "events", "resourcequotas"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "get", "delete"]},
]


@pytest.fixture(scope="module")
def graph():
    g = run_program("dev", config={"users": USERS})
    assert g.error is None, g.traceback
    return g


def objects(graph, kind: str, namespace: str | None = None) -> list[dict]:
    found = [m for m in (r.manifest() for r in graph.kubernetes_objects()) if m.get("kind") == kind]
    return [m for m in found if namespace is None or m["metadata"].get("namespace") == namespace]


def one(graph, kind: str, namespace: str, name: str) -> dict:
    [found] = [m for m in objects(graph, kind, namespace) if m["metadata"]["name"] == name]
    return found


@pytest.mark.parametrize("person, namespace", sorted(PEOPLE.items()))
def test_each_person_gets_a_restricted_namespace_with_the_dask_network_policies(graph, person, namespace):
    [ns] = [n for n in objects(graph, "Namespace") if n["metadata"]["name"] == namespace]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    policies = {p["metadata"]["name"]: p["spec"] for p in objects(graph, "NetworkPolicy", namespace)}
    assert {"dask-default-deny", "dask-dns", "dask-scheduler-api", "dask-workers"} <= set(policies)
    assert policies["dask-default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    # the pods of any DaskCluster of the person: the operator's component label
    assert policies["dask-scheduler-api"]["podSelector"] == {"matchLabels": {"dask.org/component": "scheduler"}}
    assert policies["dask-workers"]["podSelector"] == {"matchLabels": {"dask.org/component": "worker"}}


def test_each_persons_quota_is_their_gpus_and_what_that_many_workers_and_a_scheduler_request(graph):
    # the dev stack: workers of 6 CPUs and 48Gi each, a scheduler of 1 CPU and 4Gi
    alice = one(graph, "ResourceQuota", "dask-alice", "dask-quota")["spec"]["hard"]
    assert alice == {"requests.nvidia.com/gpu": "2", "pods": "3", "requests.cpu": "13", "requests.memory": "100Gi",
                     **OBJECT_CAPS}
    bob = one(graph, "ResourceQuota", "dask-bob", "dask-quota")["spec"]["hard"]
    assert bob == {"requests.nvidia.com/gpu": "1", "pods": "2", "requests.cpu": "7", "requests.memory": "52Gi",
                   **OBJECT_CAPS}


# No published Service, the two read-only claims the program makes and no other, nothing on the RWX class
OBJECT_CAPS = {"services.loadbalancers": "0", "services.nodeports": "0", "persistentvolumeclaims": "2",
               "nfs-external.storageclass.storage.k8s.io/persistentvolumeclaims": "0",
               "nfs-external.storageclass.storage.k8s.io/requests.storage": "0"}


@pytest.mark.parametrize("namespace", sorted(PEOPLE.values()))
def test_each_person_has_no_system_priority_no_unbounded_container_and_their_admission_parameters(graph, namespace):
    system = one(graph, "ResourceQuota", namespace, "dask-system-priority")["spec"]
    assert system == {"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In",
         "values": ["system-node-critical", "system-cluster-critical"]}]}}
    [limits] = one(graph, "LimitRange", namespace, "dask-limits")["spec"]["limits"]
    # the dev stack: the scheduler's 1 CPU and 4Gi by default, one GPU worker's 6 CPUs and 48Gi at most; no
    # GPU maximum (the server would make it every container's default GPU limit)
    assert limits == {"type": "Container", "default": {"cpu": "1", "memory": "4Gi"},
                      "defaultRequest": {"cpu": "1", "memory": "4Gi"}, "max": {"cpu": "6", "memory": "48Gi"}}
    params = one(graph, "ConfigMap", namespace, "dask-team-limits")["data"]
    assert params["tolerationKeys"] == "" and int(params["idleTimeout"]) > 0


def test_the_teams_admission_policies_are_bound_to_the_team_namespaces_only(graph):
    policies = {p["metadata"]["name"]: p for p in objects(graph, "ValidatingAdmissionPolicy")}
    bindings = {b["metadata"]["name"]: b for b in objects(graph, "ValidatingAdmissionPolicyBinding")}
    assert set(policies) == set(bindings) == {"dask-tkg-team-pods", "dask-tkg-team-services", "dask-tkg-team-lifetime"}
    for name, bound in bindings.items():
        assert bound["spec"]["policyName"] == name and bound["spec"]["validationActions"] == ["Deny"]
        assert bound["spec"]["matchResources"] == {
            "namespaceSelector": {"matchLabels": {"app.kubernetes.io/component": "team"}}}
        assert policies[name]["spec"]["failurePolicy"] == "Fail"
    for namespace in PEOPLE.values():
        [space] = [n for n in objects(graph, "Namespace") if n["metadata"]["name"] == namespace]
        assert space["metadata"]["labels"]["app.kubernetes.io/component"] == "team"


@pytest.mark.parametrize("person, namespace", sorted(PEOPLE.items()))
def test_each_person_gets_a_role_of_their_namespace_bound_to_their_sso_subject(graph, person, namespace):
    role = one(graph, "Role", namespace, "dask-user")
    assert role["rules"] == PERSON_RULES
    binding = one(graph, "RoleBinding", namespace, "dask-user")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "dask-user"}
    assert binding["subjects"] == [{"kind": "User", "name": f"sso:{person}", "apiGroup": "rbac.authorization.k8s.io"}]
    # bound nowhere else
    elsewhere = [b for b in objects(graph, "RoleBinding") if b["metadata"]["namespace"] != namespace
                 and any(s.get("name") == f"sso:{person}" for s in b.get("subjects") or [])]
    assert elsewhere == []


def test_an_sso_group_is_bound_as_a_group(graph):
    g = run_program("dev", config={"users": ["name=data-science@vsphere.local,gpus=1,kind=Group"]})
    assert g.error is None, g.traceback
    [binding] = [b for b in objects(g, "RoleBinding", "dask-data-science") if b["metadata"]["name"] == "dask-user"]
    assert binding["subjects"] == [{"kind": "Group", "name": "sso:data-science@vsphere.local",
                                    "apiGroup": "rbac.authorization.k8s.io"}]


def test_nothing_cluster_wide_names_a_person(graph):
    for kind in ("ClusterRoleBinding", "ClusterRole"):
        for obj in objects(graph, kind):
            strings = [s for s, _ in walk_strings(obj)]
            assert not [s for s in strings if "alice" in s or "bob" in s or s.startswith("sso:")], obj


@pytest.mark.parametrize("namespace", sorted(PEOPLE.values()))
def test_the_operator_serves_each_persons_namespace_with_its_namespaced_role(graph, namespace):
    role = one(graph, "Role", namespace, operator_rbac.ROLE_NAME)
    assert role["rules"] == operator_rbac.RULES
    binding = one(graph, "RoleBinding", namespace, operator_rbac.ROLE_NAME)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": operator_rbac.SERVICE_ACCOUNT,
                                    "namespace": "dask-operator"}]
    release = graph.named("dask-operator")
    assert f"--namespace={namespace}" in release.inputs["values"]["kopfArgs"]
    assert "--namespace=rapidsai" in release.inputs["values"]["kopfArgs"]
    # its rights there come first: kopf retries a forbidden watch ~55 s, then gives up
    [role_resource] = [r for r in graph.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")
                       if r.manifest()["metadata"] == role["metadata"]]
    assert graph.depends_on(release, role_resource)


@pytest.mark.parametrize("namespace", sorted(PEOPLE.values()))
def test_each_person_reads_the_dataset_and_the_environment_through_a_read_only_volume(graph, namespace):
    for claim in CLAIMS:
        pvc = one(graph, "PersistentVolumeClaim", namespace, claim)
        assert pvc["spec"]["accessModes"] == ["ReadOnlyMany"] and pvc["spec"]["storageClassName"] == ""
        [pv] = [v for v in objects(graph, "PersistentVolume") if v["metadata"]["name"] == pvc["spec"]["volumeName"]]
        spec = pv["spec"]
        assert spec["accessModes"] == ["ReadOnlyMany"] and spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert spec["claimRef"] == {"namespace": namespace, "name": claim} and spec["storageClassName"] == ""
        # the shared claim's own volume (nfs-subdir: <share>/<namespace>-<claim>-<volume>), read-only
        assert spec["nfs"]["readOnly"] is True and spec["nfs"]["server"] == "192.168.100.50"
        assert spec["nfs"]["path"].startswith(f"/ml-share/{SHARED}-{claim}-pvc-")
        assert spec["mountOptions"] == ["nfsvers=4.1"]
        assert pvc["spec"]["resources"]["requests"]["storage"] == spec["capacity"]["storage"]


def test_with_vsphere_csi_the_read_only_volume_is_the_shared_file_volume(graph):
    g = run_program("dev", config={"users": USERS, "rwxProvisioner": "vsphere-csi"})
    assert g.error is None, g.traceback
    shared = [r for r in g.resources if r.type == "kubernetes:core/v1:PersistentVolume" and r.raw.get("read")]
    assert len(shared) == 2
    handles = {r.state["spec"]["csi"]["volumeHandle"] for r in shared}
    mine = [v for v in objects(g, "PersistentVolume") if v["spec"]["claimRef"]["namespace"] == "dask-alice"]
    assert {v["spec"]["csi"]["volumeHandle"] for v in mine} == handles
    for volume in mine:
        csi = volume["spec"]["csi"]
        assert csi["driver"] == "csi.vsphere.vmware.com" and csi["readOnly"] is True
        assert csi["volumeAttributes"] == {"type": "vSphere CNS File Volume"}  # not the provisioner's identity


def test_the_outputs_name_each_persons_namespace_gpus_and_idle_timeout(graph):
    assert graph.outputs[contract.TEAM_USERS] == {
        "alice@vsphere.local": {"namespace": "dask-alice", "gpus": 2, "idleTimeout": 3600},
        "bob@vsphere.local": {"namespace": "dask-bob", "gpus": 1, "idleTimeout": 600}}


def test_the_team_cluster_spec_is_the_shared_clusters_pods_namespace_neutral_without_tls(graph):
    spec = graph.outputs[contract.TEAM_CLUSTER_SPEC]
    assert "__secret__" not in json.dumps(spec)
    text = json.dumps(spec)
    assert SHARED not in text and "dask-tls" not in text and "/etc/dask/tls" not in text
    [shared] = list(objects(graph, "DaskCluster"))
    assert spec["scheduler"]["spec"]["containers"][0]["image"] == shared["spec"]["scheduler"]["spec"]["containers"][0][
        "image"]
    worker = spec["worker"]
    assert worker["replicas"] == 0
    [c] = worker["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert worker["spec"]["nodeSelector"] == shared["spec"]["worker"]["spec"]["nodeSelector"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["PATH"].startswith("/opt/dask-env/bin:") and "DASK_SCHEDULER_ADDRESS" not in env
    assert not [a for a in c["args"] if "://" in a]  # the controller gives the address in the cluster's namespace
    claims = {v["persistentVolumeClaim"]["claimName"]: v["persistentVolumeClaim"] for v in worker["spec"]["volumes"]
              if "persistentVolumeClaim" in v}
    assert set(claims) == set(CLAIMS) and all(c["readOnly"] is True for c in claims.values())
    assert all(m.get("readOnly") for m in c["volumeMounts"] if m["name"] in ("dataset", "dask-env"))
    assert spec["scheduler"]["service"]["selector"] == {"dask.org/component": "scheduler"}  # the runner names it


def test_without_users_nothing_of_a_team_is_declared_or_exported():
    g = run_program("dev")
    assert g.error is None, g.traceback
    assert not [n for n in objects(g, "Namespace") if n["metadata"]["name"].startswith("dask-")
                and n["metadata"]["name"] != "dask-operator"]
    assert objects(g, "ResourceQuota") == [] and objects(g, "PersistentVolume") == []
    assert contract.TEAM_USERS not in g.outputs and contract.TEAM_CLUSTER_SPEC not in g.outputs
    assert g.named("dask-operator").inputs["values"]["kopfArgs"] == ["--standalone", "--namespace=rapidsai"]


def test_the_teams_reclaimer_runs_in_the_operators_namespace_with_rights_only_over_the_peoples_clusters(graph):
    [cron] = objects(graph, "CronJob", "dask-operator")
    assert cron["metadata"]["name"] == "dask-reclaimer" and cron["spec"]["schedule"] == "*/5 * * * *"
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "dask-reclaimer" and pod["automountServiceAccountToken"] is True
    [code] = [c for c in objects(graph, "ConfigMap", "dask-operator") if c["metadata"]["name"] == "dask-reclaimer"]
    # the stack's default maximum lifetime (teamMaxLifetime: 12 h) for each person
    assert json.loads(code["data"]["limits.json"]) == dict.fromkeys(PEOPLE.values(), 43200)
    for namespace in PEOPLE.values():
        role = one(graph, "Role", namespace, "dask-reclaimer")
        assert role["rules"] == [{"apiGroups": ["kubernetes.dask.org"], "resources": ["daskclusters"],
                                  "verbs": ["list", "delete"]}]
        binding = one(graph, "RoleBinding", namespace, "dask-reclaimer")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "dask-reclaimer",
                                        "namespace": "dask-operator"}]
    held = [r for r in objects(graph, "Role") + objects(graph, "ClusterRole")
            if r["metadata"]["name"] == "dask-reclaimer" and r["metadata"].get("namespace") not in PEOPLE.values()]
    assert held == []


def test_the_environment_is_recorded_and_checked_in_each_persons_namespace(graph):
    """A person's pods check the prepared environment against the record in their own
    namespace (a pod reads no other namespace's ConfigMap): the Job records there too, after
    the namespaces exist, with a Role of get and patch on that one ConfigMap only."""
    job = next(r for r in graph.of_type("Job") if r.name == "environment-job")
    env = {e["name"]: e["value"] for e in job.manifest()["spec"]["template"]["spec"]["containers"][0]["env"]}
    dask_ns = job.manifest()["metadata"]["namespace"]
    assert env["RECORD_NAMESPACES"].split(",") == [dask_ns, *sorted(PEOPLE.values())]
    team = next(r for r in graph.of_type("Team"))
    assert graph.depends_on(job, team)
    for namespace in PEOPLE.values():
        assert not one(graph, "ConfigMap", namespace, "dask-environment-digests").get("data")
        role = one(graph, "Role", namespace, "dask-environment-recorder")
        assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"],
                                  "resourceNames": ["dask-environment-digests"], "verbs": ["get", "patch"]}]
        binding = one(graph, "RoleBinding", namespace, "dask-environment-recorder")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "dask-environment", "namespace": dask_ns}]
    spec = graph.outputs[contract.TEAM_CLUSTER_SPEC]
    for role in ("scheduler", "worker"):
        check = spec[role]["spec"]["initContainers"][0]
        assert check["name"] == "verify-environment"
        assert check["env"][0]["valueFrom"]["configMapKeyRef"]["key"] == env["RECORD_KEY"]
