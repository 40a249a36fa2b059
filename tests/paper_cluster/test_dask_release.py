"""The paper's stack's Dask release (``reference``: the Helm backend, TLS) running on the paper's
1.20 node (TKG's PodSecurityPolicy admission): pods Running, workers on the scheduler
over mutual TLS, a client without the certificate refused, Jupyter's login taking the
generated password and refusing others, no unintended listening port; the program's data
Job filling the dataset claim from a server on the cluster's bridge (tests.cluster.data_job),
and failing with the downloader's errors where that server lacks a file or serves a corrupt
one; the runner from outside on the data the Job prepared, with the program's namespaced
identity (its ServiceAccount's token, issued by this cluster's token controller), never the
cluster's admin kubeconfig.

What differs from the program's output is one list, in tests/cluster/post_render.py (the
image stand-in with the Python environment mounted read-only from the node, CPU instead of
GPU workers, smaller requests, no node selectors, the scheduler by its Service's address
since there is no cluster DNS, a writable JupyterLab settings directory), plus, here:
- the ``dask-tls`` Secret's values: real certificates made like components/dask/tls.py
  declares them (under Pulumi's mocks pulumi-tls returns placeholder text);
- the shared claims bound to hostPath PersistentVolumes on the one node, standing in for the
  NFS share: this machine's kernel has no ``nfs`` filesystem (absent from /proc/filesystems,
  no module to load), so kubelet cannot mount an NFS volume whatever serves it (a userspace
  server such as nfs-ganesha could run, but nothing here can mount what it exports);
- the data settings (``dogsImagesUrl``, ``dogsLabelsUrl``, ``modelWeightsUrl``,
  ``taxiUrlTemplate``, ``taxiMonths``) set to nginx on the bridge, as a user sets them.
"""
from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from distributed import Client

from components.dask.values import dashboard_url
from tests.cluster import data_job
from tests.cluster.dask_release import Release, stack_outputs
from tests.cluster.jupyter import Browser, logged_in, serving
from tests.cluster.kube import pods, running, wait_for, wait_running
from tests.cluster.post_render import change_job
from tests.cluster.program import DeclaredStack, declared_stack
from tests.cluster.support import LAB_SETTINGS, runtime_differences
from tests.cluster.support import RELEASE_WORKERS as WORKERS
from tests.kube.rest import api_request

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def release_stack() -> tuple[str, dict]:
    return "reference", {}


def test_workers_join_the_scheduler_over_tls(dask_release):
    with Client(dask_release.address, security=dask_release.security(), timeout="30s") as client:
        client.wait_for_workers(WORKERS, timeout=60)
        workers = client.scheduler_info()["workers"]
        assert len(workers) == WORKERS and all(a.startswith("tls://") for a in workers)
        assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6


def test_a_client_without_the_certificate_is_refused(dask_release):
    context = ssl.create_default_context(cafile=str(dask_release.tls_dir / "ca.crt"))
    context.check_hostname = False  # Dask checks the chain, not names
    with (socket.create_connection((dask_release.scheduler_ip, 8786), timeout=10) as raw,
          pytest.raises(ssl.SSLError, match=r"CERTIFICATE_REQUIRED|certificate required|HANDSHAKE_FAILURE"),
          context.wrap_socket(raw) as tls):
        tls.recv(1)  # TLS 1.3: the server's refusal arrives after the client's Finished


def test_jupyter_accepts_the_generated_password_and_refuses_others(dask_release):
    """A real login through the chart's Service, with the password the stack exports."""
    password = dask_release.program_outputs["jupyterPassword"]["__secret__"]
    base = f"https://{dask_release.jupyter_ip}:80"
    # Jupyter's own certificate, from the stack's CA, checked against its Service's name
    trust = {"ca_file": dask_release.tls_dir / "ca.crt",
             "server_name": f"dask-jupyter.{dask_release.namespace}.svc.cluster.local"}
    wait_for("Jupyter's login page", lambda: serving(base, **trust), 90)
    assert not serving(f"http://{dask_release.jupyter_ip}:80")  # no plain HTTP
    refused = Browser(base, **trust)
    wrong = refused.login(password + "x")
    assert (wrong.status, wrong.location) == (401, None) and "Invalid credentials" in wrong.body
    assert not logged_in(wrong) and refused.request("/api/status").status == 403
    browser = Browser(base, **trust)
    right = browser.login(password)
    assert (right.status, right.location) == (302, "/lab") and logged_in(right), right
    status = browser.request("/api/status")
    assert status.status == 200 and '"kernels"' in status.body
    assert Browser(base, **trust).request("/api/status?token=").status == 403  # no empty-token way in


def test_jupyter_ran_the_whole_of_the_charts_config(kube_cluster, dask_release):
    """The program's extraConfig, after the password in the chart's file, ran in the pod."""
    (pod,) = pods(kube_cluster.api_client, dask_release.namespace, "component=jupyter")
    written = json.loads(pod_exec(kube_cluster, dask_release.namespace, pod["metadata"]["name"],
                                  "cat", str(LAB_SETTINGS / "overrides.json")))
    assert written == {"dask-labextension:plugin": {"defaultURL": dashboard_url("dask", dask_release.namespace,
                                                                                tls=True)}}


def pod_exec(kube_cluster, namespace: str, pod: str, *command: str) -> str:
    out = subprocess.run([str(kube_cluster.release.binary("kubectl")), f"--kubeconfig={kube_cluster.kubeconfig}",
                          "-n", namespace, "exec", pod, "--", *command],
                         check=False, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def listening_ports(kube_cluster, namespace: str, pod: str) -> set[int]:
    out = pod_exec(kube_cluster, namespace, pod, "ss", "-H", "-ltn")
    return {int(line.split()[3].rsplit(":", 1)[1]) for line in out.splitlines() if line.strip()}


def test_no_container_listens_on_a_port_the_program_did_not_open(kube_cluster, dask_release):
    api = kube_cluster.api_client
    with Client(dask_release.address, security=dask_release.security(), timeout="30s") as client:
        info = client.scheduler_info()["workers"]
    meant_by_ip: dict[str, set[int]] = {}
    for address, worker in info.items():  # each worker's comm port and its nanny's
        host = address.split("://")[1].rsplit(":", 1)[0]
        meant_by_ip.setdefault(host, set()).update(
            {int(address.rsplit(":", 1)[1]), int(worker["nanny"].rsplit(":", 1)[1])})
    checked = [pod for pod in pods(api, dask_release.namespace) if running(pod)]
    assert {p["metadata"]["labels"].get("component") for p in checked} >= {"scheduler", "worker", "jupyter"}
    for pod in checked:
        name = pod["metadata"]["name"]
        ports = listening_ports(kube_cluster, dask_release.namespace, name)
        # what the pod spec declares (the chart's containerPorts: scheduler 8786 + dashboard 8787,
        # the worker's HTTP server 8790, Jupyter 8888), plus each worker's and nanny's comm port (TLS)
        declared = {p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
        meant = declared | meant_by_ip.get(pod["status"]["podIP"], set())
        assert ports == meant, f"{name} listens on {sorted(ports)}, the program opens {sorted(meant)}"


# What each role's TLS directory holds (workloads/contract.py TLS_ROLE_KEYS)
ROLE_FILES = {"scheduler": {"ca.crt", "scheduler.crt", "scheduler.key"},
              "worker": {"ca.crt", "worker.crt", "worker.key", "client.crt", "client.key"},
              "jupyter": {"ca.crt", "client.crt", "client.key", "jupyter.crt", "jupyter.key"}}
# The main process's own view: not root, no new privileges (allowPrivilegeEscalation false), no
# capability left (drop ALL), no service-account token mounted, the TLS material only as
# files: its environment names paths and holds no PEM.
PROBE_POD_SECURITY = r"""
import json, os
status = dict(line.split(":", 1) for line in open("/proc/1/status").read().splitlines() if ":" in line)
environ = open("/proc/1/environ", "rb").read().split(b"\0")
tls = "/etc/dask/tls"
print(json.dumps({
    "uid": status["Uid"].split(), "gid": status["Gid"].split(),
    "no_new_privs": status["NoNewPrivs"].strip(), "cap_eff": status["CapEff"].strip(),
    "cap_bnd": status["CapBnd"].strip(),
    "token": os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token"),
    "tls_files": sorted(f for f in os.listdir(tls) if not f.startswith("..")) if os.path.isdir(tls) else [],
    "pem_in_env": any(b"-----BEGIN" in e for e in environ),
    "tls_env": sorted(e.decode().split("=", 1)[1] for e in environ if e.startswith(b"DASK_DISTRIBUTED__COMM__TLS__")),
}))
"""


def test_the_pods_run_without_token_privileges_or_keys_in_their_environment(kube_cluster, dask_release):
    """Checked inside each running pod, from its main process's /proc: what the program's pod
    security (components/kube/pod_security.py) and post-renderer promise."""
    checked = set()
    for pod in pods(kube_cluster.api_client, dask_release.namespace):
        role = pod["metadata"]["labels"].get("component")
        if role not in ROLE_FILES or not running(pod):
            continue
        seen = json.loads(pod_exec(kube_cluster, dask_release.namespace, pod["metadata"]["name"],
                                   "python", "-c", PROBE_POD_SECURITY))
        name = pod["metadata"]["name"]
        assert seen["no_new_privs"] == "1" and int(seen["cap_eff"], 16) == 0 == int(seen["cap_bnd"], 16), (name, seen)
        # RUN_AS: the paper's image is root's
        assert seen["uid"] == ["1000"] * 4 and seen["gid"] == ["1000"] * 4, (name, seen)
        assert seen["token"] is False, f"{name} has a service-account token"
        assert set(seen["tls_files"]) == ROLE_FILES[role], (name, seen["tls_files"])
        assert seen["pem_in_env"] is False and seen["tls_env"], (name, seen)
        assert all(path.startswith("/etc/dask/tls/") for path in seen["tls_env"]), (name, seen["tls_env"])
        checked.add(role)
    assert checked == set(ROLE_FILES), checked


def declared_job(stack: DeclaredStack, kube_cluster) -> dict:
    (job,) = stack.of_kind("Job")
    return change_job(job, runtime_differences(kube_cluster))


@pytest.fixture(scope="module")
def data_jobs(kube_cluster, dask_release, data_server):
    """The program's data Job, first configured to a month the server lacks and a corrupt dogs
    archive (its first run, then deleted), then to the served files, on the same claim: the
    re-run after fixing the settings that the Job's design expects."""
    api, ns = kube_cluster.api_client, dask_release.namespace
    broken_stack = declared_stack("reference", data_server.config(dogsImagesUrl=data_job.CORRUPT_ARCHIVE,
                                                                  taxiMonths=[data_job.MISSING_MONTH]))
    broken = declared_job(broken_stack, kube_cluster)
    data_job.apply_code(api, broken_stack)
    job, exited, log = data_job.run_until_exit(api, broken, timeout_s=120)
    runs = {"broken": {"job": job, "exit": exited, "log": log}}
    data_job.delete_job(api, ns, broken["metadata"]["name"])
    prepared = declared_job(dask_release.stack, kube_cluster)
    data_job.apply_code(api, dask_release.stack)
    job, exited, log = data_job.run_until_exit(api, prepared, timeout_s=180)
    if exited["exitCode"] == 0:
        job = data_job.wait_complete(api, ns, prepared["metadata"]["name"], timeout_s=60)
    runs["prepared"] = {"job": job, "exit": exited, "log": log}
    return runs


def test_a_data_job_whose_server_lacks_a_file_or_corrupts_one_fails_naming_both(data_jobs, data_server):
    run = data_jobs["broken"]
    assert run["exit"]["exitCode"] == 1, run["log"]
    missing = data_server.server.url(data_server.paths["taxiUrlTemplate"].format(month=data_job.MISSING_MONTH))
    assert (f"ERROR FAILED {missing} -> /ml-share/taxi/yellow_tripdata_{data_job.MISSING_MONTH}.parquet:"
            " HTTP 404 Not Found (after 1 attempt)") in run["log"], run["log"]
    assert ("ERROR FAILED /ml-share/dogs/images.tar -> /ml-share/dogs/Images: refused or failed to extract:"
            " file could not be opened successfully") in run["log"], run["log"]
    assert "summary: 3 done, 0 skipped, 2 failed" in run["log"]
    assert not run["job"]["status"].get("succeeded"), run["job"]["status"]


def relative_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_data_job_fills_the_claim_in_the_layout_the_runner_reads(data_jobs, data_server, dask_release):
    run = data_jobs["prepared"]
    assert run["exit"]["exitCode"] == 0, run["log"]
    assert run["job"]["status"].get("succeeded") == 1
    share, www = dask_release.share, data_server.server.root
    with tarfile.open(www / data_server.paths["dogsImagesUrl"].lstrip("/")) as tar:
        served_images = {m.name.removeprefix("Images/"): tar.extractfile(m).read() for m in tar if m.isfile()}
    assert relative_files(share / "dogs" / "Images") == served_images and len(served_images) == 30
    for setting, on_share in (("dogsLabelsUrl", "dogs/imagenet1000_clsidx_to_labels.txt"),
                              ("modelWeightsUrl", "models/resnet50-0676ba61.pth")):
        assert (share / on_share).read_bytes() == (www / data_server.paths[setting].lstrip("/")).read_bytes()
    template = data_server.paths["taxiUrlTemplate"].lstrip("/")
    assert relative_files(share / "taxi") == {f"yellow_tripdata_{m}.parquet": (www / template.format(month=m))
                                              .read_bytes() for m in data_server.months}
    status = json.loads((share / ".prepare-status.json").read_text())
    assert status["ok"] and status["root"] == "/ml-share", status


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
    assert proc.stdout is not None  # stdout=PIPE
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
def baseline_run(dask_release, data_jobs, tmp_path_factory):
    """Both benchmarks over the dataset the program's data Job put on the claim."""
    assert data_jobs["prepared"]["exit"]["exitCode"] == 0, data_jobs["prepared"]["log"][-3000:]
    return run_runner(dask_release, tmp_path_factory.mktemp("runner"))


def test_the_runner_drives_both_benchmarks_through_the_in_cluster_dask(baseline_run, dask_release):
    import pyarrow.parquet as pq

    proc, records, log, out = baseline_run
    assert proc.returncode == 0, log
    assert sorted(r["benchmark"] for r in records) == ["images", "taxi"]
    assert all(r["status"] == "succeeded" for r in records), records
    assert (out / "report.html").is_file()
    assert records[0]["metrics"]["images_scored"] > 0 and records[1]["metrics"]["rows_clean"] > 0
    # over what the Job put on the claim (nothing else writes there)
    share = dask_release.share
    assert records[0]["metrics"]["images_total"] == sum(1 for p in (share / "dogs" / "Images").rglob("*")
                                                        if p.is_file())
    assert records[1]["metrics"]["rows_raw"] == sum(pq.ParquetFile(p).metadata.num_rows
                                                    for p in (share / "taxi").glob("*.parquet"))


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
