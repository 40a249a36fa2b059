"""The current platform's Dask pods run from the prepared environment (workerEnvironment=prepared,
docs/dask.md "The Python environment"), under Pulumi's mocks for the dev and full stacks:

- no Dask pod (scheduler, GPU and CPU workers, Jupyter) installs anything at start: no
  EXTRA_PIP_PACKAGES, no pip or conda in its command or arguments, no pip-cache mount;
- each mounts the environment's directory of the pip-cache claim read-only at the fixed path,
  with its bin/ first on PATH, and the DaskCluster and Jupyter wait for the environment Job;
- the Job installs the lock (from its ConfigMap) with hashes required, from packageIndexUrl,
  hardened and unprivileged, in the Dask image;
- the lock: a hash on every requirement, one CUDA major among its CUDA libraries, the
  runner's Dask; the CPU flavour is the same spec without the GPU packages;
- refusals at preview: extraPipPackages with workerEnvironment=prepared (naming both keys), a
  Dask version other than the lock's.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.program.graph import run_program

REPO = Path(__file__).resolve().parents[2]
STACKS = ("dev", "full")
NODE_NETWORKS = {"dev": "10.20.1.0/24", "full": "192.168.106.0/24"}  # each stack's fileShareClients
ENV_MOUNT = "/opt/dask-env"  # components/kube/prepared_env.py


@pytest.fixture(scope="module", params=STACKS)
def graph(request):
    g = run_program(request.param)
    assert g.error is None, g.traceback
    g.node_network = NODE_NETWORKS[request.param]
    return g


def dask_containers(g) -> list[tuple[str, dict, list[dict]]]:
    """(pod, container, pod volumes) of every Dask pod: the DaskCluster's and worker groups'
    pods and the Jupyter release's values (its pod's container as the chart renders it)."""
    found = []
    for resource in [*g.of_type("DaskCluster"), *g.of_type("DaskWorkerGroup")]:
        spec = resource.manifest()["spec"]
        for role in ("scheduler", "worker"):
            if role in spec:
                pod = spec[role]["spec"]
                found += [(f"{resource.name}/{role}", c, pod.get("volumes", [])) for c in pod["containers"]]
    for release in g.of_type("Release"):
        jupyter = (release.inputs.get("values") or {}).get("jupyter") or {}
        if jupyter.get("enabled"):
            mounts = jupyter.get("mounts", {})
            found.append(("jupyter", {"env": jupyter.get("env", []), "args": jupyter.get("args", []),
                                      "volumeMounts": mounts.get("volumeMounts", [])}, mounts.get("volumes", [])))
    return found


def test_no_dask_pod_installs_anything_at_start(graph):
    pods = dask_containers(graph)
    assert {name.rsplit("/", 1)[-1] for name, _, _ in pods} >= {"scheduler", "worker", "jupyter"}
    for name, container, volumes in pods:
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        assert "EXTRA_PIP_PACKAGES" not in env, name
        words = [*container.get("command", []), *container.get("args", [])]
        assert not any(re.search(r"\b(pip|pip3|conda|mamba|uv)\b", w) for w in words), (name, words)
        assert not any(v["name"] == "pip-cache" for v in volumes), name


def test_every_dask_pod_runs_from_the_environment_read_only(graph):
    job_subdir = graph.named("environment-job").manifest()["spec"]["template"]["spec"]["containers"][0][
        "volumeMounts"][0]["subPath"]
    claim = next(r.manifest() for r in graph.of_type("PersistentVolumeClaim")
                 if r.manifest()["metadata"]["labels"].get("dask-tkg.io/data") == "pip-cache")["metadata"]["name"]
    for name, container, volumes in dask_containers(graph):
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == ENV_MOUNT]
        assert mount["readOnly"] is True and mount["subPath"] == job_subdir, (name, mount)
        (volume,) = [v for v in volumes if v["name"] == mount["name"]]
        assert volume["persistentVolumeClaim"] == {"claimName": claim, "readOnly": True}, name
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        assert env["PATH"].split(":")[0] == f"{ENV_MOUNT}/bin", (name, env.get("PATH"))


def test_the_dask_pods_wait_for_the_environment_job(graph):
    job = graph.named("environment-job")
    for resource in [*graph.of_type("DaskCluster"), *graph.of_type("DaskWorkerGroup"),
                     *[r for r in graph.of_type("Release") if (r.inputs.get("values") or {}).get("jupyter")]]:
        assert graph.depends_on(resource, job), resource.name
    # awaited: pulumi up creates the pods only once the environment is complete
    assert "pulumi.com/skipAwait" not in (job.manifest()["metadata"].get("annotations") or {})


def test_the_job_installs_the_lock_with_hashes_from_the_index_in_the_dask_image(graph):
    import components.kube.prepared_env as prepared_env
    from components.artifacts import worker_lock

    job = graph.named("environment-job").manifest()
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    script = container["command"][-1]
    for part in ("python -m venv", "--require-hashes", "--no-deps", "--only-binary=:all:",
                 '--index-url "$PACKAGE_INDEX_URL"', prepared_env.MARKER):
        assert part in script, part
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["PACKAGE_INDEX_URL"] == "https://pypi.org/simple"
    lock = graph.named("environment-lock").manifest()["data"][prepared_env.LOCK_KEY]
    assert lock == worker_lock.lock_text() and env["LOCK_SHA256"] == worker_lock.lock_digest(lock)
    images = {c["image"] for c in [*pod["containers"], *pod["initContainers"]]}
    cluster = graph.of_type("DaskCluster")[0].manifest()
    assert images == {cluster["spec"]["worker"]["spec"]["containers"][0]["image"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    # its one right: the record (test_the_job_records_the_environment_where_the_pods_read_it)
    assert pod["serviceAccountName"] == "dask-environment" and pod["automountServiceAccountToken"] is True
    for c in [*pod["containers"], *pod["initContainers"]]:
        assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    assert container["volumeMounts"][0] == {"name": "claim", "mountPath": prepared_env.ENV_MOUNT,
                                            "subPath": prepared_env.subdir(lock)}


def test_every_dask_pod_checks_the_environment_against_the_record_first(graph):
    """The DaskCluster's and worker groups' pods start with the check (Helm's pods get it from
    the post-renderer: tests/render/test_environment_check.py): the image's interpreter,
    isolated, the environment read-only, the digest from the namespace's ConfigMap under the
    environment's key."""
    import components.kube.prepared_env as prepared_env

    job_subdir = graph.named("environment-job").manifest()["spec"]["template"]["spec"]["containers"][0][
        "volumeMounts"][0]["subPath"]
    checked = 0
    for resource in [*graph.of_type("DaskCluster"), *graph.of_type("DaskWorkerGroup")]:
        spec = resource.manifest()["spec"]
        for role in ("scheduler", "worker"):
            if role not in spec:
                continue
            pod = spec[role]["spec"]
            first = pod["initContainers"][0]
            assert first["name"] == "verify-environment", (resource.name, role)
            assert first["image"] == pod["containers"][0]["image"]
            assert first["command"][:4] == ["python", "-I", "-S", "-c"]
            assert first["command"][4] == prepared_env.script("env_manifest.py")
            assert first["command"][5:] == ["verify", ENV_MOUNT]
            assert first["env"] == [{"name": "EXPECTED_DIGEST", "valueFrom": {"configMapKeyRef": {
                "name": "dask-environment-digests", "key": job_subdir.rsplit("/", 1)[1]}}}]
            assert first["volumeMounts"] == [{"name": "environment", "mountPath": ENV_MOUNT,
                                              "subPath": job_subdir, "readOnly": True}]
            assert first["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
            assert "PATH" not in {e["name"] for e in first["env"]}  # the image's python, not the environment's
            checked += 1
    assert checked >= 2


def test_the_job_records_the_environment_where_the_pods_read_it(graph):
    """The Job's record: the digests ConfigMap made empty in the Dask namespace, the Job's Role
    there (get and patch of that ConfigMap, by name, nothing else) bound to its account; the
    scripts beside the lock; the API server on the node network its only way out besides the
    index and DNS."""
    import components.kube.prepared_env as prepared_env
    from components.artifacts import worker_lock

    job = graph.named("environment-job").manifest()
    ns = job["metadata"]["namespace"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["RECORD_NAMESPACES"] == ns
    assert env["RECORD_KEY"] == prepared_env.record_key(prepared_env.subdir(worker_lock.lock_text()))
    script = container["command"][-1]
    assert script.index("env_record.py\" confirm") < script.index("python -m venv") < script.index(
        "env_record.py\" record") < script.index("mv ")
    digests = graph.named("environment-digests-dask").manifest()
    assert digests["metadata"] == {"name": "dask-environment-digests", "namespace": ns,
                                   "labels": {"app.kubernetes.io/part-of": "dask-tkg"}}
    assert not digests.get("data")
    (role,) = [r.manifest() for r in graph.of_type("Role") if r.name == "environment-recorder-dask"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"],
                              "resourceNames": ["dask-environment-digests"], "verbs": ["get", "patch"]}]
    (binding,) = [r.manifest() for r in graph.of_type("RoleBinding") if r.name == "environment-recorder-dask"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "dask-environment", "namespace": ns}]
    lock_map = graph.named("environment-lock").manifest()["data"]
    assert set(lock_map) == {"worker.lock", "env_manifest.py", "env_record.py"}
    policy = graph.named("environment-egress").manifest()
    api_rules = [r for r in policy["spec"]["egress"] if r["ports"] == [{"protocol": "TCP", "port": 6443}]]
    assert api_rules == [{"to": [{"ipBlock": {"cidr": graph.node_network}}],
                          "ports": [{"protocol": "TCP", "port": 6443}]}]


def test_the_default_image_is_a_pinned_cpython_311_with_recorded_facts(graph):
    import components.facts.dask_facts as facts

    image = graph.outputs["daskImage"]
    assert re.fullmatch(r"python:3\.11\.\d+-slim-trixie@sha256:[0-9a-f]{64}", image), image  # by tag and digest
    found = facts.image_facts(image)
    assert found is not None and found.python == "3.11" and found.user is None
    assert graph.outputs["daskVersion"] == "2026.7.1"
    assert not [w for w in graph.warnings if "cannot drive" in w]  # the runner's preflight accepts them


def test_the_lock_has_a_hash_on_every_line_and_one_cuda_major():
    from components.artifacts import worker_lock

    text = worker_lock.lock_text()
    blocks = worker_lock.requirement_blocks(text)
    assert len(blocks) > 100 and worker_lock.unhashed(text) == []
    assert all(len(re.findall(r"--hash=sha256:[0-9a-f]{64}", b)) == 1 for b in blocks)  # one file each
    pins = worker_lock.pins(text)
    # one CUDA major: every suffixed library -cu13, the unsuffixed CUDA 13 wheels at CUDA 13
    suffixed = [n for n in pins if re.search(r"-cu(\d+)$", n)]
    assert suffixed and {re.search(r"-cu(\d+)$", n).group(1) for n in suffixed} == {"13"}, suffixed
    assert pins["nvidia-cuda-runtime"].startswith("13.") and pins["cuda-toolkit"].startswith("13.")
    assert worker_lock.cuda_majors(text) == {13}
    assert not any(n.endswith("-cu12") for n in pins)
    # the runner's torch (requirements.txt): the client and the workers run the same one
    runner = dict(re.findall(r"^(torch|torchvision)==(\S+)", (REPO / "requirements.txt").read_text(), re.M))
    assert (pins["torch"], pins["torchvision"]) == (runner["torch"], runner["torchvision"]), runner
    for name, version in {"dask": "2026.7.1", "distributed": "2026.7.1", "xgboost-cu13": "3.2.0", "torch": "2.14.1",
                          "torchvision": "0.29.1", "cudf-cu13": "26.10", "dask-cudf-cu13": "26.10",
                          "dask-cuda": "26.10", "cupy-cuda13x": "14."}.items():
        assert pins[name].startswith(version), (name, pins[name])
    assert {"jupyterlab", "dask-labextension", "pandas", "pyarrow", "numpy"} <= set(pins)
    # every file a CPython 3.11 or pure wheel for x86_64 Linux
    files = re.findall(r"#\s(\S+\.whl)$", text, re.M)
    assert len(files) == len(blocks)
    assert [f for f in files if not installs_on_cpython_311_x86_64(f)] == []


def installs_on_cpython_311_x86_64(filename: str) -> bool:
    from packaging.utils import parse_wheel_filename

    *_, tags = parse_wheel_filename(filename)
    return any(tag.interpreter in ("cp311", "py3", "py311", "cp3")
               or (tag.abi == "abi3" and int(tag.interpreter[3:] or 0) <= 11)
               for tag in tags) and any(tag.platform == "any" or re.fullmatch(
                   r"(manylinux_2_\d+|manylinux2014|manylinux2010|manylinux1|linux)_x86_64", tag.platform)
                   for tag in tags)


def test_the_cpu_flavour_is_the_spec_without_the_gpu_packages():
    from components.artifacts import worker_lock

    gpu = worker_lock.pins(worker_lock.lock_text())
    cpu_text = worker_lock.lock_text("cpu")
    cpu = worker_lock.pins(cpu_text)
    assert worker_lock.unhashed(cpu_text) == [] and worker_lock.cuda_majors(cpu_text) == set()
    assert not any(n.startswith(("nvidia-", "cuda-", "cupy")) or n.endswith(("-cu12", "-cu13"))
                   for n in cpu), sorted(cpu)
    assert "torch" not in cpu and "torchvision" not in cpu and "dask-cuda" not in cpu and "xgboost" not in cpu
    assert cpu["xgboost-cpu"] == gpu["xgboost-cu13"] == "3.2.0"
    for name in ("dask", "distributed", "pandas", "numpy", "pyarrow", "jupyterlab", "dask-labextension"):
        assert cpu[name] == gpu[name], name


def test_the_locks_are_worker_ins():
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "lock_worker_env.py"), "--check"],
                         check=False, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr


def test_extra_pip_packages_with_the_prepared_environment_is_refused_naming_both_keys():
    g = run_program("dev", config={"extraPipPackages": "torch==2.10.0"})
    assert g.error is not None
    assert "dask-tkg:extraPipPackages" in g.error and "workerEnvironment=prepared" in g.error, g.error
    assert "the pods install nothing at start, every package comes from worker-cu13.lock" in g.error, g.error


def test_a_dask_version_other_than_the_locks_is_refused():
    g = run_program("dev", config={"daskImageDaskVersion": "2026.6.0"})
    assert g.error is not None and "dask-tkg:daskImageDaskVersion" in g.error, g.error
    assert "2026.6.0 is not the Dask of the prepared environment (2026.7.1, worker-cu13.lock)" in g.error, g.error


def test_an_image_of_another_python_is_refused_naming_daskimage():
    g = run_program("dev", config={"daskImage": "nvcr.io/nvidia/rapidsai/rapidsai:21.10-cuda11.2-runtime-ubuntu20.04"})
    assert g.error is not None and "dask-tkg:daskImage" in g.error and "runs Python 3.8" in g.error, g.error
    assert "the prepared environment (worker-cu13.lock) is for CPython 3.11" in g.error, g.error


def test_the_image_way_stays_available_and_declares_no_job():
    g = run_program("dev", config={"workerEnvironment": "image", "daskImage": "rapidsai/notebooks:26.10-cuda12-py3.11",
                                   "extraPipPackages": "torch==2.10.0 torchvision==0.25.0"})
    assert g.error is None, g.traceback
    assert not [r for r in g.of_type("Job") if r.name.startswith("environment")]
    worker = g.of_type("DaskCluster")[0].manifest()["spec"]["worker"]["spec"]
    env = {e["name"]: e.get("value") for e in worker["containers"][0]["env"]}
    assert env["EXTRA_PIP_PACKAGES"] == "torch==2.10.0 torchvision==0.25.0"
    assert any(v["name"] == "pip-cache" for v in worker["volumes"])


def test_a_bad_worker_environment_or_index_is_refused_naming_the_key():
    g = run_program("dev", config={"workerEnvironment": "conda"})
    assert g.error is not None and "workerEnvironment" in g.error and "prepared, image" in g.error, g.error
    g = run_program("dev", config={"packageIndexUrl": "pypi.org/simple"})
    assert g.error is not None and "packageIndexUrl" in g.error, g.error
