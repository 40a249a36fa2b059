"""The defaults, on a cluster that holds nothing of this project: the current stack ``dev``
(Pulumi.dev.yaml: the Dask Kubernetes operator backend, the pinned CPython 3.11 image
``python:3.11.15-slim-trixie`` (by digest) and workerEnvironment=prepared: every package from the locked
environment on the pip-cache claim, mounted read-only at /opt/dask-env) on the current stacks' real
Kubernetes 1.33 node, with the runner from the host driving both benchmarks.

The other real-cluster tests mount the project's own virtual environment into the pods, so the
project is importable there and the runner's shipping of its code (workloads/cluster/preflight.py,
``ship_project``) is never needed; here it is the only way the workers and the scheduler get
``workloads``. Fails on a runner that does not ship its code.

What runs, and how it differs from the defaults' deployment:
- the operator: the pinned dask-kubernetes-operator chart's CRDs (tests/operator/support.py
  ``chart_crds``) applied to the real API server, and dask-kubernetes 2026.3.0's kopf controller
  (the chart image's command) from the runner's venv, in a subprocess on the host against that
  API server, watching the Dask namespace; it creates the scheduler Deployment and Service and
  the worker group's Deployments, whose pods kubelet runs;
- the program's ``DaskCluster`` and ``DaskAutoscaler`` from its run under Pulumi's mocks, with
  the pod specs changed as tests/cluster/post_render.py changes the Helm release's (image
  stand-in, CPU workers started by ``dask worker`` instead of ``dask-cuda-worker``, small
  requests, no node selectors, the real node's toleration), except the Python environment and
  the scheduler's name: there is no cluster DNS here, so the scheduler Service gets a fixed
  ClusterIP and the pods a ``hostAliases`` entry mapping the program's scheduler name
  (``dask-scheduler.rapidsai.svc.cluster.local``, what the workers dial and the TLS
  certificate names) to it;
- the prepared environment: the pods keep the program's read-only mount of the claim's
  environment directory (empty here) and its PATH, but PATH names scripts/build_default_image_env.py's
  stand-in first (make test builds it), mounted read-only from the node. The program's
  environment Job, which fills that directory from a package index, runs on this node in
  tests/cluster/test_prepared_environment.py (with the lock's CPU flavour); here the stand-in
  holds what the GPU lock's torch gives the images benchmark. The stand-in is: the runner's
  base interpreter (Python 3.11), a venv with exactly the lock's dask and distributed 2026.7.1
  plus pandas, pyarrow, numpy and xgboost 3.2.0 (its CPU build, as the CPU flavour), and
  torch/torchvision from symbolic links into the runner's site-packages (mounted read-only):
  the runner's 2.14.1, the GPU lock's version, whose CUDA 13 wheels are ~5.5 GB on a shared
  disk;
- the pods run as the program sets them to: the image runs as root, so RUN_AS (uid and gid
  1000, components/facts/dask_facts.py) with its own home on an emptyDir, HOME=/home/dask;
- Pod Security: the program's namespace carries its ``pod-security.kubernetes.io`` labels
  (restricted) and the server's own admission judges every pod the operator makes; the
  stand-in's read-only mounts come from read-only claims bound to the node's paths
  (tests/cluster/support.py ``read_only_claims``), which that level admits;
- the ``dask-tls`` Secret holds real certificates (under the mocks pulumi-tls returns
  placeholders); the shared claims are hostPath volumes; the dataset is written onto the
  dataset claim's volume by the benchmarks' own generators (smoke profile) in the layout the
  program's data Job leaves (tests/cluster/test_dask_release.py runs that Job itself);
- the runner's outputs are the program's, with the scheduler and dashboard at the Service's
  ClusterIP (the host routes to the service network), the real TLS material, the program's
  ``runnerKubeconfig`` on the token this cluster's token controller put in the program's
  ServiceAccount token Secret (the operator backend resizes the DaskCluster with that
  namespaced identity alone, not the admin's) and the stand-in's CPU workers
  (``gpusPerWorker`` 0, one thread each).
"""
from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import pytest

from components.dask.values import service_names
from tests.apiserver.runner_identity import deploy_runner_identity, token_subject
from tests.cluster.controller import Controller
from tests.cluster.dask_operator import apply_crds, change_pod_spec, delete_dask_resources, scheduler_names
from tests.cluster.kube import (
    bind_stand_in_pod_security,
    delete_namespace,
    delete_volumes,
    event_summary,
    in_namespace,
    install_tkg_pod_security,
    pods,
    wait_default_service_account,
    wait_running,
)
from tests.cluster.pki import dask_tls_material
from tests.cluster.program import DeclaredStack, dev_stack
from tests.cluster.support import IMAGE_HOME, read_only_claims, set_up_report, shared_volume_stand_ins, smoke_dataset
from tests.kube.rest import api_request, apply_manifest

REPO = Path(__file__).resolve().parents[2]
ENV_SCRIPT = REPO / "scripts" / "build_default_image_env.py"
WORKERS = 2
RUNNER_TIMEOUT_S = 300


def stand_in_environment() -> dict:
    """The stand-in's paths (scripts/build_default_image_env.py)."""
    return set_up_report(ENV_SCRIPT, 120)


def changed_cluster(cluster: dict, d: dict) -> dict:
    cluster = json.loads(json.dumps(cluster))
    spec = cluster["spec"]
    change_pod_spec(spec["scheduler"]["spec"], "scheduler", d)
    spec["scheduler"]["service"]["clusterIP"] = d["scheduler_ip"]
    change_pod_spec(spec["worker"]["spec"], "worker", d)
    spec["worker"]["replicas"] = WORKERS
    return cluster


def differences(kube_cluster, env: dict, namespace: str) -> dict:
    base, home = env["base_prefix"], str(Path(env["venv"]).parent)
    mounts = [{"host": p, "container": p} for p in (base, home, env["runner_site_packages"])]
    scheduler_ip = str(ipaddress.ip_network(kube_cluster.net.service_cidr)[250])
    return {"image": kube_cluster.images["dask-runtime"], "mounts": mounts, "scheduler_ip": scheduler_ip,
            "scheduler_names": scheduler_names(namespace),
            "env": {"PATH": f"{env['venv']}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": IMAGE_HOME}}


class Deployed:
    def __init__(self, stack: DeclaredStack, namespace: str, scheduler_ip: str, tls_dir: Path, share: Path,
                 env: dict, controller: Controller, runner_kubeconfig: str):
        self.stack, self.namespace, self.scheduler_ip = stack, namespace, scheduler_ip
        self.tls_dir, self.share, self.env, self.controller = tls_dir, share, env, controller
        self.runner_kubeconfig = runner_kubeconfig


@pytest.fixture(scope="module")
def default_release(kube_cluster, tmp_path_factory):
    env = stand_in_environment()
    api = kube_cluster.api_client
    stack = dev_stack()
    ns = stack.dask_namespace
    tmp = tmp_path_factory.mktemp("default-image")
    d = differences(kube_cluster, env, ns)
    volumes = shared_volume_stand_ins(stack, tmp / "share")
    install_tkg_pod_security(api)
    apply_crds(api)
    controller = None
    try:
        for volume in volumes:
            apply_manifest(api, volume)
        apply_manifest(api, next(o for o in stack.of_kind("Namespace") if o["metadata"]["name"] == ns))
        bind_stand_in_pod_security(api, ns, [m["host"] for m in d["mounts"]])
        wait_default_service_account(api, ns)
        volumes += read_only_claims(api, ns, d["mounts"])
        runner_kubeconfig = deploy_runner_identity(api, stack.objects, ns, kube_cluster.kubeconfig)
        for kind in ("ConfigMap", "PersistentVolumeClaim"):
            for obj in in_namespace(stack.objects, kind, ns):
                apply_manifest(api, obj)
        # the scheduler's certificate names its fixed ClusterIP too: the address the runner dials here
        tls = dask_tls_material(tmp / "tls", [*scheduler_names(ns), d["scheduler_ip"]],
                                service_names("dask-jupyter", ns))
        (secret,) = [o for o in in_namespace(stack.objects, "Secret", ns) if o["metadata"]["name"] == "dask-tls"]
        assert set(secret["stringData"]) == set(tls), "the program's TLS Secret has other keys"
        apply_manifest(api, {**secret, "stringData": tls})
        dataset_claim = next(v["persistentVolumeClaim"]["claimName"] for v in
                             stack.of_kind("DaskCluster")[0]["spec"]["worker"]["spec"]["volumes"]
                             if v["name"] == "dataset")
        smoke_dataset(tmp / "share" / dataset_claim, stack.settings)
        controller = Controller(kube_cluster.kubeconfig, [ns], tmp, {d["scheduler_ip"]: d["scheduler_names"]})
        apply_manifest(api, changed_cluster(stack.of_kind("DaskCluster")[0], d))
        apply_manifest(api, stack.of_kind("DaskAutoscaler")[0])
        try:
            wait_running(api, ns, "dask.org/component=scheduler", 1, timeout_s=120)
            wait_running(api, ns, "dask.org/component=worker", WORKERS, timeout_s=120)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\ncontroller log:\n{controller.tail()}") from None
        yield Deployed(stack, ns, d["scheduler_ip"], tmp / "tls", tmp / "share" / dataset_claim, env, controller,
                       runner_kubeconfig)
    finally:
        try:
            delete_dask_resources(api, ns)  # while the controller runs: it drops its finalizers
            delete_namespace(api, ns, timeout_s=120)
        finally:
            if controller is not None:
                controller.stop()
            delete_volumes(api, volumes)


def retired(api, namespace: str, pod: str) -> bool:
    """The pod is gone or going (the DaskAutoscaler retires an idle worker)."""
    return not any(p["metadata"]["name"] == pod and not p["metadata"].get("deletionTimestamp")
                   for p in pods(api, namespace))


# What a fresh interpreter in a pod has (the image's ``python``, as the pod's processes have it);
# versions from the metadata, nothing heavy imported (the pod's memory limit holds its Dask
# processes; the runner's preflight imports the benchmarks' packages on every worker)
PROBE = """
import importlib.metadata as md, importlib.util, json, sys
import dask, distributed
print(json.dumps({
    "python": ".".join(map(str, sys.version_info[:2])),
    "dask": dask.__version__, "distributed": distributed.__version__,
    "xgboost": md.version("xgboost-cpu"), "torch": md.version("torch").split("+")[0],
    "project_modules": [m for m in ("workloads", "bench") if importlib.util.find_spec(m) is not None],
    "project_distributions": [d.metadata["Name"] for d in md.distributions() if "tkg" in d.metadata["Name"].lower()],
    "repo_on_path": [p for p in sys.path if p.startswith(REPO)],
}))
"""


def test_the_pods_hold_the_default_images_python_and_dask_and_nothing_of_this_project(kube_cluster,
                                                                                       default_release):
    """The scheduler and the workers there now (the DaskAutoscaler may be retiring an idle one)."""
    api, ns = kube_cluster.api_client, default_release.namespace
    probed = {}
    for pod in pods(api, ns, "dask.org/component in (scheduler,worker)"):
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            continue
        out = subprocess.run([str(kube_cluster.release.binary("kubectl")), f"--kubeconfig={kube_cluster.kubeconfig}",
                              "-n", ns, "exec", name, "--", "python", "-c", PROBE.replace("REPO", repr(str(REPO)))],
                             check=False, capture_output=True, text=True, timeout=120)
        if out.returncode != 0 and retired(api, ns, name):
            continue  # retired by the autoscaler meanwhile
        assert out.returncode == 0, (name, out.stderr)
        probed[pod["metadata"]["labels"]["dask.org/component"], name] = json.loads(out.stdout.splitlines()[-1])
    assert {component for component, _ in probed} == {"scheduler", "worker"}, probed
    for (_, name), found in probed.items():
        assert found == {"python": "3.11", "dask": "2026.7.1", "distributed": "2026.7.1", "xgboost": "3.2.0",
                         # the runner's torch, the lock's version (module docstring)
                         "torch": "2.14.1", "project_modules": [], "project_distributions": [],
                         "repo_on_path": []}, name


def runner_outputs(release: Deployed) -> dict:
    def plain(value):
        return value["__secret__"] if isinstance(value, dict) and "__secret__" in value else value

    outputs = {k: plain(v) for k, v in release.stack.outputs.items()}
    tls = release.tls_dir
    outputs.update({"schedulerAddress": f"tls://{release.scheduler_ip}:8786",
                    "dashboardUrl": f"http://{release.scheduler_ip}:8787",
                    "tlsCaCert": (tls / "ca.crt").read_text(), "tlsClientCert": (tls / "client.crt").read_text(),
                    "tlsClientKey": (tls / "client.key").read_text(), "runnerKubeconfig": release.runner_kubeconfig,
                    "workerCount": WORKERS, "gpusPerWorker": 0, "threadsPerWorker": 1})
    return outputs


def test_the_runner_drives_both_benchmarks_through_the_default_image(kube_cluster, default_release, tmp_path):
    import pyarrow.parquet as pq

    outputs = runner_outputs(default_release)
    # the runner resizes the DaskCluster with the program's ServiceAccount token, not the admin's
    assert "kubeconfig" not in outputs
    assert token_subject(outputs["runnerKubeconfig"]) == \
        f"system:serviceaccount:{default_release.namespace}:dask-runner"
    assert (outputs["daskBackend"], outputs["daskVersion"]) == ("operator", "2026.7.1")
    outputs_file = tmp_path / "outputs.json"
    outputs_file.write_text(json.dumps(outputs))
    outputs_file.chmod(0o600)
    out = tmp_path / "results"
    try:
        proc = subprocess.run([sys.executable, "-m", "workloads.run", "--outputs", str(outputs_file),
                               "--benchmark", "all", "--profile", "smoke", "--device", "cpu", "--output", str(out),
                               "--workers", str(WORKERS)],
                              check=False, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              stdin=subprocess.DEVNULL, timeout=RUNNER_TIMEOUT_S)
        log = proc.stdout
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the runner did not finish in {RUNNER_TIMEOUT_S} s:\n{(exc.stdout or '')[-4000:]}")
    results = out / "results.jsonl"
    records = [json.loads(x) for x in results.read_text().splitlines()] if results.exists() else []
    explain = (f"{log[-6000:]}\nevents: {event_summary(kube_cluster.api_client, default_release.namespace)}"
               f"\ncontroller log:\n{default_release.controller.tail(30)}")
    assert proc.returncode == 0, explain
    assert sorted(r["benchmark"] for r in records) == ["images", "taxi"], explain
    assert all(r["status"] == "succeeded" for r in records), records
    by_name = {r["benchmark"]: r for r in records}
    for record in records:  # what the workers that ran have: the image's Python, Dask and xgboost
        versions = record["versions"]
        assert (versions["python"][:5], versions["dask"], versions["distributed"], versions["xgboost"]) == (
            "3.11.", "2026.7.1", "2026.7.1", "3.2.0"), versions
    share = default_release.share
    assert by_name["images"]["metrics"]["images_scored"] > 0
    assert by_name["images"]["metrics"]["images_total"] == sum(
        1 for p in (share / "dogs" / "Images").rglob("*") if p.is_file())
    assert by_name["taxi"]["metrics"]["rows_raw"] == sum(pq.ParquetFile(p).metadata.num_rows
                                                         for p in (share / "taxi").glob("*.parquet"))
    assert by_name["taxi"]["metrics"]["rows_clean"] > 0
    # the operator backend: the runner pinned the DaskCluster to the run's size and put the
    # autoscaler back as deployed
    assert f"scaling: dask-default to {WORKERS} worker(s)" in log, log[-4000:]
    scaler = api_request(kube_cluster.api_client, "GET", f"/apis/kubernetes.dask.org/v1/namespaces/"
                         f"{default_release.namespace}/daskautoscalers/dask")["spec"]
    declared = default_release.stack.of_kind("DaskAutoscaler")[0]["spec"]
    assert (scaler["minimum"], scaler["maximum"]) == (declared["minimum"], declared["maximum"])
