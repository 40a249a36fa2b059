"""The program's data Job run for real: its downloader (workloads/prepare.py from the
program's ConfigMap) in a pod on the dataset claim, against Debian's nginx serving, on the
cluster's bridge, files in the formats of the real sources.

What nginx serves is made by the benchmarks' own generators (smoke profile) and packed as
the real servers publish it, at the real URLs' paths with only scheme and host swapped:
the Stanford Dogs ``images.tar`` (``Images/<wnid>-<breed>/*.jpg``, an uncompressed tar),
the ImageNet class-index text file, a torchvision state dict (``.pth``), and one NYC TLC
file per month in the program's template's format (parquet). The program is configured to
these URLs the way a user would (``pulumi config set dogsImagesUrl ...``), and, as a site
with its own mirror does, given each served file's digest in ``dataChecksums`` (the files are
not the upstream ones the committed digests are of; the server is plain http).
"""
from __future__ import annotations

import hashlib
import shutil
import tarfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from components.addons.dataset_job import JOB_NAME
from tests.cluster.kube import pods, wait_for
from tests.kube.rest import KubeApiError, api_request, apply_manifest
from tests.prepare import nginx
from workloads import prepare
from workloads.runs import datasets

PORT = 18080
# the settings holding the program's default URLs (DataSpec.value)
URL_SETTINGS = ("dogsImagesUrl", "dogsLabelsUrl", "modelWeightsUrl", "taxiUrlTemplate")
# served by nothing: a month the server does not have (404), and a dogs archive that is no tar
MISSING_MONTH = "2019-02"
CORRUPT_ARCHIVE = "/corrupt/images.tar"


@dataclass
class Served:
    server: nginx.Nginx
    paths: dict[str, str]  # setting -> the URL path it is served at
    months: list[str]

    def config(self, **replace_paths: str) -> dict:
        """The program's data settings pointed at this server (a path replaced per setting),
        with the digest of each file it serves (a file it lacks gets one that matches nothing)."""
        urls = {k: self.server.url(replace_paths.get(k, p)) for k, p in self.paths.items()}
        months = list(replace_paths.get("taxiMonths", self.months))
        return {**urls, "taxiMonths": months, "dataChecksums": self.digests(urls, months)}

    def digests(self, urls: dict[str, str], months: list[str]) -> list[str]:
        """``dataChecksums`` records of the files the Job fetches from ``urls``, planned by
        the downloader itself."""
        items = datasets.prepare_arguments(datasets.downloads(), {**urls, "taxiMonths": months})
        plan = prepare.build_plan(prepare._parser().parse_args(["--root", ".", *items]), _usage_error)
        records = []
        for item in plan:
            served = self.server.root / urllib.parse.urlsplit(item.url).path.lstrip("/")
            data = served.read_bytes() if served.is_file() else b"not served"
            records.append(f"file={item.dest},size={len(data)},sha256={hashlib.sha256(data).hexdigest()}")
        return records


def _usage_error(message: str):
    raise ValueError(message)


def smoke_sources(stage: Path) -> list[str]:
    """The smoke datasets, by the benchmarks' generators, under ``stage``; the taxi months."""
    from workloads.runs import benchmarks
    from workloads.runs.sweep import benchmark_profile
    from workloads.taxi import synthetic as synth_taxi

    images = benchmarks.load("images")
    images.generate(stage, benchmark_profile(images, "smoke"))
    spec = dict(benchmark_profile(benchmarks.load("taxi"), "smoke")["generate"])
    months = [month for month, _ in synth_taxi.expand(spec.pop("files"))]
    synth_taxi.generate(stage, [f"{m}.parquet" for m in months], **spec)
    return months


def publish(www: Path, stage: Path, defaults) -> tuple[dict[str, str], list[str]]:
    """Lay the generated data out under ``www`` as the real servers do; setting -> path."""
    import torch

    months = smoke_sources(stage)
    paths = {k: urllib.parse.urlsplit(defaults.value(k)).path for k in URL_SETTINGS}

    def target(setting: str, **fmt) -> Path:
        path = www / paths[setting].format(**fmt).lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    with tarfile.open(target("dogsImagesUrl"), "w") as tar:
        tar.add(stage / "dogs" / "Images", arcname="Images")
    shutil.copy(stage / "dogs" / "imagenet1000_clsidx_to_labels.txt", target("dogsLabelsUrl"))
    torch.save({"fc.bias": torch.zeros(1000)}, target("modelWeightsUrl"))
    for month in months:
        shutil.copy(stage / "taxi" / f"yellow_tripdata_{month}.parquet", target("taxiUrlTemplate", month=month))
    corrupt = www / CORRUPT_ARCHIVE.lstrip("/")
    corrupt.parent.mkdir(parents=True, exist_ok=True)
    corrupt.write_bytes(b"<html>not a tar archive</html>\n" * 64)
    return paths, months


def serve(net, workdir: Path, defaults) -> Served:
    """nginx inside the cluster's network namespace, on the bridge's address (the pods' gateway)."""
    paths, months = publish(workdir / "www", workdir / "stage", defaults)
    server = nginx.start(workdir / "www", workdir / "nginx", host=net.bridge_ip, port=PORT,
                         prefix=tuple(net.in_netns()))
    return Served(server, paths, months)


def job_pod(api, namespace: str, job: str) -> dict | None:
    found = pods(api, namespace, f"job-name={job}")
    return found[0] if found else None


def first_exit(pod: dict | None) -> dict | None:
    """The container's first finished run (its state, or once restarted, its last state)."""
    for status in (pod or {}).get("status", {}).get("containerStatuses", []):
        for state in (status.get("state", {}), status.get("lastState", {})):
            if "terminated" in state:
                return {**state["terminated"], "restarted": status.get("restartCount", 0) > 0}
    return None


def job_log(api, namespace: str, pod: dict, previous: bool) -> str:
    name = pod["metadata"]["name"]
    log = api_request(api, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}/log",
                      query={"previous": "true" if previous else None})
    return log if isinstance(log, str) else ""


def apply_code(api, stack) -> None:
    """The stack's code ConfigMap (downloader and digests), updated as ``pulumi up`` updates
    it with the Job when the data settings change."""
    (code,) = [c for c in stack.of_kind("ConfigMap") if c["metadata"]["name"] == f"{JOB_NAME}-code"]
    apply_manifest(api, code, update_existing=True)


def run_until_exit(api, job: dict, timeout_s: float) -> tuple[dict, dict, str]:
    """Apply ``job``; wait for its container's first exit: (Job, exit, that run's log)."""
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    apply_manifest(api, job)
    exited = wait_for(f"the {name} Job's container to exit", lambda: first_exit(job_pod(api, ns, name)), timeout_s,
                      explain=lambda: repr(job_pod(api, ns, name)))
    pod = job_pod(api, ns, name)
    first = first_exit(pod)
    assert pod is not None and first is not None, f"the {name} Job's pod is gone"
    log = job_log(api, ns, pod, previous=first["restarted"])
    return api_request(api, "GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}"), exited, log


def wait_complete(api, namespace: str, name: str, timeout_s: float) -> dict:
    def complete():
        job = api_request(api, "GET", f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")
        done = any(c["type"] == "Complete" and c["status"] == "True" for c in job["status"].get("conditions", []))
        return job if done else None

    return wait_for(f"the {name} Job to complete", complete, timeout_s)


def delete_job(api, namespace: str, name: str, timeout_s: float = 60.0) -> None:
    """Delete the Job and wait until its pods are gone (the next Job reuses its name)."""
    api_request(api, "DELETE", f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}",
                body={"propagationPolicy": "Foreground", "gracePeriodSeconds": 0})
    wait_for(f"the {name} Job's pods to go", lambda: not pods(api, namespace, f"job-name={name}") or None,
             timeout_s)

    def gone():
        try:
            api_request(api, "GET", f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")
        except KubeApiError as exc:
            if exc.status == 404:
                return True
            raise
        return None

    wait_for(f"the {name} Job to go", gone, timeout_s)
