"""A team on the current stacks' real Kubernetes 1.33 node: two people, alice and bob, each running Dask
clusters of their own through the runner (``--own-cluster``) with their own kubeconfig, under
real authentication (a client certificate of ``sso:<name>``) and real RBAC (the program's
Role and RoleBinding), against a real ResourceQuota of GPUs the node advertises, with
dask-kubernetes' own controller making the pods and reclaiming idle clusters.

What is applied is what the program declares for the dev stack with ``users`` set, run under
Pulumi's mocks: the team's admission policies and bindings, each person's namespace (Pod Security
``restricted``, judged by the server), quotas, limits, admission parameters, Role, RoleBinding,
NetworkPolicies, and the read-only volumes of the dataset and the prepared environment (tests/cluster/people.py says
how each differs here, and why; the pods run the image stand-in with the project's own virtual
environment, as tests/cluster/test_dask_release.py's do). The dataset is the smoke profile's,
on the shared claim's volume. The controller runs on the host as tests/cluster/test_default_image.py runs
it, serving both people's namespaces.
"""
from __future__ import annotations

import base64
import ipaddress
import json
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.cluster.dask_operator import apply_crds, delete_dask_resources
from tests.cluster.kube import (
    delete_namespaces,
    delete_volumes,
    event_summary,
    install_tkg_pod_security,
    pods,
    wait_for,
)
from tests.cluster.people import (
    NODE_GPUS,
    TeamController,
    advertise_gpus,
    apply_person,
    apply_team_admission,
    person_kubeconfig,
    person_outputs,
    runner,
    start_runner,
    wait_team_admission,
)
from tests.cluster.program import dev_stack
from tests.cluster.support import IMAGE_HOME, runtime_differences, shared_volume_stand_ins, smoke_dataset
from tests.kube.rest import KubeApiError, api_request, apply_manifest
from workloads.cluster import kubeconfig, own_spec, own_tls

ALICE, BOB = "alice@vsphere.local", "bob@vsphere.local"
IDLE_TIMEOUT_S = 60  # bob's: short, so that the test sees the controller reclaim his cluster
USERS = [f"name={ALICE},gpus=2,idleTimeout=600", f"name={BOB},gpus=1,idleTimeout={IDLE_TIMEOUT_S}"]
NAMESPACES = {ALICE: "dask-alice", BOB: "dask-bob"}
CLUSTERS = {"alice-run": ALICE, "alice-stopped": ALICE, "alice-second": ALICE,
            "bob-idle": BOB}  # the clusters the runs name, by owner
RUN_TIMEOUT_S = 600


class Team:
    def __init__(self, stack, kubeconfigs, outputs, controller, tmp):
        self.stack, self.kubeconfigs, self.outputs = stack, kubeconfigs, outputs
        self.controller, self.tmp = controller, tmp

    def person_api(self, name: str):
        return kubeconfig.load(self.kubeconfigs[name]).api_client()

    def argv(self, person: str, cluster: str, *extra: str) -> list[str]:
        return ["--outputs", str(self.outputs[cluster]), "--own-cluster", "--kubeconfig", str(self.kubeconfigs[person]),
                "--user", person, "--cluster-name", cluster, "--profile", "smoke", "--device", "cpu",
                "--no-report", "--output", str(self.tmp / f"results-{cluster}"), *extra]

    def run(self, person: str, cluster: str, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
        out = self.tmp / f"results-{cluster}"
        try:
            done = runner(self.argv(person, cluster, *extra), self.tmp, RUN_TIMEOUT_S)
        except Exception as exc:  # the timeout: its output says where it was
            pytest.fail(f"the runner did not finish in {RUN_TIMEOUT_S} s: {getattr(exc, 'stdout', '')!s:.4000}")
        return done, out


@pytest.fixture(scope="module")
def team(kube_cluster, tmp_path_factory):
    api = kube_cluster.api_client
    stack = dev_stack({"users": USERS})
    tmp = tmp_path_factory.mktemp("team")
    share = tmp / "share"
    runtime = runtime_differences(kube_cluster)  # the image stand-in and the project's venv, as the release's
    d = {"image": runtime["image"], "mounts": runtime["mounts"], "env": {**runtime["env"], "HOME": IMAGE_HOME}}
    service_ips = ipaddress.ip_network(kube_cluster.net.service_cidr)
    ips = {cluster: str(service_ips[240 + i]) for i, cluster in enumerate(CLUSTERS)}
    shared = shared_volume_stand_ins(stack, share)  # makes the directories the people's volumes share
    install_tkg_pod_security(api)
    apply_crds(api)
    advertise_gpus(api, kube_cluster.node_name, NODE_GPUS)
    volumes, controller = [], None
    try:
        apply_manifest(api,
                       next(o for o in stack.of_kind("Namespace") if o["metadata"]["name"] == stack.dask_namespace),
                       update_existing=True)
        (secret,) = [o for o in stack.of_kind("Secret") if o["metadata"].get("namespace") == stack.dask_namespace
                     and o["metadata"]["name"] == "dask-tls"]
        apply_manifest(api, secret, update_existing=True)  # a stack secret no person may read
        apply_team_admission(api, stack)
        for namespace in NAMESPACES.values():
            volumes += apply_person(api, stack, namespace, d["mounts"], share)
            wait_team_admission(api, namespace)
        smoke_dataset(share / "external-nfs-pvc", stack.settings)
        hosts = {ips[c]: own_spec.scheduler_names(c, NAMESPACES[p]) for c, p in CLUSTERS.items()}
        controller = TeamController(kube_cluster.kubeconfig, list(NAMESPACES.values()), tmp, hosts)
        kubeconfigs = {p: person_kubeconfig(kube_cluster, p, ns, tmp) for p, ns in NAMESPACES.items()}
        outputs = {}
        for cluster, person in CLUSTERS.items():
            path = tmp / f"outputs-{cluster}.json"
            path.write_text(json.dumps(person_outputs(stack, d, cluster, NAMESPACES[person], ips[cluster])))
            outputs[cluster] = path
        yield Team(stack, kubeconfigs, outputs, controller, tmp)
    finally:
        try:
            for namespace in NAMESPACES.values():
                delete_dask_resources(api, namespace)  # while the controller runs: it drops its finalizers
            delete_namespaces(api, [*NAMESPACES.values(), stack.dask_namespace])
        finally:
            if controller is not None:
                controller.stop()
            delete_volumes(api, volumes + shared)
            advertise_gpus(api, kube_cluster.node_name, None)


def left_in(api, namespace: str) -> dict:
    """What a person's namespace holds of a cluster: DaskClusters, pods, the runner's Secrets."""
    clusters = api_request(api, "GET", f"/apis/kubernetes.dask.org/v1/namespaces/{namespace}/daskclusters")["items"]
    secrets = [s["metadata"]["name"] for s in api_request(api, "GET",
                                                          f"/api/v1/namespaces/{namespace}/secrets")["items"]
               if s["metadata"]["name"].startswith("dask-tls-")]
    return {"daskclusters": [c["metadata"]["name"] for c in clusters],
            "pods": [p["metadata"]["name"] for p in pods(api, namespace)], "secrets": secrets}


NOTHING: dict[str, list[str]] = {"daskclusters": [], "pods": [], "secrets": []}


def test_a_cluster_over_quota_gets_the_runners_error_and_nothing_is_left_pending(kube_cluster, team):
    api = kube_cluster.api_client
    done, _ = team.run(ALICE, "alice-run", "--benchmark", "taxi", "--workers", "4")
    assert done.returncode == 2, done.stdout[-3000:]
    assert "error: quota allows 2 GPUs in dask-alice; asked 4 (4 worker(s) x 1 GPU(s) each" in done.stdout, \
        done.stdout[-3000:]
    assert left_in(api, "dask-alice") == NOTHING


def test_a_claim_beyond_the_programs_two_is_refused_by_the_quota(kube_cluster, team):
    """The share cannot be filled from a person's namespace: past the program's two read-only
    claims, the real ResourceQuota admission refuses any claim (as it would those an ephemeral
    volume makes the controller create, which the admission policies refuse first), whoever asks."""
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "fill", "namespace": "dask-alice"},
             "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "nfs-external",
                      "resources": {"requests": {"storage": "500Gi"}}}}
    with pytest.raises(KubeApiError) as refused:
        apply_manifest(kube_cluster.api_client, claim)
    assert refused.value.status == 403 and "exceeded quota: dask-quota" in refused.value.message, refused.value
    print(refused.value.message)
    assert "fill" not in {c["metadata"]["name"] for c in api_request(
        kube_cluster.api_client, "GET", "/api/v1/namespaces/dask-alice/persistentvolumeclaims")["items"]}


def forbidden(call) -> str:
    with pytest.raises(ApiException) as refused:
        call()
    assert refused.value.status == 403, refused.value
    return json.loads(refused.value.body)["message"]


def test_alice_cannot_make_a_cluster_in_bobs_namespace_nor_read_the_shared_secrets(kube_cluster, team):
    alice = team.person_api(ALICE)
    custom, core = k8s.CustomObjectsApi(alice), k8s.CoreV1Api(alice)
    body = {"apiVersion": "kubernetes.dask.org/v1", "kind": "DaskCluster", "metadata": {"name": "mine"},
            "spec": team.stack.outputs["teamClusterSpec"]}
    answers = {
        "create a DaskCluster in dask-bob": forbidden(lambda: custom.create_namespaced_custom_object(
            "kubernetes.dask.org", "v1", "dask-bob", "daskclusters", body)),
        "read the shared dask-tls Secret": forbidden(lambda: core.read_namespaced_secret("dask-tls",
                                                                                          team.stack.dask_namespace)),
        "list the shared Secrets": forbidden(lambda: core.list_namespaced_secret(team.stack.dask_namespace)),
    }
    print("403 answers:\n" + "\n".join(f"  {what}: {message}" for what, message in answers.items()))
    user = 'User "sso:alice@vsphere.local"'
    assert all(m.startswith(user) or f"{user} cannot" in m for m in answers.values()), answers
    # authenticated and allowed where the program says: her own namespace
    custom.list_namespaced_custom_object("kubernetes.dask.org", "v1", "dask-alice", "daskclusters")
    assert core.list_namespaced_resource_quota("dask-alice").items[0].spec.hard["requests.nvidia.com/gpu"] == "2"
    alice.close()


def test_alice_runs_both_benchmarks_on_a_cluster_of_her_own_deleted_at_the_end(kube_cluster, team):
    api = kube_cluster.api_client
    done, out = team.run(ALICE, "alice-run", "--benchmark", "all", "--workers", "2")
    log = done.stdout
    explain = f"{log[-6000:]}\nevents: {event_summary(api, 'dask-alice')}\ncontroller:\n{team.controller.tail(30)}"
    assert done.returncode == 0, explain
    print("alice's run:\n" + "\n".join(line for line in log.splitlines()
                                       if line.startswith(("own cluster:", "cluster:", "images", "taxi", "scaling"))
                                       or "|" in line))
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["benchmark"] for r in records) == ["images", "taxi"] and all(
        r["status"] == "succeeded" for r in records), records
    assert {r["config"]["endpoint"] for r in records} == {"own-cluster"}
    assert all(r["cluster"]["workers"] == 2 for r in records)
    assert "own cluster: DaskCluster dask-alice/alice-run for alice@vsphere.local: 2 worker(s) x 1 GPU(s)" in log
    assert "own cluster: deleted DaskCluster dask-alice/alice-run and its Secret dask-tls-alice-run" in log
    # the person's port-forward, not a route to the service network; no stack secret given, none of hers printed
    assert "does not answer from here; port-forward to pod dask-alice/alice-run-scheduler" in log, log[-3000:]
    given = json.loads(team.outputs["alice-run"].read_text())
    assert given["tlsClientKey"] == given["runnerKubeconfig"] == given["jupyterPassword"] == "[secret]"
    key = yaml.safe_load(team.kubeconfigs[ALICE].read_text())["users"][0]["user"]["client-key-data"]
    assert key not in log and base64.b64decode(key).decode().splitlines()[1] not in log
    wait_for("alice's cluster gone, pods and all", lambda: left_in(api, "dask-alice") == NOTHING, 120,
             explain=lambda: str(left_in(api, "dask-alice")))


def gpus_held(api, namespace: str) -> int:
    """The GPUs the namespace's live pods request (what the quota counts)."""
    return sum(int(c.get("resources", {}).get("requests", {}).get("nvidia.com/gpu", 0))
               for p in pods(api, namespace) if p["status"].get("phase") not in ("Succeeded", "Failed")
               for c in p["spec"]["containers"])


def test_two_clusters_started_at_once_over_the_quota_never_exceed_it_and_the_refused_one_says_so(kube_cluster, team):
    """alice starts two clusters of 2 GPU workers at once with a quota of 2 GPUs: both pass the
    runner's own check (nothing runs yet); the server's quota admission admits no pod beyond it
    (sampled throughout); a run whose workers it refuses ends with the quota's words and deletes
    its cluster; nothing is left behind."""
    api = kube_cluster.api_client
    runs = {name: start_runner(team.argv(ALICE, name, "--benchmark", "taxi", "--workers", "2"), team.tmp)
            for name in ("alice-run", "alice-second")}
    logs = {name: [] for name in runs}
    for name, proc in runs.items():
        threading.Thread(target=lambda n=name, p=proc: logs[n].extend(p.stdout), daemon=True).start()
    most = 0
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while any(p.poll() is None for p in runs.values()) and time.monotonic() < deadline:
            most = max(most, gpus_held(api, "dask-alice"))
            time.sleep(0.3)
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
    time.sleep(0.5)
    text = {name: "".join(lines) for name, lines in logs.items()}
    codes = {name: proc.returncode for name, proc in runs.items()}
    print(dict(codes.items()), "most GPUs held at once:", most)
    assert 0 < most <= 2, (most, text)
    refused = [name for name, code in codes.items() if code != 0]
    assert refused, f"both ran with 2 GPUs each under a quota of 2: {codes}"
    for name in refused:
        assert codes[name] == 2, (name, text[name][-3000:])
        assert f"the DaskCluster dask-alice/{name} cannot get its 2 worker(s): the namespace's quota refused" in \
            text[name], text[name][-3000:]
        assert "exceeded quota: dask-quota" in text[name]
        assert f"own cluster: deleted DaskCluster dask-alice/{name}" in text[name], text[name][-3000:]
    wait_for("both clusters gone, pods and all", lambda: left_in(api, "dask-alice") == NOTHING, 120,
             explain=lambda: str(left_in(api, "dask-alice")))


def test_an_idle_cluster_is_deleted_after_its_owners_idle_timeout(kube_cluster, team):
    api = kube_cluster.api_client
    done, _ = team.run(BOB, "bob-idle", "--benchmark", "taxi", "--workers", "1", "--keep-cluster")
    ended = time.monotonic()
    assert done.returncode == 0, f"{done.stdout[-4000:]}\nevents: {event_summary(api, 'dask-bob')}"
    assert f"deleted once idle for {IDLE_TIMEOUT_S} s" in done.stdout
    kept = api_request(api, "GET", "/apis/kubernetes.dask.org/v1/namespaces/dask-bob/daskclusters/bob-idle")
    assert kept["spec"]["idleTimeout"] == IDLE_TIMEOUT_S
    assert left_in(api, "dask-bob")["secrets"] == [own_tls.secret_name("bob-idle")]
    time.sleep(IDLE_TIMEOUT_S / 2)
    assert left_in(api, "dask-bob")["daskclusters"] == ["bob-idle"]  # kept: not the runner that deletes it

    def gone():
        try:
            api_request(api, "GET", "/apis/kubernetes.dask.org/v1/namespaces/dask-bob/daskclusters/bob-idle")
        except KubeApiError as exc:
            return exc.status == 404
        return False

    wait_for("bob's idle cluster deleted by the controller", gone, IDLE_TIMEOUT_S + 90, interval_s=1.0,
             explain=lambda: team.controller.tail(20))
    deleted_after = time.monotonic() - ended
    print(f"bob's idle cluster (idleTimeout {IDLE_TIMEOUT_S} s) deleted {deleted_after:.0f} s after his run ended")
    assert deleted_after <= IDLE_TIMEOUT_S + 60
    # the Secret goes with it (owned by the DaskCluster), and the pods
    wait_for("bob's namespace empty", lambda: left_in(api, "dask-bob") == NOTHING, 120,
             explain=lambda: str(left_in(api, "dask-bob")))


def test_ctrl_c_during_a_run_deletes_the_cluster(kube_cluster, team):
    api = kube_cluster.api_client
    proc = start_runner(team.argv(ALICE, "alice-stopped", "--benchmark", "taxi", "--workers", "1"), team.tmp)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put("")], daemon=True).start()
    seen = []
    try:
        while not any(line.startswith("cluster: tls://alice-stopped-scheduler.") for line in seen):
            line = lines.get(timeout=RUN_TIMEOUT_S)
            assert line, "".join(seen)[-3000:]
            seen.append(line)
        assert left_in(api, "dask-alice")["daskclusters"] == ["alice-stopped"]
        proc.send_signal(signal.SIGINT)  # Ctrl-C, while the sweep reaches the cluster
        assert proc.wait(timeout=180) == 130, "".join(seen)[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    while (line := lines.get(timeout=30)):
        seen.append(line)
    log = "".join(seen)
    assert "interrupted (SIGINT)" in log, log[-3000:]
    assert "own cluster: deleted DaskCluster dask-alice/alice-stopped and its Secret dask-tls-alice-stopped" in log
    wait_for("the interrupted cluster gone, pods and all", lambda: left_in(api, "dask-alice") == NOTHING, 120,
             explain=lambda: str(left_in(api, "dask-alice")))
