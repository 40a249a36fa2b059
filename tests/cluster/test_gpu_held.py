"""GPU-seconds held (issue 52) on the current stacks' real Kubernetes 1.33 node: a person's own
DaskCluster (``--own-cluster``, her kubeconfig, the program's Role and quota, dask-kubernetes' own
controller making the pods, as tests/cluster/test_team.py sets them up) whose workers each request
one ``nvidia.com/gpu``, which the node advertises as an extended resource (patched into its
status, and put back after). The runner reads the pods with her kubeconfig; the test watches
them with the admin's, on its own, four times a second, and holds each record against what it saw:

- a run's held GPU-seconds are its pods' lifetimes (requested GPUs x from scheduled to the
  record's end, for the pods still there), within the runner's sampling step; each worker waited
  from scheduled to joined, and the three parts add up to held;
- an interrupted run is charged up to its end (between the SIGINT and the runner's exit);
- a run that waited for a node (one GPU advertised, two workers asked, the second GPU advertised
  later) shows the wait: the pod's unscheduled time, charged as nothing held.

The workers have no GPU to measure: busy is null and the note says so.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import json
import queue
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.cluster.dask_operator import apply_crds, delete_dask_resources
from tests.cluster.kube import (
    delete_namespaces,
    delete_volumes,
    event_summary,
    events,
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
from tests.kube.rest import apply_manifest
from workloads.cluster import own_spec
from workloads.observe.gpu_usage import STEP_S
from workloads.runs import results

ALICE, NAMESPACE = "alice@vsphere.local", "dask-alice"
CLUSTERS = ("held-run", "held-stopped", "held-waited")
RUN_TIMEOUT_S = 600
WAIT_FOR_NODE_S = 15  # how long the second worker waits for a node with a free GPU


def moment(text: str | None) -> float | None:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None


class PodWatch:
    """The test's own view of a cluster's pods (the admin's kubeconfig, every 0.25 s): each pod's
    GPUs (its containers' ``nvidia.com/gpu`` limits), creation, scheduling and last sighting."""

    def __init__(self, api, cluster: str):
        self.api, self.selector = api, f"dask.org/cluster-name={cluster}"
        self.seen: dict[str, dict] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def __enter__(self) -> PodWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)

    def loop(self) -> None:
        while not self.stop.is_set():
            now = time.time()
            for pod in pods(self.api, NAMESPACE, self.selector):
                scheduled = [c.get("lastTransitionTime") for c in pod["status"].get("conditions") or ()
                             if c["type"] == "PodScheduled" and c["status"] == "True"]
                entry = self.seen.setdefault(pod["metadata"]["name"], {"first_seen": now})
                entry.update(last_seen=now, created=moment(pod["metadata"]["creationTimestamp"]),
                             scheduled=moment(scheduled[0]) if scheduled else None,
                             gpus=sum(int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
                                      for c in pod["spec"]["containers"]))
            self.stop.wait(0.25)

    def unscheduled(self) -> float:
        """GPU-seconds asked for and not yet given: created to scheduled."""
        return sum(p["gpus"] * (p["scheduled"] - p["created"]) for p in self.seen.values() if p["scheduled"])

    def held(self, end: float) -> float:
        """GPU-seconds held up to ``end`` by what was seen: scheduled to ``end`` for each pod
        still there then (the cluster is deleted after the run)."""
        assert all(p["last_seen"] >= end - STEP_S for p in self.seen.values() if p["gpus"]), self.seen
        return sum(p["gpus"] * (end - p["scheduled"]) for p in self.seen.values() if p["scheduled"] is not None)


@pytest.fixture(scope="module")
def alice(kube_cluster, tmp_path_factory):
    """Alice's namespace as the program declares it (test_team.py's, for one person), the
    controller serving it, her kubeconfig and, per cluster name, the outputs she runs with."""
    api = kube_cluster.api_client
    stack = dev_stack({"users": [f"name={ALICE},gpus=2,idleTimeout=600"]})
    tmp = tmp_path_factory.mktemp("gpu-held")
    share = tmp / "share"
    runtime = runtime_differences(kube_cluster)
    d = {"image": runtime["image"], "mounts": runtime["mounts"], "env": {**runtime["env"], "HOME": IMAGE_HOME}}
    service_ips = ipaddress.ip_network(kube_cluster.net.service_cidr)
    ips = {cluster: str(service_ips[250 + i]) for i, cluster in enumerate(CLUSTERS)}
    shared = shared_volume_stand_ins(stack, share)
    install_tkg_pod_security(api)
    apply_crds(api)
    advertise_gpus(api, kube_cluster.node_name, NODE_GPUS)
    volumes, controller = [], None
    try:
        (space,) = [o for o in stack.of_kind("Namespace") if o["metadata"]["name"] == stack.dask_namespace]
        apply_manifest(api, space, update_existing=True)
        apply_team_admission(api, stack)
        volumes += apply_person(api, stack, NAMESPACE, d["mounts"], share)
        wait_team_admission(api, NAMESPACE)
        smoke_dataset(share / "external-nfs-pvc", stack.settings)
        hosts = {ips[c]: own_spec.scheduler_names(c, NAMESPACE) for c in CLUSTERS}
        controller = TeamController(kube_cluster.kubeconfig, [NAMESPACE], tmp, hosts)
        kubeconfig = person_kubeconfig(kube_cluster, ALICE, NAMESPACE, tmp)
        outputs = {}
        for cluster in CLUSTERS:
            outputs[cluster] = tmp / f"outputs-{cluster}.json"
            outputs[cluster].write_text(json.dumps(person_outputs(stack, d, cluster, NAMESPACE, ips[cluster])))

        def argv(cluster: str, *extra: str) -> list[str]:
            return ["--outputs", str(outputs[cluster]), "--own-cluster", "--kubeconfig", str(kubeconfig),
                    "--user", ALICE, "--cluster-name", cluster, "--profile", "smoke", "--device", "cpu",
                    "--benchmark", "taxi", "--no-report", "--output", str(tmp / f"results-{cluster}"), *extra]

        yield argv, tmp, controller
    finally:
        try:
            delete_dask_resources(api, NAMESPACE)
            delete_namespaces(api, [NAMESPACE, stack.dask_namespace])
        finally:
            if controller is not None:
                controller.stop()
            delete_volumes(api, volumes + shared)
            advertise_gpus(api, kube_cluster.node_name, None)


def nothing_left(api) -> None:
    """Until the namespace holds no pod of an earlier run (its quota counts them while they go)."""
    wait_for("the earlier clusters' pods gone", lambda: not pods(api, NAMESPACE), 120,
             explain=lambda: str([p["metadata"]["name"] for p in pods(api, NAMESPACE)]))


def the_record(tmp: Path, cluster: str) -> dict:
    (record,) = results.read_records(tmp / f"results-{cluster}")
    return record


def check_against(watch: PodWatch, usage: dict, cluster: str) -> float:
    """The record's ``gpu_usage`` against the test's own view; returns the window's end."""
    end = moment(usage["window"]["end"])
    assert end is not None
    assert (usage["source"], usage["person"], usage["namespace"], usage["dask_cluster"]) == \
        ("pods", ALICE, NAMESPACE, cluster)
    listed = {p["name"]: p for p in usage["pods"]}
    assert set(listed) == set(watch.seen), (listed, watch.seen)
    for name, seen in watch.seen.items():
        assert listed[name]["gpus"] == seen["gpus"] and moment(listed[name]["start"]) == seen["scheduled"]
        assert listed[name]["running"] and moment(listed[name]["end"]) == pytest.approx(end, abs=0.01)
    workers = [p for p in listed.values() if p["gpus"]]
    assert usage["gpus"] == sum(p["gpus"] for p in workers) == 2
    print(f"{cluster}: held {usage['held_gpu_seconds']} GPU-s (waiting {usage['waiting_gpu_seconds']}, working"
          f" {usage['working_gpu_seconds']}, idle {usage['idle_gpu_seconds']}, unscheduled"
          f" {usage['unscheduled_gpu_seconds']}); the test's own view: {watch.held(end):.3f}")
    assert usage["held_gpu_seconds"] == pytest.approx(watch.held(end), abs=STEP_S * len(workers))
    assert usage["unscheduled_gpu_seconds"] == pytest.approx(watch.unscheduled(), abs=0.01)
    parts = sum(usage[f"{key}_gpu_seconds"] for key in ("waiting", "working", "idle"))
    assert parts == pytest.approx(usage["held_gpu_seconds"], abs=0.01)
    assert usage["busy_gpu_seconds"] is None and usage["busy_source"] is None
    assert "busy not measured: no worker reported a GPU utilization" in usage["note"], usage["note"]
    return end


def test_a_runs_held_gpu_seconds_are_its_pods_lifetimes(kube_cluster, alice):
    argv, tmp, _controller = alice
    nothing_left(kube_cluster.api_client)
    with PodWatch(kube_cluster.api_client, "held-run") as watch:
        done = runner(argv("held-run", "--workers", "2"), tmp, RUN_TIMEOUT_S)
    assert done.returncode == 0, f"{done.stdout[-5000:]}\nevents: {event_summary(kube_cluster.api_client, NAMESPACE)}"
    record = the_record(tmp, "held-run")
    usage = record[results.GPU_USAGE]
    end = check_against(watch, usage, "held-run")
    for pod in (p for p in usage["pods"] if p["gpus"]):
        joined = moment(pod["joined"])
        assert joined is not None and moment(pod["start"]) < joined < end, pod  # each worker waited, then joined
    assert usage["waiting_gpu_seconds"] > 0 and usage["working_gpu_seconds"] > 0
    why = {e["message"] for e in events(kube_cluster.api_client, NAMESPACE) if e["reason"] == "FailedScheduling"
           and e["involvedObject"]["name"].startswith("held-run-")}
    print(f"held-run: pods created to scheduled: {watch.unscheduled():.1f} GPU-s; the scheduler's words: {why}")
    assert "taxi: GPUs held " in done.stdout and "busy not measured" in done.stdout


def test_an_interrupted_run_is_charged_up_to_its_end(kube_cluster, alice):
    argv, tmp, _ = alice
    nothing_left(kube_cluster.api_client)
    lines: queue.Queue = queue.Queue()
    with PodWatch(kube_cluster.api_client, "held-stopped") as watch:
        proc = start_runner(argv("held-stopped", "--workers", "2"), tmp)
        threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put("")],
                         daemon=True).start()
        seen = []
        try:
            while not any(line.startswith("dashboard: ") for line in seen):  # the sweep reached the cluster
                line = lines.get(timeout=RUN_TIMEOUT_S)
                assert line, "".join(seen)[-3000:]
                seen.append(line)
            time.sleep(1.0)
            stopped = time.time()
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=180) == 130, "".join(seen)[-3000:]
            exited = time.time()
        finally:
            if proc.poll() is None:
                proc.kill()
    record = the_record(tmp, "held-stopped")
    assert record["status"] == "interrupted", record
    end = check_against(watch, record[results.GPU_USAGE], "held-stopped")
    assert stopped <= end <= exited, (stopped, end, exited)


def test_a_run_that_waited_for_a_node_shows_the_wait(kube_cluster, alice):
    argv, tmp, _ = alice
    api, node = kube_cluster.api_client, kube_cluster.node_name
    nothing_left(api)
    advertise_gpus(api, node, "1")  # one worker's GPU: the second waits for a node with one
    output: list[str] = []
    try:
        with PodWatch(api, "held-waited") as watch:
            proc = start_runner(argv("held-waited", "--workers", "2"), tmp)
            reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
            reader.start()
            try:
                deadline = time.monotonic() + RUN_TIMEOUT_S
                while not any(p["gpus"] and p["scheduled"] is None for p in watch.seen.values()):
                    assert time.monotonic() < deadline and proc.poll() is None, "".join(output)[-3000:]
                    time.sleep(0.25)
                time.sleep(WAIT_FOR_NODE_S)
                advertise_gpus(api, node, NODE_GPUS)  # a node with a free GPU came
                proc.wait(timeout=RUN_TIMEOUT_S)
                reader.join(10)
            finally:
                if proc.poll() is None:
                    proc.kill()
    finally:
        advertise_gpus(api, node, NODE_GPUS)
    out = "".join(output)
    assert proc.returncode == 0, f"{out[-5000:]}\nevents: {event_summary(api, NAMESPACE)}"
    usage = the_record(tmp, "held-waited")[results.GPU_USAGE]
    check_against(watch, usage, "held-waited")
    waits = {name: p["scheduled"] - p["created"] for name, p in watch.seen.items() if p["gpus"]}
    late = max(waits, key=lambda name: waits[name])
    assert waits[late] >= WAIT_FOR_NODE_S, waits
    listed = {p["name"]: p for p in usage["pods"]}
    assert moment(listed[late]["start"]) - moment(listed[late]["created"]) == pytest.approx(waits[late], abs=0.01)
    print(f"the second worker waited {waits[late]:.0f} s for a node: unscheduled {usage['unscheduled_gpu_seconds']}"
          f" GPU-s, held nothing meanwhile")
