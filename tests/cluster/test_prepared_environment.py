"""The prepared environment (workerEnvironment=prepared, the dev stack's default) on the current
stacks' real Kubernetes 1.33 node (the program's restricted namespace, judged by the server's Pod
Security admission): the program's environment Job prepares it on the pip-cache claim from a
package index, and Dask workers from it join the scheduler without fetching anything.

What runs, and how it differs from the dev stack's deployment:
- the lock is the CPU flavour (components/dask/environment/worker-cpu.lock: the same spec
  without the GPU packages) in the program's ConfigMap, and the Job's directory on the claim is
  that lock's (``prepared_env.subdir``), as the program names it for its own lock;
- the package index: tests/cluster/package_index.py, on the host's end of the cluster's link,
  serving the CPU flavour's wheels that scripts/fetch_worker_wheels.py fetched into the test
  cache (sha256-verified; make test runs it), with an access log;
- the Dask image stand-in has no Python: the runner's base interpreter (CPython 3.11) is
  mounted read-only at its own path (a read-only claim bound to the node's path) and put on the
  Job's PATH, so ``python -m venv`` makes the
  environment on it, as the Dask image's python would; the Dask pods mount it too (the venv's
  interpreter is a link to it). Image, small resources, the node's toleration: as
  tests/cluster/test_default_image.py changes the pods;
- the scheduler and workers are plain Pods of the DaskCluster's pod specs (the operator's
  controller, tested by test_default_image.py, only copies them), the scheduler behind a
  Service with a fixed ClusterIP and the pods a ``hostAliases`` entry for its name (no cluster
  DNS); workers start ``dask worker`` (a CPU node) named after their pod; the shared claims are
  hostPath volumes; the TLS Secret holds real certificates.

A worker has joined when the scheduler lists it (its HTTP ``/json/identity.json``, polled from
the host every 0.2 s). With ``DASK_TKG__MEASURE=1`` the paper's way is measured too (a worker
that pip-installs the same packages from the same index at start, with the pip-cache claim as
its cache, as ``workerEnvironment=image`` declares it) and the figures are written to
``docs/results/worker-start.json``.
"""
from __future__ import annotations

import copy
import ipaddress
import json
import os
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import components.kube.prepared_env as prepared_env
from components.artifacts import worker_lock
from tests.cluster.dask_operator import scheduler_names
from tests.cluster.kube import (
    bind_stand_in_pod_security,
    delete_namespace,
    delete_volumes,
    event_summary,
    in_namespace,
    install_tkg_pod_security,
    pods,
    wait_default_service_account,
    wait_for,
)
from tests.cluster.node import REAL_NODE_TOLERATION
from tests.cluster.package_index import PackageIndex
from tests.cluster.pki import dask_tls_material
from tests.cluster.post_render import set_env
from tests.cluster.program import dev_stack
from tests.cluster.support import read_only_claims, set_up_report, shared_volume_stand_ins
from tests.kube.rest import api_request, apply_manifest

REPO = Path(__file__).resolve().parents[2]
WHEELS_SCRIPT = REPO / "scripts" / "fetch_worker_wheels.py"
RESULTS = REPO / "docs" / "results" / "worker-start.json"
SMALL = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "2", "memory": "2Gi"}}
JOB_TIMEOUT_S = 300
JOIN_LIMIT_S = 60.0


def wheels() -> dict:
    """The CPU flavour's wheels in the test cache (scripts/fetch_worker_wheels.py)."""
    return set_up_report(WHEELS_SCRIPT, 300)


def lock_hashes(text: str) -> dict[str, str]:
    sys.path.insert(0, str(WHEELS_SCRIPT.parent))
    try:
        import fetch_worker_wheels
    finally:
        sys.path.pop(0)
    return fetch_worker_wheels.expected(text)


def for_the_node(spec: dict, d: dict) -> None:
    """A pod spec of the program, changed for this node (module docstring)."""
    spec.pop("nodeSelector", None)
    spec["tolerations"] = [*spec.get("tolerations", []), REAL_NODE_TOLERATION]
    spec["hostAliases"] = [{"ip": d["scheduler_ip"], "hostnames": d["scheduler_names"]}]
    # the interpreter the Dask image would hold (module docstring), through its read-only claim
    spec.setdefault("volumes", []).append({"name": "host-python", "persistentVolumeClaim": {
        "claimName": d["python_claim"], "readOnly": True}})
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        container["image"] = d["image"]
        container["imagePullPolicy"] = "Never"
        container["resources"] = SMALL
        container.setdefault("volumeMounts", []).append(
            {"name": "host-python", "mountPath": d["base_prefix"], "readOnly": True})
        for mount in container.get("volumeMounts", []):
            if mount.get("mountPath") == prepared_env.ENV_MOUNT:
                mount["subPath"] = d["subdir"]  # the CPU flavour's directory
    for container in spec.get("initContainers", []):
        if container["name"] == prepared_env.VERIFY_CONTAINER:  # its record is the CPU flavour's, its python the host's
            (digest,) = container["env"]
            digest["valueFrom"]["configMapKeyRef"]["key"] = prepared_env.record_key(d["subdir"])
            container["env"] = [digest, {"name": "PATH", "value": f"{sys.base_prefix}/bin:{prepared_env.SYSTEM_PATH}"}]


class Deployed:
    """What the ``prepared`` fixture set up: the API client and namespace, the stack, the index,
    the node's settings (``d``), the DaskCluster, the Job's times and pods, the share."""

    api: Any
    ns: str
    stack: Any
    index: PackageIndex
    d: dict[str, Any]
    cluster: dict[str, Any]
    job_created: float
    job_done_at: float
    job_pods: list[dict[str, Any]]
    share: Path
    tmp: Path
    scheduler_pod_ip: str | None
    claim: str

    def __init__(self, **kw: Any):
        self.__dict__.update(kw)

    def scheduler_identity(self) -> dict:
        with urllib.request.urlopen(f"http://{self.scheduler_pod_ip}:8787/json/identity.json", timeout=2) as r:
            return json.loads(r.read())

    def joined(self, name: str) -> bool:
        try:
            workers = self.scheduler_identity().get("workers", {})
        except OSError:
            return False
        return any(w.get("name") == name for w in workers.values())

    def pod(self, name: str) -> dict:
        return api_request(self.api, "GET", f"/api/v1/namespaces/{self.ns}/pods/{name}")

    def start_worker(self, name: str, spec: dict) -> dict:
        """Create a worker pod; the seconds from the create call to its joining the scheduler."""
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": self.ns,
                            "labels": {"dask.org/cluster-name": "dask", "dask.org/component": "worker"}},
               "spec": spec}
        created = time.time()
        apply_manifest(self.api, pod)
        try:
            wait_for(f"worker {name} joined the scheduler", lambda: self.joined(name), timeout_s=600, interval_s=0.2)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\nevents: {event_summary(self.api, self.ns)}\n{self.logs(name)}") from None
        joined = time.time()
        return {"created": created, "joined": joined, "seconds": round(joined - created, 2),
                "pod_ip": self.pod(name)["status"].get("podIP")}

    def logs(self, name: str) -> str:
        try:
            return api_request(self.api, "GET", f"/api/v1/namespaces/{self.ns}/pods/{name}/log",
                               query={"tailLines": "30"})
        except Exception as exc:
            return f"(no log: {exc})"


def job_logs(api, ns: str) -> str:
    out = []
    for pod in pods(api, ns, "app.kubernetes.io/name=dask-environment"):
        for container in ("directory", "prepare"):
            try:
                text = api_request(api, "GET", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/log",
                                   query={"container": container, "tailLines": "40"})
            except Exception as exc:
                text = f"(no log: {exc})"
            out.append(f"--- {pod['metadata']['name']}/{container}:\n{text}")
    return "\n".join(out)


def worker_spec(stack_cluster: dict, name: str, d: dict) -> dict:
    spec = copy.deepcopy(stack_cluster["spec"]["worker"]["spec"])
    for_the_node(spec, d)
    (container,) = spec["containers"]
    args = container["args"]
    assert args[0] == "dask-cuda-worker", args
    args[0:1] = ["dask", "worker"]  # a CPU node
    for flag, value in (("--nthreads", "1"), ("--memory-limit", "1Gi")):
        args[args.index(flag) + 1] = value
    set_env(container, {"DASK_WORKER_NAME": name})
    return spec


@pytest.fixture(scope="module")
def prepared(kube_cluster, tmp_path_factory):
    found = wheels()
    api, net = kube_cluster.api_client, kube_cluster.net
    stack = dev_stack()
    ns = stack.dask_namespace
    tmp = tmp_path_factory.mktemp("prepared-env")
    cpu_lock = worker_lock.lock_text("cpu")
    index = PackageIndex(Path(found["wheels"]), lock_hashes(cpu_lock), host=net.host_ip).start()
    scheduler_ip = str(ipaddress.ip_network(net.service_cidr)[251])
    d = {"image": kube_cluster.images["dask-runtime"], "base_prefix": sys.base_prefix, "scheduler_ip": scheduler_ip,
         "scheduler_names": scheduler_names(ns), "subdir": prepared_env.subdir(cpu_lock)}
    volumes = shared_volume_stand_ins(stack, tmp / "share")
    install_tkg_pod_security(api)
    try:
        for volume in volumes:
            apply_manifest(api, volume)
        apply_manifest(api, next(o for o in stack.of_kind("Namespace") if o["metadata"]["name"] == ns))
        bind_stand_in_pod_security(api, ns, [sys.base_prefix])
        wait_default_service_account(api, ns)
        python = [{"host": sys.base_prefix, "container": sys.base_prefix}]
        volumes += read_only_claims(api, ns, python)
        d["python_claim"] = python[0]["claim"]
        for obj in in_namespace(stack.objects, "PersistentVolumeClaim", ns):
            apply_manifest(api, obj)
        (lock_map,) = [o for o in in_namespace(stack.objects, "ConfigMap", ns)
                       if o["metadata"]["name"] == "dask-environment-lock"]
        apply_manifest(api, {**lock_map, "data": {**lock_map["data"], prepared_env.LOCK_KEY: cpu_lock}})
        # the record's objects as declared: the Job's account, the empty digests ConfigMap, its Role there
        for kind in ("ServiceAccount", "Role", "RoleBinding"):
            for obj in in_namespace(stack.objects, kind, ns):
                apply_manifest(api, obj)
        (digests,) = [o for o in in_namespace(stack.objects, "ConfigMap", ns)
                      if o["metadata"]["name"] == prepared_env.DIGESTS_CONFIG_MAP]
        apply_manifest(api, digests)
        tls = dask_tls_material(tmp / "tls", scheduler_names(ns))
        (secret,) = [o for o in in_namespace(stack.objects, "Secret", ns) if o["metadata"]["name"] == "dask-tls"]
        apply_manifest(api, {**secret, "stringData": tls})

        # the program's environment Job, for the CPU flavour and this index
        (job,) = [o for o in in_namespace(stack.objects, "Job", ns) if o["metadata"]["name"] == "dask-environment"]
        job = copy.deepcopy(job)
        pod = job["spec"]["template"]["spec"]
        for_the_node(pod, d)
        for container in [*pod["initContainers"], *pod["containers"]]:
            set_env(container, {"PATH": f"{sys.base_prefix}/bin:{prepared_env.SYSTEM_PATH}", "ENV_SUBDIR": d["subdir"],
                             "PACKAGE_INDEX_URL": index.url, "PLAIN_HTTP_HOST": prepared_env.plain_http_host(index.url),
                             "LOCK_SHA256": worker_lock.lock_digest(cpu_lock),
                             "RECORD_KEY": prepared_env.record_key(d["subdir"])})
        job_created = time.time()
        apply_manifest(api, job)

        def job_done():
            status = api_request(api, "GET", f"/apis/batch/v1/namespaces/{ns}/jobs/dask-environment")["status"]
            if status.get("failed"):
                raise AssertionError(f"the environment Job failed: {status}\n{job_logs(api, ns)}"
                                     f"\nevents: {event_summary(api, ns)}")
            return status.get("succeeded")

        try:
            wait_for("the environment Job completed", job_done, timeout_s=JOB_TIMEOUT_S, interval_s=0.5)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\nevents: {event_summary(api, ns)}") from None
        job_done_at = time.time()
        job_pods = pods(api, ns, "app.kubernetes.io/name=dask-environment")

        # scheduler: its Service at a fixed ClusterIP (the names the workers dial), then its pod
        cluster = stack.of_kind("DaskCluster")[0]
        service = copy.deepcopy(cluster["spec"]["scheduler"]["service"])
        service["clusterIP"] = scheduler_ip
        apply_manifest(api, {"apiVersion": "v1", "kind": "Service",
                             "metadata": {"name": "dask-scheduler", "namespace": ns}, "spec": service})
        scheduler = copy.deepcopy(cluster["spec"]["scheduler"]["spec"])
        for_the_node(scheduler, d)
        apply_manifest(api, {"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "dask-scheduler", "namespace": ns,
                                          "labels": {"dask.org/cluster-name": "dask",
                                                     "dask.org/component": "scheduler"}},
                             "spec": scheduler})
        deployed = Deployed(api=api, ns=ns, stack=stack, index=index, d=d, cluster=cluster, job_created=job_created,
                            job_done_at=job_done_at, job_pods=job_pods, share=tmp / "share", tmp=tmp,
                            scheduler_pod_ip=None, claim=next(
                                o for o in in_namespace(stack.objects, "PersistentVolumeClaim", ns)
                                if o["metadata"]["labels"].get("dask-tkg.io/data") == "pip-cache")["metadata"]["name"])

        def scheduler_up():
            ip = deployed.pod("dask-scheduler")["status"].get("podIP")
            if ip:
                deployed.scheduler_pod_ip = ip
                try:
                    return deployed.scheduler_identity()
                except OSError:
                    return None
            return None

        try:
            wait_for("the scheduler serving", scheduler_up, timeout_s=120, interval_s=0.5)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\nevents: {event_summary(api, ns)}\n"
                                 f"{deployed.logs('dask-scheduler')}") from None
        yield deployed
    finally:
        index.dump(tmp / "index-access.jsonl")
        index.stop()
        try:
            delete_namespace(api, ns, timeout_s=120)
        finally:
            delete_volumes(api, volumes)


def test_the_job_prepares_the_environment_on_the_claim_from_the_index(prepared):
    home = prepared.share / prepared.claim / prepared.d["subdir"]
    cpu_lock = worker_lock.lock_text("cpu")
    assert (home / prepared_env.MARKER).read_text().strip() == worker_lock.lock_digest(cpu_lock)
    assert (home / "pyvenv.cfg").read_text().count(sys.base_prefix) >= 1  # the pods' interpreter
    wheels_fetched = {r.path.rsplit("/", 1)[1] for r in prepared.index.requests() if r.path.startswith("/files/")}
    assert wheels_fetched == set(lock_hashes(cpu_lock))  # every locked file, and only those
    site = home / "lib" / "python3.11" / "site-packages"
    installed = {p.name.split("-")[0].lower().replace("_", "-") for p in site.glob("*.dist-info")}
    assert {"dask", "distributed", "pandas", "pyarrow", "xgboost-cpu", "jupyterlab"} <= installed | {
        n.replace("-", "_") for n in installed}


def test_the_job_records_the_trees_digest_in_the_namespaces_configmap(prepared):
    """The record the pods check against: the digest of the manifest the Job wrote beside the
    tree, in the namespace's ConfigMap under the environment's key, written by the Job's own
    account from its pod (through the cluster's ``kubernetes`` Service)."""
    import hashlib

    home = prepared.share / prepared.claim / prepared.d["subdir"]
    manifest = (home / ".manifest").read_text()
    assert "site-packages/distributed/__init__.py" in manifest
    data = api_request(prepared.api, "GET", f"/api/v1/namespaces/{prepared.ns}/configmaps/"
                                            f"{prepared_env.DIGESTS_CONFIG_MAP}")["data"]
    assert data == {prepared_env.record_key(prepared.d["subdir"]): hashlib.sha256(manifest.encode()).hexdigest()}


@pytest.fixture(scope="module")
def rerun(prepared) -> dict:
    """The environment Job run again, once (as after a node loss or a re-run of pulumi up with
    the same lock): the index's log before and after, the pod's log and the seconds it took."""
    api, ns = prepared.api, prepared.ns
    job = api_request(api, "GET", f"/apis/batch/v1/namespaces/{ns}/jobs/dask-environment")
    again = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "dask-environment-again", "namespace": ns},
             "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": {"again": "yes"}},
                                                      "spec": job["spec"]["template"]["spec"]}}}
    before = len(prepared.index.log)
    started = time.time()
    apply_manifest(api, again)
    wait_for("the second Job completed", lambda: api_request(
        api, "GET", f"/apis/batch/v1/namespaces/{ns}/jobs/dask-environment-again")["status"].get("succeeded"),
        timeout_s=120)
    seconds = round(time.time() - started, 2)
    (pod,) = pods(api, ns, "again=yes")
    log = api_request(api, "GET", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/log")
    return {"index_log_before": before, "index_log_after": len(prepared.index.log), "log": log, "seconds": seconds}


def test_the_job_exits_at_once_when_the_environment_is_there(prepared, rerun):
    """Run again: it finds the marker, fetches nothing and ends."""
    before = rerun["index_log_before"]
    assert rerun["index_log_after"] == before, prepared.index.log[before:]
    assert "is prepared already" in rerun["log"], rerun["log"]


@pytest.fixture(scope="module")
def joined_workers(prepared) -> dict[str, dict]:
    """A first worker and an added one from the environment, started once: each one's figures
    (:meth:`Deployed.start_worker`) by ``first`` and ``added``."""
    first = prepared.start_worker("worker-first", worker_spec(prepared.cluster, "worker-first", prepared.d))
    added = prepared.start_worker("worker-added", worker_spec(prepared.cluster, "worker-added", prepared.d))
    return {"first": first, "added": added}


def test_workers_from_the_environment_join_within_a_minute_and_fetch_nothing(prepared, joined_workers):
    for name, figures in joined_workers.items():
        assert figures["seconds"] < JOIN_LIMIT_S, (name, figures)
    # nothing fetched after the Job: no request of any pod (the workers' addresses included)
    late = prepared.index.requests(since=prepared.job_done_at)
    assert late == [], late
    # they run the environment's Dask, from the read-only mount
    probe = prepared.scheduler_identity()["workers"]
    assert {w["name"] for w in probe.values()} >= {"worker-first", "worker-added"}


def test_a_changed_file_stops_a_new_worker_before_it_imports_anything(prepared):
    """A writer of the share changes distributed's ``__init__`` (here: one that would say so
    when imported): a new worker's check names the file and the pod's worker container never
    starts; the file restored, the next worker joins."""
    target = (prepared.share / prepared.claim / prepared.d["subdir"]
              / "lib/python3.11/site-packages/distributed/__init__.py")
    original = target.read_bytes()
    name = "worker-tampered"
    path = f"/api/v1/namespaces/{prepared.ns}/pods/{name}"
    try:
        target.write_bytes(original + b"\nprint('IMPORTED THE CHANGED FILE', flush=True)\n")
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": prepared.ns},
               "spec": worker_spec(prepared.cluster, name, prepared.d)}
        apply_manifest(prepared.api, pod)

        def refused():
            status = api_request(prepared.api, "GET", path).get("status", {})
            for check in status.get("initContainerStatuses", []):
                state = check.get("state", {}).get("terminated") or check.get("lastState", {}).get("terminated")
                if state and state.get("exitCode"):
                    return status, state
            return None

        status, state = wait_for("the check refused the changed environment", refused, timeout_s=120, interval_s=0.5)
        assert state["exitCode"] == 1, state
        message = state.get("message", "")  # the log, as the pod's status shows it (FallbackToLogsOnError)
        assert "is not the one the environment Job recorded" in message, message
        assert "changed: lib/python3.11/site-packages/distributed/__init__.py" in message, message
        (worker,) = status["containerStatuses"]
        assert "running" not in worker["state"] and "terminated" not in worker["state"], worker
        assert worker.get("restartCount", 0) == 0 and not worker.get("lastState"), worker
        assert not prepared.joined(name)
    finally:
        target.write_bytes(original)
        api_request(prepared.api, "DELETE", path, body={"gracePeriodSeconds": 0})
    restored = prepared.start_worker("worker-restored", worker_spec(prepared.cluster, "worker-restored", prepared.d))
    assert restored["seconds"] < JOIN_LIMIT_S, restored


@pytest.mark.skipif(os.environ.get("DASK_TKG__MEASURE") != "1",
                    reason="the paper's way measured only with DASK_TKG__MEASURE=1 (~2 minutes more)")
def test_measure_the_paper_way_and_record(prepared, rerun, joined_workers):
    """The same CPU packages pip-installed at start (the image's entrypoint's
    ``pip install $EXTRA_PIP_PACKAGES``, then ``exec`` the worker), with the pip-cache claim
    as pip's cache at the pods' home: a first worker and an added one, beside the prepared
    environment's (``rerun``, ``joined_workers``)."""
    raw_lines = worker_lock.ENV_DIR.joinpath("worker.in").read_text().splitlines()
    spec_lines = [line.split("#")[0].strip() for line in raw_lines]
    packages = []
    for line, raw in zip(spec_lines, raw_lines, strict=True):
        if not line:
            continue
        if "gpu-only" in raw:
            continue
        packages.append(raw.split("# cpu:", 1)[1].strip() if "# cpu:" in raw else line)
    figures = {}
    for name in ("paper-first", "paper-added"):
        spec = worker_spec(prepared.cluster, name, prepared.d)
        (container,) = spec["containers"]
        # the image way: no environment mount, the pip cache at the user's home, pip at start
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] != prepared_env.VOLUME]
        spec.pop("initContainers", None)  # no environment to check
        claim = next(v for v in prepared.cluster["spec"]["worker"]["spec"]["volumes"]
                     if v["name"] == prepared_env.VOLUME)["persistentVolumeClaim"]["claimName"]
        spec["volumes"].append({"name": "pip-cache", "persistentVolumeClaim": {"claimName": claim}})
        container["volumeMounts"] = [m for m in container["volumeMounts"] if m["name"] != prepared_env.VOLUME]
        container["volumeMounts"].append({"name": "pip-cache", "mountPath": "/home/dask/.cache/pip",
                                          "subPath": "paper-pip"})
        worker_args = " ".join(f"'{a}'" for a in container["args"]).replace("'$(DASK_WORKER_NAME)'",
                                                                            "\"$DASK_WORKER_NAME\"")
        container["command"] = ["sh", "-c", (
            f"python -m venv /tmp/env && /tmp/env/bin/python -m pip install --quiet --disable-pip-version-check"
            f" --index-url {prepared.index.url} --trusted-host {prepared_env.plain_http_host(prepared.index.url)}"
            f" {' '.join(repr(p) for p in packages)}"
            f" && PATH=/tmp/env/bin:$PATH exec {worker_args}")]
        container["args"] = []
        set_env(container, {"PATH": f"{sys.base_prefix}/bin:{prepared_env.SYSTEM_PATH}"})
        result = prepared.start_worker(name, spec)
        fetched = prepared.index.requests(client=result["pod_ip"])
        result.update(requests=len(fetched), bytes=sum(r.bytes for r in fetched))
        figures[name] = result
    job_pod = prepared.job_pods[0]
    job_bytes = sum(r.bytes for r in prepared.index.requests(until=prepared.job_done_at))
    record = {
        "what": "Time from pod creation to the worker joining the scheduler, and bytes fetched from the package index,"
                " on the real Kubernetes 1.33 node (tests/cluster/test_prepared_environment.py), CPU flavour of the"
                " lock (components/dask/environment/worker-cpu.lock), index on the cluster's link",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lock": {"flavour": "cpu", "packages": len(lock_hashes(worker_lock.lock_text('cpu'))),
                 "wheel_bytes": sum((prepared.index.wheels / f).stat().st_size
                                    for f in lock_hashes(worker_lock.lock_text('cpu')))},
        "prepared": {
            "job_seconds": round(prepared.job_done_at - prepared.job_created, 2),
            "job_bytes": job_bytes,
            "job_rerun_seconds": rerun["seconds"],
            "first_worker_seconds": joined_workers["first"]["seconds"],
            "added_worker_seconds": joined_workers["added"]["seconds"],
            "added_worker_bytes": 0,
            "added_worker_requests": len(prepared.index.requests(client=joined_workers["added"]["pod_ip"])),
        },
        "image_with_extra_pip_packages": {
            "first_worker_seconds": figures["paper-first"]["seconds"],
            "first_worker_bytes": figures["paper-first"]["bytes"],
            "first_worker_requests": figures["paper-first"]["requests"],
            "added_worker_seconds": figures["paper-added"]["seconds"],
            "added_worker_bytes": figures["paper-added"]["bytes"],
            "added_worker_requests": figures["paper-added"]["requests"],
        },
        "job_pod": job_pod["metadata"]["name"],
    }
    RESULTS.write_text(json.dumps(record, indent=1) + "\n")


GPU_LOCK_RESULTS = REPO / "docs" / "results" / "gpu-lock-start.json"
GPU_IMPORTS = "import torch, cudf, dask_cudf, xgboost, cupy"


@pytest.mark.skipif(os.environ.get("DASK_TKG__MEASURE_GPU_LOCK") != "1",
                    reason="the GPU lock's cost measured only with DASK_TKG__MEASURE_GPU_LOCK=1 (8 GB installed;"
                           " scripts/fetch_worker_wheels.py --flavour cu13 first)")
def test_measure_the_gpu_lock_on_the_node_and_record(prepared):
    """The GPU lock (worker-cu13.lock, 179 wheels) prepared by the program's Job on this node from the
    index, then a first and an added worker whose container imports torch, cuDF, dask-cuDF,
    XGBoost and CuPy from it before it starts: pod created to joined, which includes the
    environment's check. The claim here is a host directory, not NFS (this node mounts no NFS)."""
    folder = Path(set_up_report(WHEELS_SCRIPT, 120, "--flavour", "cu13")["wheels"])
    lock = worker_lock.lock_text("cu13")
    api, ns, d = prepared.api, prepared.ns, dict(prepared.d)
    d["subdir"] = prepared_env.subdir(lock)
    index = PackageIndex(folder, lock_hashes(lock), host=prepared.index.host).start()
    try:
        (lock_map,) = [o for o in in_namespace(prepared.stack.objects, "ConfigMap", ns)
                       if o["metadata"]["name"] == "dask-environment-lock"]
        apply_manifest(api, {**lock_map, "metadata": {**lock_map["metadata"], "name": "dask-environment-lock-cu13"},
                             "data": {**lock_map["data"], prepared_env.LOCK_KEY: lock}})
        (job,) = [o for o in in_namespace(prepared.stack.objects, "Job", ns)
                  if o["metadata"]["name"] == "dask-environment"]
        job = copy.deepcopy(job)
        job["metadata"]["name"] = "dask-environment-cu13"
        pod = job["spec"]["template"]["spec"]
        for_the_node(pod, d)
        for volume in pod["volumes"]:
            if volume["name"] == "lock":
                volume["configMap"]["name"] = "dask-environment-lock-cu13"
        for container in [*pod["initContainers"], *pod["containers"]]:
            set_env(container, {"PATH": f"{sys.base_prefix}/bin:{prepared_env.SYSTEM_PATH}", "ENV_SUBDIR": d["subdir"],
                                "PACKAGE_INDEX_URL": index.url,
                                "PLAIN_HTTP_HOST": prepared_env.plain_http_host(index.url),
                                "LOCK_SHA256": worker_lock.lock_digest(lock),
                                "RECORD_KEY": prepared_env.record_key(d["subdir"])})
            container["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"},
                                      "limits": {"cpu": "2", "memory": "4Gi"}}
        created = time.time()
        apply_manifest(api, job)
        wait_for("the GPU lock's Job completed", lambda: api_request(
            api, "GET", f"/apis/batch/v1/namespaces/{ns}/jobs/dask-environment-cu13")["status"].get("succeeded"),
            timeout_s=1800, interval_s=1.0)
        job_seconds = round(time.time() - created, 1)
        home = prepared.share / prepared.claim / d["subdir"]
        installed = sum(p.stat().st_size for p in home.rglob("*") if p.is_file() and not p.is_symlink())
        figures = {}
        for name in ("gpu-lock-first", "gpu-lock-added"):
            spec = worker_spec(prepared.cluster, name, d)
            (container,) = spec["containers"]
            container["resources"] = {"requests": {"cpu": "100m", "memory": "512Mi"},
                                      "limits": {"cpu": "2", "memory": "4Gi"}}
            worker_args = " ".join(f"'{a}'" for a in container["args"]).replace(
                "'$(DASK_WORKER_NAME)'", "\"$DASK_WORKER_NAME\"")
            container["command"] = ["sh", "-c", f'python -c "{GPU_IMPORTS}" && exec {worker_args}']
            container["args"] = []
            started = prepared.start_worker(name, spec)
            status = prepared.pod(name)["status"]
            (check,) = status["initContainerStatuses"]
            done = check["state"]["terminated"]
            check_seconds = (_when(done["finishedAt"]) - _when(done["startedAt"]))
            figures[name] = {"seconds": started["seconds"], "check_seconds": check_seconds,
                             "bytes": sum(r.bytes for r in index.requests(client=started["pod_ip"]))}
        record = {
            "what": "The GPU lock (worker-cu13.lock) on the real Kubernetes 1.33 node: the program's environment Job"
                    " installing it from the index on the cluster's link, then workers whose container imports"
                    f" ({GPU_IMPORTS}) from it before joining; the claim is a host directory, not NFS",
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "lock": {"flavour": "cu13", "packages": len(lock_hashes(lock)),
                     "wheel_bytes": sum((folder / f).stat().st_size for f in lock_hashes(lock))},
            "job_seconds": job_seconds, "job_bytes": sum(r.bytes for r in index.requests()),
            "installed_bytes": installed,
            "first_worker": figures["gpu-lock-first"], "added_worker": figures["gpu-lock-added"],
        }
        GPU_LOCK_RESULTS.write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps(record, indent=1))
        assert figures["gpu-lock-added"]["bytes"] == 0
    finally:
        index.stop()


def _when(stamp: str) -> float:
    import datetime

    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

