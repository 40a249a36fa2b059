"""ReadWriteMany storage over the NFS data lake, and the two claims the Dask pods mount.

The dataset claim holds days of downloads: it is protected (``pulumi destroy`` and any
replacing change stop with an error) and retained on delete, and its StorageClass keeps
volumes whose claim is deleted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.addons.values import nfs_provisioner_values
from components.artifacts.charts import verified_chart
from components.facts.addon_facts import NFS_CHART
from components.kube.pod_security import GuestNamespace, GuestNamespaceArgs
from components.settings.model import StorageSpec

PROVISIONER_NAMESPACE = "nfs-provisioner"
DATASET_CLAIM = "external-nfs-pvc"
PIP_CACHE_CLAIM = "external-nfs-pip-cache-pvc"


@dataclass(frozen=True)
class SharedStorageArgs:
    spec: StorageSpec
    namespace: pulumi.Input[str]  # the Dask namespace the claims live in
    nfs_server: pulumi.Input[str]
    nfs_path: pulumi.Input[str]
    file_share_policy: str
    enforces_psp: bool


class SharedStorage(pulumi.ComponentResource):
    storage_class: pulumi.Output[str]
    dataset_claim: pulumi.Output[str]
    pip_cache_claim: pulumi.Output[str]

    def __init__(self, name: str, args: SharedStorageArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:addons:SharedStorage", name, None, opts)
        spec = args.spec
        child = pulumi.ResourceOptions(parent=self)
        if spec.provisioner == "nfs-subdir":
            # Baseline: the provisioner runs as root and mounts the export as an ``nfs`` volume,
            # both allowed there (not at restricted); it needs nothing privileged.
            namespace = GuestNamespace(f"{name}-namespace", GuestNamespaceArgs(
                PROVISIONER_NAMESPACE, "baseline", args.enforces_psp), child)
            values = pulumi.Output.all(args.nfs_server, args.nfs_path).apply(
                lambda a: nfs_provisioner_values(spec, a[0], a[1], args.enforces_psp))
            self.provisioner: pulumi.Resource = k8s.helm.v3.Release(
                f"{name}-provisioner",
                name=NFS_CHART.name,
                chart=verified_chart(spec.nfs_chart_pin),  # the pinned archive of nfs_chart_version
                version=spec.nfs_chart_version,
                namespace=PROVISIONER_NAMESPACE,
                values=values,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace]),
            )
        else:
            # vSphere CSI file volumes (vSAN file service behind the Supervisor).
            self.provisioner = k8s.storage.v1.StorageClass(
                f"{name}-class",
                metadata={"name": spec.storage_class},
                provisioner="csi.vsphere.vmware.com",
                parameters={"svStorageClass": args.file_share_policy},
                reclaim_policy="Retain",
                allow_volume_expansion=True,
                opts=child,
            )
        after_class = pulumi.ResourceOptions(parent=self, depends_on=[self.provisioner])
        self.dataset = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-dataset",
            metadata={"name": DATASET_CLAIM, "namespace": args.namespace,
                      "labels": {"app.kubernetes.io/part-of": "dask-tkg", "dask-tkg.io/data": "dataset"}},
            spec=_claim_spec(spec.storage_class, spec.dataset_size),
            opts=pulumi.ResourceOptions.merge(after_class, pulumi.ResourceOptions(protect=True, retain_on_delete=True)),
        )
        self.pip_cache = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pip-cache",
            metadata={"name": PIP_CACHE_CLAIM, "namespace": args.namespace,
                      "labels": {"app.kubernetes.io/part-of": "dask-tkg", "dask-tkg.io/data": "pip-cache"}},
            spec=_claim_spec(spec.storage_class, spec.pip_cache_size),
            opts=after_class,
        )
        self.storage_class = pulumi.Output.from_input(spec.storage_class)
        self.dataset_claim = self.dataset.metadata.apply(lambda m: m["name"])
        self.pip_cache_claim = self.pip_cache.metadata.apply(lambda m: m["name"])
        self.register_outputs({"storage_class": self.storage_class, "dataset_claim": self.dataset_claim,
                               "pip_cache_claim": self.pip_cache_claim})


def _claim_spec(storage_class: str, size: str) -> dict[str, Any]:
    return {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}}}
