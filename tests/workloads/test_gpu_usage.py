"""What a run held of the GPUs and how busy its workers kept them (workloads/observe/gpu_usage.py,
gpu_pods.py): the accounting over a record's window, the pods as a fake API server lists them,
and the record of runs on a local cluster of CPU workers and on a bare scheduler address.

The fake (``FakeCore``: ``list_namespaced_pod`` answering the pods given and a ``Date`` header) is
here because these tests move the clocks: pods scheduled and gone at chosen moments, an API server
five minutes ahead, a read refused midway; a real server's clock cannot be moved. The same
sampler against the real node's API server and scheduler, with real pods: tests/cluster/test_gpu_held.py."""
from __future__ import annotations

import email.utils
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from workloads.cluster import endpoint, session
from workloads.observe import gpu_pods, gpu_usage
from workloads.observe.gpu_usage import GpuUsage, Holding, LocalGpus, Unread, account
from workloads.runs import results

from .support import OUTPUTS

REPO = Path(__file__).resolve().parents[2]
T0 = 1_800_000_000.0  # a moment, on every clock of these tests


# ---------------------------------------------------------------------- the accounting
def test_a_pod_held_from_scheduled_to_gone_split_into_waiting_working_and_idle():
    pod = Holding("w-0", gpus=2, created=T0, start=T0 + 10, joined=T0 + 25, end=T0 + 100)
    split = account([pod], (T0, T0 + 120), working=[(T0 + 40, T0 + 80)])
    assert split.held == 2 * 90  # scheduled to gone
    assert split.waiting == 2 * 15  # scheduled to joined
    assert split.working == 2 * 40  # joined and a benchmark running
    assert split.idle == 2 * 35  # joined, nothing running (25 -> 40, 80 -> 100)
    assert split.unscheduled == 2 * 10  # created, not yet scheduled: asked for, nothing held
    assert split.held == split.waiting + split.working + split.idle
    assert split.most == 2


def test_only_the_window_is_charged_and_a_pod_still_there_is_charged_to_its_end():
    pod = Holding("w-0", gpus=1, created=T0 - 500, start=T0 - 400, joined=T0 - 390)  # long before: a shared cluster
    first = account([pod], (T0, T0 + 60), working=[(T0 + 10, T0 + 50)])
    assert (first.held, first.waiting, first.working, first.idle, first.unscheduled) == (60, 0, 40, 20, 0)
    # the next record's window follows on: nothing counted twice
    second = account([pod], (T0 + 60, T0 + 75))
    assert (second.held, second.idle) == (15, 15)


def test_a_worker_that_never_joined_waited_all_along_and_an_unscheduled_pod_holds_nothing():
    never = Holding("w-0", gpus=1, created=T0, start=T0 + 5)
    pending = Holding("w-1", gpus=1, created=T0)
    split = account([never, pending], (T0, T0 + 30), working=[(T0, T0 + 30)])
    assert (split.held, split.waiting, split.working) == (25, 25, 0)
    assert split.unscheduled == 5 + 30
    assert split.most == 1


def test_pods_that_come_and_go_count_once_each_and_the_most_at_once():
    pods = [Holding("a", 1, T0, T0, T0 + 1, T0 + 10), Holding("b", 1, T0 + 10, T0 + 10, T0 + 11, T0 + 20),
            Holding("c", 2, T0 + 5, T0 + 5, T0 + 6), Holding("scheduler", 0, T0, T0, None)]
    split = account(pods, (T0, T0 + 20))
    assert split.held == 10 + 10 + 2 * 15
    assert split.most == 3  # a (or b, which took a's place at 10) and c's two


def test_busy_is_utilization_times_the_time_to_each_workers_next_sample():
    samples = [{"t": t, "address": address, "gpu_utilization": value} for t, address, value in (
        (0.0, "a", 100.0), (1.0, "a", 50.0), (2.0, "a", 0.0), (0.5, "b", 40.0), (30.5, "b", 10.0), (0.0, "cpu", None))]
    # a: 1 + 0.5 + 0 (its last sample counts LAST_SAMPLE_S); b: 0.4 x MAX_GAP_S (a gap), 0.1 x LAST_SAMPLE_S
    assert gpu_usage.busy_seconds(samples) == pytest.approx(1.5 + 0.4 * gpu_usage.MAX_GAP_S + 0.1)
    assert gpu_usage.busy_seconds([{"t": 0.0, "address": "a", "cpu": 90.0, "gpu_utilization": None}]) is None
    assert gpu_usage.busy_seconds([]) is None


class Clock:
    def __init__(self, now: float = T0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_records_follow_one_another_and_add_up_to_what_the_cluster_held():
    clock, holders = Clock(), LocalGpus()
    usage = GpuUsage(holders, person="alice", since=T0, clock=clock)
    holders.cluster_started(2, T0 + 1)
    holders.workers_joined(T0 + 6)
    usage.ran(T0 + 10, T0 + 30, [{"t": 0.0, "address": "a", "gpu_utilization": 100.0}])
    clock.now = T0 + 31
    first = usage.record()
    holders.cluster_started(0, T0 + 40, "a local cluster of CPU workers (--device cpu)")  # restarted without GPUs
    clock.now = T0 + 50
    second = usage.record()
    assert first["source"] == "local" and first["person"] == "alice" and first["gpus"] == 2
    assert (first["held_gpu_seconds"], first["waiting_gpu_seconds"], first["working_gpu_seconds"],
            first["idle_gpu_seconds"]) == (60.0, 10.0, 40.0, 10.0)
    assert first["busy_gpu_seconds"] == gpu_usage.LAST_SAMPLE_S and first["busy_source"] == "nvml"
    assert first["window"] == {"start": gpu_usage.iso(T0), "end": gpu_usage.iso(T0 + 31)}
    assert second["window"]["start"] == first["window"]["end"]
    assert second["held_gpu_seconds"] == 2 * 9 and second["busy_gpu_seconds"] is None  # until the restart
    assert first["held_gpu_seconds"] + second["held_gpu_seconds"] == 2 * 39  # the whole life of the GPU cluster


def test_what_cannot_be_read_is_unknown_not_zero():
    usage = GpuUsage(Unread("no kubeconfig"), person="bob", since=T0, clock=Clock(T0 + 5)).record()
    assert usage["source"] == "none" and usage["held_gpu_seconds"] is None and usage["gpus"] is None
    assert usage["note"].startswith("held not measured: no kubeconfig")


def test_a_record_is_never_kept_from_being_written_by_its_gpu_usage():
    class Broken(LocalGpus):
        def holdings(self, now):
            raise RuntimeError("unreadable")

    usage = GpuUsage(Broken(), person="bob", since=T0, clock=Clock(T0 + 5))
    found = usage.record()
    assert found["held_gpu_seconds"] is None and found["note"] == "not measured: RuntimeError: unreadable"
    assert usage.since == T0 + 5  # the next record's window follows on all the same


# ---------------------------------------------------------------------- the pods
def pod(name: str, *, created: float, scheduled: float | None = None, gpus: str = "1", ip: str | None = None,
        worker: str | None = None, phase: str = "Running", finished: float | None = None) -> dict:
    """One pod as the API lists it (times written to the second, as the API writes them)."""
    def stamp(t: float) -> str:
        written = gpu_usage.iso(t)
        assert written is not None
        return written.replace(".000Z", "Z")

    env = [{"name": "DASK_WORKER_NAME", "value": worker}] if worker else []
    conditions = [{"type": "PodScheduled", "status": "True" if scheduled else "False",
                   **({"lastTransitionTime": stamp(scheduled)} if scheduled else {})}]
    statuses = [{"name": "worker", "state": {"terminated": {"finishedAt": stamp(finished)}}}] if finished else []
    return {"metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": stamp(created)},
            "spec": {"containers": [{"name": "worker", "env": env, "resources": {
                "limits": {"cpu": "1", "nvidia.com/gpu": gpus}, "requests": {"nvidia.com/gpu": gpus}}}],
                **({"nodeName": "node"} if scheduled else {})},
            "status": {"phase": phase, "conditions": conditions, "podIP": ip,
                       **({"startTime": stamp(scheduled)} if scheduled else {}), "containerStatuses": statuses}}


class Response:
    def __init__(self, items: list[dict], date: float):
        self.data = json.dumps({"items": items}).encode()
        self.headers = {"Date": email.utils.formatdate(date, usegmt=True)}


class FakeCore:
    """``list_namespaced_pod`` of a CoreV1Api: the pods given now, stamped with the server's clock."""

    def __init__(self, clock: Clock, skew: float = 0.0):
        self.clock, self.skew = clock, skew
        self.items: list[Any] = []
        self.calls: list[Any] = []
        self.refuse = False

    def list_namespaced_pod(self, namespace, label_selector, _request_timeout, _preload_content):
        assert _preload_content is False
        self.calls.append((namespace, label_selector))
        if self.refuse:
            raise RuntimeError("HTTP 403 Forbidden")
        return Response(self.items, self.clock() + self.skew)


class FakeClient:
    """What the sampler asks of a Dask client: the scheduler's identity and its events."""

    status = "running"

    def __init__(self):
        self.workers: dict[str, dict] = {}
        self.joins: dict[str, float] = {}
        client = self

        class Scheduler:
            @staticmethod
            def identity(n_workers):
                return {"workers": client.workers}

            @staticmethod
            def events(topic):
                return [(client.joins[topic], {"action": "add-worker"})] if topic in client.joins else []

        self.scheduler = Scheduler()

    def sync(self, function, *args, callback_timeout=None, **kwargs):
        return function(*args, **kwargs)

    def join(self, address: str, name: str, host: str, at: float) -> None:
        self.workers[address] = {"name": name, "host": host}
        self.joins[address] = at


def test_the_pods_are_followed_look_by_look_and_each_worker_found_by_its_name_or_ip():
    clock, client = Clock(T0 + 2), FakeClient()
    core = FakeCore(clock)
    core.items = [pod("sched", created=T0, scheduled=T0, gpus="0"),
                  pod("w-a-1", created=T0, scheduled=T0 + 1, worker="w-a", ip="10.0.0.2"),
                  pod("w-b-1", created=T0, ip="10.0.0.3", worker="w-b")]  # waits for a node
    sampler = gpu_pods.PodSampler(core, "dask-alice", "dask.org/cluster-name=c", "DaskCluster dask-alice/c",
                                  client=lambda: client, clock=clock)
    usage = GpuUsage(sampler, person="alice", namespace="dask-alice", dask_cluster="c", since=T0, clock=clock)
    sampler.look()
    client.join("tcp://10.0.0.2:4000", "w-a", "10.0.0.2", T0 + 6)
    clock.now = T0 + 20
    core.items[2] = pod("w-b-1", created=T0, scheduled=T0 + 20, worker="w-b", ip="10.0.0.3")  # a node came
    sampler.look()
    client.join("tcp://10.0.0.3:4000", "w-b", "10.0.0.3", T0 + 28)
    usage.ran(T0 + 30, T0 + 50)
    clock.now = T0 + 40
    del core.items[1]  # w-a-1 deleted (scaled down): gone at this look
    sampler.look()
    clock.now = T0 + 60
    record = usage.record()  # looks once more first
    assert core.calls[0] == ("dask-alice", "dask.org/cluster-name=c") and len(core.calls) == 4
    assert record["source"] == "pods" and record["sampling_step_s"] == gpu_usage.STEP_S
    assert record["gpus"] == 2 and record["unscheduled_gpu_seconds"] == 1 + 20
    assert record["held_gpu_seconds"] == (40 - 1) + (60 - 20)
    assert record["waiting_gpu_seconds"] == (6 - 1) + (28 - 20)
    assert record["working_gpu_seconds"] == (40 - 30) + (50 - 30)
    assert record["idle_gpu_seconds"] == pytest.approx(record["held_gpu_seconds"] - 5 - 8 - 30)
    listed = {p["name"]: p for p in record["pods"]}
    assert set(listed) == {"sched", "w-a-1", "w-b-1"}
    assert listed["w-a-1"]["end"] == gpu_usage.iso(T0 + 40) and not listed["w-a-1"]["running"]
    assert listed["w-b-1"]["joined"] == gpu_usage.iso(T0 + 28) and listed["w-b-1"]["running"]
    assert listed["w-b-1"]["created"] == gpu_usage.iso(T0) and listed["w-b-1"]["start"] == gpu_usage.iso(T0 + 20)
    assert "PodScheduled" in record["note"] and "busy not measured" in record["note"]


def test_a_cluster_clock_off_by_minutes_is_brought_onto_this_ones():
    clock = Clock(T0 + 10)
    core = FakeCore(clock, skew=300.0)  # the API server's clock 5 minutes ahead
    core.items = [pod("w-1", created=T0 + 300, scheduled=T0 + 305)]
    sampler = gpu_pods.PodSampler(core, "dask", "app=dask", "the dask release dask/dask", clock=clock)
    record = GpuUsage(sampler, since=T0, clock=clock).record()
    assert sampler.offset == pytest.approx(300.0, abs=1.0)
    assert record["held_gpu_seconds"] == pytest.approx(10 - 5, abs=1.0)
    assert "clock is +300" in record["note"]


def test_a_look_that_fails_takes_no_pod_for_gone_and_the_note_names_it():
    clock = Clock(T0 + 10)
    core = FakeCore(clock)
    core.items = [pod("w-1", created=T0, scheduled=T0)]
    sampler = gpu_pods.PodSampler(core, "dask", "app=dask", "the dask release dask/dask", clock=clock)
    sampler.look()
    core.refuse = True
    clock.now = T0 + 20
    record = GpuUsage(sampler, since=T0, clock=clock).record()
    assert record["held_gpu_seconds"] == 20
    assert "1 look(s) at the pods failed, the last: RuntimeError: HTTP 403 Forbidden" in record["note"]
    never = gpu_pods.PodSampler(core, "dask", "app=dask", "the dask release dask/dask", clock=clock)
    unread = GpuUsage(never, since=T0, clock=clock).record()
    assert unread["held_gpu_seconds"] is None and "could not be read (RuntimeError: HTTP 403" in unread["note"]


def test_an_ended_pod_is_charged_until_its_containers_ended():
    clock = Clock(T0 + 30)
    core = FakeCore(clock)
    core.items = [pod("w-1", created=T0, scheduled=T0, phase="Failed", finished=T0 + 12)]
    sampler = gpu_pods.PodSampler(core, "dask", "app=dask", "the dask release dask/dask", clock=clock)
    assert GpuUsage(sampler, since=T0, clock=clock).record()["held_gpu_seconds"] == 12


def test_the_gpus_a_pod_requests():
    assert gpu_pods.gpus_requested({"containers": [
        {"resources": {"limits": {"nvidia.com/gpu": "2"}}}, {"resources": {"requests": {"cpu": "1"}}},
        {"resources": {"limits": {"amd.com/gpu": 1}, "requests": {"amd.com/gpu": 1}}}]}) == 3
    assert gpu_pods.gpus_requested({"containers": [{}], "initContainers": [
        {"resources": {"limits": {"nvidia.com/gpu": "4"}}}]}) == 4
    assert gpu_pods.gpus_requested({}) == 0


def test_the_pods_a_stacks_outputs_name_and_what_reads_them():
    helm = session.dask_pods(endpoint.from_outputs({**OUTPUTS, "runnerKubeconfig": "apiVersion: v1"}, "stack dev"))
    assert isinstance(helm, session.DaskPods)
    assert (helm.namespace, helm.selector) == ("rapidsai", "app=dask,release=dask,component in (scheduler,worker)")
    assert "apiVersion" not in repr(helm)
    operator = session.dask_pods(endpoint.from_outputs(
        {**OUTPUTS, "runnerKubeconfig": "x", "daskBackend": "operator", "daskClusterName": "dask"}, "stack dev"))
    assert isinstance(operator, session.DaskPods)
    assert operator.selector == "dask.org/cluster-name=dask" and operator.describe() == "DaskCluster rapidsai/dask"
    assert "--show-secrets" in session.dask_pods(endpoint.from_outputs(OUTPUTS, "stack dev"))
    assert "scheduler's address alone" in session.dask_pods(endpoint.from_address("tcp://10.0.0.1:8786"))


# ---------------------------------------------------------------------- the runner's records
def test_a_run_on_a_bare_scheduler_address_records_held_as_unknown(client, tmp_path, monkeypatch):
    from workloads import run
    from workloads.runs import benchmarks

    monkeypatch.setattr(benchmarks, "BENCHMARKS", {"alpha": "tests.workloads.fakes.tiny"})
    code = run.main(["--scheduler-address", client.scheduler.address, "--data-dir", str(tmp_path),
                     "--output", str(tmp_path / "out"), "--device", "cpu", "--benchmark", "alpha", "--no-report"])
    (record,) = results.read_records(tmp_path / "out")
    usage = record[results.GPU_USAGE]
    assert code == 0 and usage["source"] == "none" and usage["held_gpu_seconds"] is None
    assert "no kubeconfig to read its pods with" in usage["note"] and usage["busy_gpu_seconds"] is None


LOCAL_RUN = """
import sys
from workloads.runs import benchmarks
benchmarks.BENCHMARKS.clear()
benchmarks.BENCHMARKS.update({"alpha": "tests.workloads.fakes.tiny"})
from workloads import run
sys.exit(run.main(sys.argv[1:]))
"""


def test_a_local_run_without_a_gpu_records_nothing_held_and_says_so(tmp_path):
    """A local cluster of CPU workers, as the runner starts it (a fresh process: its workers are
    started from it): every record says source none, zeros, busy not measured, and why."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", LOCAL_RUN, "--local", "--benchmark", "alpha", "--workers", "1,2",
                           "--device", "cpu", "--data-dir", str(tmp_path), "--output", str(out), "--no-report",
                           "--dashboard-address", ":0"], check=False, cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "DASK_TKG_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stdout + done.stderr
    records = results.read_records(out)
    assert len(records) == 2
    for record in records:
        usage = record[results.GPU_USAGE]
        assert usage["source"] == "none" and usage["gpus"] == 0 and usage["pods"] == []
        assert all(usage[f"{key}_gpu_seconds"] == 0 for key in ("held", "waiting", "working", "idle", "unscheduled"))
        assert usage["busy_gpu_seconds"] is None and usage["busy_source"] is None
        assert usage["note"] == ("no GPU: a local cluster of CPU workers (--device cpu); nothing held;"
                                 " busy not measured (no GPU held)")
    assert records[1][results.GPU_USAGE]["window"]["start"] == records[0][results.GPU_USAGE]["window"]["end"]
    assert "GPUs held" not in done.stdout
