"""The program's Dask release running on the real node: pods Running, workers on the scheduler
over mutual TLS, a client without the certificate refused, no unintended listening port.

What differs from the program's output is one list, in tests/cluster/post_render.py (the
image stand-in with the Python environment mounted read-only from the node, CPU instead of
GPU workers, smaller requests, no node selectors, the scheduler by its Service's address
since there is no cluster DNS, Jupyter scaled to 0), plus, here:
- the ``dask-tls`` Secret's values: real certificates made like components/dask/tls.py
  declares them (under Pulumi's mocks pulumi-tls returns placeholder text);
- the shared claims bound to hostPath PersistentVolumes on the one node, standing in for the
  NFS share (no NFS server runs in this machine's kernel).
"""
from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed import Client
from distributed.security import Security

from tests.apiserver.conftest import KUBE_CACHE, KubeApiError, api_request, apply_manifest
from tests.artifacts import DASK_CHART, artifact_path
from tests.cluster import helm
from tests.cluster.kube import delete_namespace, install_tkg_pod_security, pods, wait_for, wait_running
from tests.cluster.node import REAL_NODE_TOLERATION
from tests.cluster.pki import dask_tls_material
from tests.cluster.program import declared_stack
from tests.cluster.test_placement import apply_guest_half, shared_volume_stand_ins

REPO = Path(__file__).resolve().parents[2]
WORKERS = 2
SMALL = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "2Gi"}}


def runtime_differences(kube_cluster) -> dict:
    venv, base = Path(sys.prefix), Path(sys.base_prefix)
    mounts = [{"host": str(base), "container": str(base)}, {"host": str(venv), "container": str(venv)},
              {"host": str(REPO / "workloads"), "container": "/opt/dask-tkg/workloads"}]
    return {"image": kube_cluster.images["dask-runtime"], "mounts": mounts,
            "env": {"PATH": f"{venv}/bin:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": "/opt/dask-tkg",
                    "HOME": "/tmp"},
            "resources": {"scheduler": SMALL, "worker": SMALL, "jupyter": SMALL},
            "worker_replicas": WORKERS, "worker_threads": "1", "worker_memory": "2Gi", "jupyter_replicas": 0,
            "toleration": REAL_NODE_TOLERATION, "scheduler_service": "dask-scheduler"}


class Release:
    def __init__(self, namespace: str, tls_dir: Path, scheduler_ip: str, share: Path, outputs: dict):
        self.namespace, self.tls_dir, self.scheduler_ip = namespace, tls_dir, scheduler_ip
        self.share, self.program_outputs = share, outputs

    @property
    def address(self) -> str:
        return f"tls://{self.scheduler_ip}:8786"

    def security(self) -> Security:
        d = self.tls_dir
        return Security(tls_ca_file=str(d / "ca.crt"), tls_client_cert=str(d / "client.crt"),
                        tls_client_key=str(d / "client.key"), require_encryption=True)


@pytest.fixture(scope="module")
def dask_release(kube_cluster, tmp_path_factory):
    api = kube_cluster.api_client
    stack = declared_stack("reference")
    ns = stack.dask_namespace
    tmp = tmp_path_factory.mktemp("dask-release")
    volumes = shared_volume_stand_ins(stack, tmp / "share")
    install_tkg_pod_security(api)
    try:
        for volume in volumes:
            apply_manifest(api, volume)
        apply_guest_half(api, stack, kinds=("Namespace", "RoleBinding", "ConfigMap", "PersistentVolumeClaim"))
        tls = dask_tls_material(tmp / "tls", ["dask-scheduler", f"dask-scheduler.{ns}",
                                              f"dask-scheduler.{ns}.svc.cluster.local"])
        for secret in (o for o in stack.objects if o["kind"] == "Secret" and o["metadata"].get("namespace") == ns):
            if secret["metadata"]["name"] == "dask-tls":
                assert set(secret["stringData"]) == set(tls), "the program's TLS Secret has other keys"
                secret = {**secret, "stringData": tls}
            apply_manifest(api, secret)
        helm.install(kube_cluster, "dask", artifact_path(DASK_CHART), ns, stack.dask_release["values"],
                     differences=runtime_differences(kube_cluster))
        wait_running(api, ns, "component=scheduler", 1, timeout_s=180)
        wait_running(api, ns, "component=worker", WORKERS, timeout_s=180)
        service = api_request(api, "GET", f"/api/v1/namespaces/{ns}/services/dask-scheduler")
        dataset_claim = stack.dask_release["values"]["worker"]["mounts"]["volumes"][0]["persistentVolumeClaim"]
        yield Release(ns, tmp / "tls", service["spec"]["clusterIP"], tmp / "share" / dataset_claim["claimName"],
                      stack.outputs)
    finally:
        delete_namespace(api, ns, timeout_s=120)
        for volume in volumes:
            try:
                api_request(api, "DELETE", f"/api/v1/persistentvolumes/{volume['metadata']['name']}")
            except KubeApiError as exc:
                if exc.status != 404:
                    raise


def test_workers_join_the_scheduler_over_tls(dask_release):
    with Client(dask_release.address, security=dask_release.security(), timeout="30s") as client:
        client.wait_for_workers(WORKERS, timeout=60)
        workers = client.scheduler_info()["workers"]
        assert len(workers) == WORKERS and all(a.startswith("tls://") for a in workers)
        assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6


def test_a_client_without_the_certificate_is_refused(dask_release):
    context = ssl.create_default_context(cafile=str(dask_release.tls_dir / "ca.crt"))
    context.check_hostname = False  # Dask checks the chain, not names
    with socket.create_connection((dask_release.scheduler_ip, 8786), timeout=10) as raw:
        with pytest.raises(ssl.SSLError, match="CERTIFICATE_REQUIRED|certificate required|HANDSHAKE_FAILURE"):
            with context.wrap_socket(raw) as tls:
                tls.recv(1)  # TLS 1.3: the server's refusal arrives after the client's Finished


def listening_ports(kube_cluster, namespace: str, pod: str) -> set[int]:
    out = subprocess.run([str(KUBE_CACHE / "bin" / "kubectl"), f"--kubeconfig={kube_cluster.kubeconfig}",
                          "-n", namespace, "exec", pod, "--", "ss", "-H", "-ltn"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return {int(line.split()[3].rsplit(":", 1)[1]) for line in out.stdout.splitlines() if line.strip()}


def test_no_container_listens_on_a_port_the_program_did_not_open(kube_cluster, dask_release):
    api = kube_cluster.api_client
    with Client(dask_release.address, security=dask_release.security(), timeout="30s") as client:
        info = client.scheduler_info()["workers"]
    meant_by_ip: dict[str, set[int]] = {}
    for address, worker in info.items():  # each worker's comm port and its nanny's
        host = address.split("://")[1].rsplit(":", 1)[0]
        meant_by_ip.setdefault(host, set()).update(
            {int(address.rsplit(":", 1)[1]), int(worker["nanny"].rsplit(":", 1)[1])})
    for pod in pods(api, dask_release.namespace):
        name = pod["metadata"]["name"]
        ports = listening_ports(kube_cluster, dask_release.namespace, name)
        # what the pod spec declares (the chart's containerPorts: scheduler 8786 + dashboard 8787,
        # the worker's HTTP server 8790), plus each worker's and nanny's comm port (TLS)
        declared = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
        meant = declared | meant_by_ip.get(pod["status"]["podIP"], set())
        assert ports == meant, f"{name} listens on {sorted(ports)}, the program opens {sorted(meant)}"


def stack_outputs(release: Release) -> dict:
    """``pulumi stack output --json --show-secrets`` of the program's run, with the differences
    this cluster needs: the scheduler by its Service's ClusterIP (the program's address is the
    in-cluster DNS name; the host reaches the Service through its route onto the cluster
    network), the real TLS material, and the stand-in's workers, image and Dask version."""
    import distributed

    def plain(value):
        return value["__secret__"] if isinstance(value, dict) and "__secret__" in value else value

    outputs = {k: plain(v) for k, v in release.program_outputs.items()}
    tls = release.tls_dir
    outputs.update({"schedulerAddress": release.address, "dashboardUrl": f"http://{release.scheduler_ip}:8787",
                    "tlsCaCert": (tls / "ca.crt").read_text(), "tlsClientCert": (tls / "client.crt").read_text(),
                    "tlsClientKey": (tls / "client.key").read_text(), "workerCount": WORKERS,
                    "gpusPerWorker": 0, "threadsPerWorker": 1, "daskVersion": distributed.__version__})
    return outputs


def prepare_dataset(share: Path) -> None:
    """The data the Job would prepare, generated into the share the workers mount at /ml-share
    by the benchmarks' own generators (smoke profile; the downloader needs the internet)."""
    from workloads import benchmarks
    from workloads.run import benchmark_profile

    for name in benchmarks.BENCHMARKS:
        module = benchmarks.load(name)
        module.generate(share, benchmark_profile(module, "smoke"))


def run_runner(release: Release, tmp_path: Path, delete_worker_after: str | None = None,
               api=None) -> tuple[subprocess.CompletedProcess | subprocess.Popen, list[dict], str, Path]:
    """``python -m workloads.run --outputs FILE`` from the host, both benchmarks, smoke profile.
    With ``delete_worker_after``, one worker pod is deleted once the runner prints that line."""
    outputs_file = tmp_path / "outputs.json"
    outputs_file.write_text(json.dumps(stack_outputs(release)))
    outputs_file.chmod(0o600)
    out = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "workloads.run", "--outputs", str(outputs_file),
                             "--benchmark", "all", "--profile", "smoke", "--device", "cpu", "--output", str(out),
                             # every worker in the run: a run restricted to some workers is not
                             # what a lost worker tests (see the report: that case hangs)
                             "--workers", str(WORKERS)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, deleted = [], None
    for line in proc.stdout:
        lines.append(line)
        if delete_worker_after and deleted is None and line.startswith(delete_worker_after):
            time.sleep(2.0)  # into the run, past its set-up
            victim = pods(api, release.namespace, "component=worker")[0]["metadata"]["name"]
            api_request(api, "DELETE", f"/api/v1/namespaces/{release.namespace}/pods/{victim}",
                        body={"gracePeriodSeconds": 0})
            deleted = victim
    try:
        proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    results = out / "results.jsonl"
    records = [json.loads(x) for x in results.read_text().splitlines()] if results.exists() else []
    return proc, records, "".join(lines)[-4000:] + (f"\n(deleted worker pod {deleted})" if deleted else ""), out


def comparable(record: dict) -> dict:
    """What must not change when a worker is lost: the work done and its outcome."""
    m = record["metrics"]
    if record["benchmark"] == "images":
        return {k: m.get(k) for k in ("images_total", "images_scored", "images_failed", "failed", "converted")}
    return {k: m.get(k) for k in ("rows_raw", "rows_clean", "dropped_by_rule", "files_by_schema")}


@pytest.fixture(scope="module")
def baseline_run(dask_release, tmp_path_factory):
    prepare_dataset(dask_release.share)
    return run_runner(dask_release, tmp_path_factory.mktemp("runner"))


def test_the_runner_drives_both_benchmarks_through_the_in_cluster_dask(baseline_run):
    proc, records, log, out = baseline_run
    assert proc.returncode == 0, log
    assert sorted(r["benchmark"] for r in records) == ["images", "taxi"]
    assert all(r["status"] == "succeeded" for r in records), records
    assert (out / "report.html").is_file()
    assert records[0]["metrics"]["images_scored"] > 0 and records[1]["metrics"]["rows_clean"] > 0


def test_a_worker_pod_deleted_mid_run_is_survived_with_equal_results(kube_cluster, dask_release, baseline_run,
                                                                    tmp_path):
    _, baseline, _, _ = baseline_run
    proc, records, log, _ = run_runner(dask_release, tmp_path, delete_worker_after="images:",
                                       api=kube_cluster.api_client)
    assert "deleted worker pod" in log
    assert proc.returncode == 0, log
    assert [r["status"] for r in records] == ["succeeded", "succeeded"], log
    assert [comparable(r) for r in records] == [comparable(r) for r in baseline]
    # the Deployment replaced the pod
    wait_running(kube_cluster.api_client, dask_release.namespace, "component=worker", WORKERS, timeout_s=120)
