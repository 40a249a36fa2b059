"""The data preparation Job: fills the dataset volume in the layout the runner reads.

The downloader is this project's own ``workloads/prepare.py`` (standard library only),
shipped as a ConfigMap and run in a small Python image, so the Job needs nothing built.
It is resumable and skips finished files, so a re-run after a failure costs little.
Beside the code the ConfigMap holds the sha256 of each file that has one
(``components/settings/downloads.py``: the committed ``workloads/checksums.json`` and the
site's ``dataChecksums``), passed with ``--checksums``: a file whose bytes differ is never
renamed into place. The files without one are named at preview and in the Job's log.
``pulumi up`` does not wait for the downloads (hours for the full three taxi years): the
runner reports missing files, and ``kubectl logs job/dataset-prepare`` shows progress.
"""
from __future__ import annotations

import importlib.resources
import json
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.facts.dask_facts import RUN_AS
from components.kube.exposure import confine
from components.kube.network_policy import Outside, fetch_policy
from components.kube.network_settings import data_urls
from components.kube.pod_hardening import hardened_pod, pod_security_context, run_as
from components.settings.downloads import CHECKSUMS_FILE, digests, item_arguments, unverified_warnings
from components.settings.model import DataSpec

JOB_NAME = "dataset-prepare"
POD_LABELS = {"app.kubernetes.io/name": JOB_NAME}
CODE_MOUNT = "/opt/dask-tkg"
# The downloader needs no user of the image: it writes only to the dataset claim and /tmp.
# Not root (the Pod Security Standards' restricted level); the group is the Dask pods'
# (facts.RUN_AS). The NFS provisioner makes each volume's directory writable by every user
# (kubernetes-sigs/nfs-subdir-external-provisioner cmd/nfs-subdir-external-provisioner/
# provisioner.go: MkdirAll and Chmod 0777, "the pods that mount it do not share the
# provisioner's UID"); on a vSAN file share the share's own permissions decide.


def prepare_source() -> str:
    """The downloader's source, found through the ``workloads`` package wherever it is
    installed (a checkout or site-packages); ``workloads`` imports nothing on its own."""
    return importlib.resources.files("workloads").joinpath("prepare.py").read_text(encoding="utf-8")


def code_files(data: DataSpec) -> dict[str, str]:
    """The ConfigMap's files: the downloader and the digests it checks."""
    return {"prepare.py": prepare_source(), CHECKSUMS_FILE: json.dumps(digests(data), indent=2, sort_keys=True) + "\n"}


def job_args(data: DataSpec, root: str) -> list[str]:
    """The downloader's command line: the digests, then what each benchmark's dataset.json
    declares and the site's dataFiles (``downloads.item_arguments``, which the preview's
    checks plan with too)."""
    return ["python", f"{CODE_MOUNT}/prepare.py", "--root", root, "--checksums", f"{CODE_MOUNT}/{CHECKSUMS_FILE}",
            *item_arguments(data)]


@dataclass(frozen=True)
class DatasetJobArgs:
    data: DataSpec
    image: str
    namespace: pulumi.Input[str]
    dataset_claim: pulumi.Input[str]
    dataset_mount: str
    outside: Outside  # the cluster's own ranges, which the downloads never reach (network_settings.outside)
    enforces_psp: bool = False
    depends_on: tuple[pulumi.Resource, ...] = ()


class DatasetJob(pulumi.ComponentResource):
    job_name: pulumi.Output[str]

    def __init__(self, name: str, args: DatasetJobArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:addons:DatasetJob", name, None, opts)
        code = k8s.core.v1.ConfigMap(
            f"{name}-code",
            metadata={"name": f"{JOB_NAME}-code", "namespace": args.namespace},
            data=code_files(args.data),
            opts=pulumi.ResourceOptions(parent=self),
        )
        for warning in unverified_warnings(args.data):
            pulumi.log.warn(warning, resource=self)
        # Its pod may resolve names and download from the settings' URLs, nothing else.
        egress = confine(f"{name}-egress", args.namespace, lambda ns: fetch_policy(
            ns, f"{JOB_NAME}-egress", POD_LABELS, data_urls(args.data), args.outside),
            pulumi.ResourceOptions(parent=self))
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata={"name": JOB_NAME, "namespace": args.namespace,
                      "annotations": {"pulumi.com/skipAwait": "true"},
                      "labels": {"app.kubernetes.io/part-of": "dask-tkg"}},
            spec={
                "backoffLimit": 6,
                "template": {
                    "metadata": {"labels": dict(POD_LABELS)},
                    "spec": hardened_pod({
                        "restartPolicy": "OnFailure",
                        "containers": [{
                            "name": "prepare",
                            "image": args.image,
                            "args": job_args(args.data, args.dataset_mount),
                            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
                            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"},
                                          "limits": {"cpu": "2", "memory": "2Gi"}},
                            "volumeMounts": [
                                {"name": "dataset", "mountPath": args.dataset_mount},
                                {"name": "code", "mountPath": CODE_MOUNT, "readOnly": True},
                            ],
                        }],
                        "volumes": [
                            {"name": "dataset", "persistentVolumeClaim": {"claimName": args.dataset_claim}},
                            {"name": "code", "configMap": {"name": f"{JOB_NAME}-code"}},
                        ],
                    }, {**run_as(*RUN_AS), **pod_security_context(args.enforces_psp)}),
                },
            },
            # A Job's pod template is immutable: a changed source list replaces the Job.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[code, egress, *args.depends_on],
                                        delete_before_replace=True),
        )
        self.job_name = self.job.metadata.apply(lambda m: m["name"])
        self.register_outputs({"job_name": self.job_name})
