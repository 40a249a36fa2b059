"""A Helm post-renderer holding every way the test cluster's Dask release differs from the program's.

Helm renders the chart with the values the program builds, unchanged; this script (run by
``helm install --post-renderer``) then applies the differences below to the rendered
Deployments, and nothing else. The differences, and why each one is needed here:

1. image: the locally built ``dask-runtime`` stand-in (a minimal Debian rootfs, imported
   into containerd, ``imagePullPolicy: Never``) instead of RAPIDS from nvcr.io (no
   registry is reachable);
2. the Python environment: the base interpreter's prefix, the project's virtual
   environment and its ``workloads`` package (at ``/opt/dask-tkg``, where
   ``images/dask-runtime/Dockerfile`` copies them) are mounted read-only from the node at
   the same paths, through read-only claims on the node's paths (which the restricted Pod
   Security level admits, unlike hostPath volumes), with ``PATH``/``PYTHONPATH`` set to them
   (the torch wheel here is a ~5 GB CUDA build: too big to bake into an image in CI);
3. workers run ``dask worker`` (``dask-cuda-worker`` needs a GPU and NVML) and request no
   ``nvidia.com/gpu`` (a CPU node has none);
4. smaller requests and limits, and fewer workers: the program's 6 CPUs / 48 GiB per worker
   do not fit this machine;
5. no node selectors (the one real node carries no pool-role label) and a toleration of
   the real node's taint;
6. workers reach the scheduler by its Service's address from the environment kubelet
   gives every pod (``$(DASK_SCHEDULER_SERVICE_HOST)``) instead of by DNS name: there is
   no cluster DNS add-on here (CoreDNS is not packaged in Debian bookworm);
7. the scheduler and workers start as ``dask scheduler`` / ``dask worker``: distributed
   2026.7.1 (requirements.txt, images/dask-runtime/Dockerfile) no longer installs the
   ``dask-scheduler``/``dask-worker`` executables the chart (2024.1.1) runs (its entry
   points are ``dask_cli`` scheduler/worker only), so the chart's commands fail there with
   ``exec: "dask-scheduler": executable file not found in $PATH`` (seen on this cluster);
8. Jupyter gets an ``emptyDir`` at each of ``writable["jupyter"]``: the program's
   ``jupyter.extraConfig`` (components/dask/values.py, ``labextension_config``) writes the
   Dask JupyterLab extension's default URL into ``<sys.prefix>/share/jupyter/lab/settings``,
   writable in the RAPIDS image but read-only here (2.); without it the config would only
   report that it could not write there. Jupyter's command, config, password, ports and
   mounts are otherwise the program's (JupyterLab from requirements-test.txt);
9. the scheduler's Service gets a fixed ClusterIP (``scheduler_ip``), which the test's
   scheduler certificate names: the runner dials the Service by that address (no cluster
   DNS here) and checks that the certificate names the address it dials (the program's
   certificate names the Service's DNS names and, when exposed, its LoadBalancer address).

The data Job is applied from the program's objects, not by Helm; :func:`change_job`
applies 1., 2. (the interpreter only: its ``python`` runs the ConfigMap's standard-library
``prepare.py`` as declared) and 5. to it. Its download URLs are the program's, set by
configuration (``dogsImagesUrl``, ... as a user would) to a server on the cluster's bridge.

The program's own post-renderer (components/dask/post_render.py, the release's ``postrender``)
runs first, unchanged: the pods keep its security context, no token and the TLS files.

Usage (by Helm): post_render.py DIFFERENCES.json < rendered.yaml > changed.yaml
"""
from __future__ import annotations

import json
import sys
from typing import Any

import yaml

from components.dask.post_render import harden
from components.kube.prepared_env import VERIFY_CONTAINER


def set_mounts(spec: dict, container: dict, paths: list[dict]) -> None:
    """Each path mounted read-only: from its read-only claim where it has one
    (tests/cluster/support.py ``read_only_claims``), else straight from the node."""
    volumes = spec.setdefault("volumes", [])
    mounts = container.setdefault("volumeMounts", [])
    for i, path in enumerate(paths):
        name = f"prepared-env-{i}"
        if name not in {v["name"] for v in volumes}:  # one volume a path, however many containers
            source = ({"persistentVolumeClaim": {"claimName": path["claim"], "readOnly": True}} if "claim" in path
                      else {"hostPath": {"path": path["host"],
                                         "type": "Directory" if path.get("directory", True) else "File"}})
            volumes.append({"name": name, **source})
        mounts.append({"name": name, "mountPath": path["container"], "readOnly": True})


def _writable(spec: dict, container: dict, paths: list[str]) -> None:
    for i, path in enumerate(paths):
        spec.setdefault("volumes", []).append({"name": f"writable-{i}", "emptyDir": {}})
        container.setdefault("volumeMounts", []).append({"name": f"writable-{i}", "mountPath": path})


def without_environment_check(spec: dict) -> None:
    """The pod spec without the prepared environment's check: here the environment is the
    stand-in's, which no environment Job recorded (tests/cluster/test_prepared_environment.py runs
    the check on an environment the Job prepared)."""
    spec["initContainers"] = [c for c in spec.get("initContainers", []) if c["name"] != VERIFY_CONTAINER]
    if not spec["initContainers"]:
        del spec["initContainers"]


def set_env(container: dict, env: dict[str, str]) -> None:
    entries = [e for e in container.get("env", []) if e["name"] not in env]
    container["env"] = entries + [{"name": k, "value": v} for k, v in env.items()]


def change_deployment(obj: dict, d: dict[str, Any]) -> dict:
    component = obj["metadata"]["labels"].get("component")
    spec = obj["spec"]["template"]["spec"]
    spec.pop("nodeSelector", None)
    spec["tolerations"] = [*spec.get("tolerations", []), d["toleration"]]
    without_environment_check(spec)
    if component == "worker":
        obj["spec"]["replicas"] = d["worker_replicas"]
    for container in spec["containers"]:
        container["image"] = d["image"]
        container["imagePullPolicy"] = "Never"
        container["resources"] = d["resources"][component]
        set_mounts(spec, container, d["mounts"])
        _writable(spec, container, d.get("writable", {}).get(component, []))
        set_env(container, d["env"])
        args = container.get("args") or []
        if component in ("scheduler", "worker") and args:
            args[0:1] = ["dask", component]  # 3. and 8.
        if component == "worker" and args:
            args[2] = args[2].replace(f"{d['scheduler_service']}:", "$(DASK_SCHEDULER_SERVICE_HOST):", 1)
            for flag, value in (("--nthreads", d["worker_threads"]), ("--memory-limit", d["worker_memory"])):
                if flag in args:
                    args[args.index(flag) + 1] = value
    return obj


def change_job(obj: dict, d: dict[str, Any]) -> dict:
    spec = obj["spec"]["template"]["spec"]
    spec["tolerations"] = [*spec.get("tolerations", []), d["toleration"]]
    for container in spec["containers"]:
        container["image"] = d["image"]
        container["imagePullPolicy"] = "Never"
        set_mounts(spec, container, d["interpreter_mounts"])
        set_env(container, {"PATH": d["env"]["PATH"]})
    return obj


def main(argv: list[str]) -> int:
    with open(argv[0]) as f:
        differences = json.load(f)
    out = []
    for rendered in yaml.safe_load_all(sys.stdin):
        if not rendered:
            continue
        obj = harden(rendered)  # the release's own post-renderer first, as the program's Release runs it
        if obj.get("kind") == "Deployment":
            obj = change_deployment(obj, differences)
        if obj.get("kind") == "Service" and obj["metadata"]["name"] == differences.get("scheduler_service") \
                and differences.get("scheduler_ip"):
            obj["spec"]["clusterIP"] = differences["scheduler_ip"]  # 9.
        out.append(obj)
    yaml.safe_dump_all(out, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
