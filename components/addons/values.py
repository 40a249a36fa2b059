"""Pure builders of the add-ons' Helm values (checked in unit tests without an engine)."""
from __future__ import annotations

from typing import Any

from components.facts.addon_facts import NFS_IMAGE_REGISTRY, gpu_operator_facts
from components.settings.model import GpuOperatorSpec, StorageSpec

LICENSING_NAME = "licensing-config"
NGC_SECRET_NAME = "ngc-secret"  # noqa: S105 (the Secret's name, not a password)
# The image chart 4.0.18 runs, pinned by digest as well as tag (the chart's template writes
# ``repository:tag``, so the tag carries it): the digest registry.k8s.io serves v4.0.2 under, from
# the image promoter's manifest (kubernetes/k8s.io, registry.k8s.io/images/
# k8s-staging-sig-storage/images.yaml at 0279c5e0: ``nfs-subdir-external-provisioner``,
# "sha256:63d5e045...": ["v4.0.2"]), the multi-platform index the tag names.
NFS_PROVISIONER_DIGEST = "sha256:63d5e04551ec8b5aae83b6f35938ca5ddc50a88d85492d9731810c31591fa4c9"
NFS_PROVISIONER_IMAGE = (f"{NFS_IMAGE_REGISTRY.what}/sig-storage/nfs-subdir-external-provisioner",
                         f"v4.0.2@{NFS_PROVISIONER_DIGEST}")

# Values keys the charts' templates read but their values.yaml does not declare (the render
# tests check every emitted key against the chart's own values.yaml plus these): key -> the
# template expression that reads it. None needed today.
GPU_OPERATOR_KEYS_NOT_IN_VALUES_YAML: dict[str, str] = {}
NFS_PROVISIONER_KEYS_NOT_IN_VALUES_YAML: dict[str, str] = {}


def licensing_uses_secret(spec: GpuOperatorSpec) -> bool:
    """GPU operator 25.10 and later take the vGPU licensing files from a Secret, not a ConfigMap."""
    return spec.version_tuple >= (25, 10, 0)


def gridd_conf(spec: GpuOperatorSpec) -> str:
    return f"# NVIDIA vGPU licensing (written by dask-tkg)\nFeatureType={spec.feature_type}\n"


def gpu_operator_values(spec: GpuOperatorSpec, enforces_psp: bool) -> dict[str, Any]:
    """Values for the NVAIE GPU operator chart on vGPU guests: NVIDIA's vGPU guest driver
    image from NGC (the public data-center driver does not probe on a vGPU VM), pulled with
    the NGC secret, licensed through NLS (NVAIE 1.1 and later license through NLS only).

    ``nlsEnabled`` is always true: before it, the operator mounts only gridd.conf and never
    the client configuration token (``components/facts/addon_facts.py``), and gridd.conf without a
    legacy ServerAddress licenses nothing."""
    licensing: dict[str, Any]
    if licensing_uses_secret(spec):
        licensing = {"secretName": LICENSING_NAME, "nlsEnabled": True}
    else:
        licensing = {"configMapName": LICENSING_NAME, "nlsEnabled": True}
    values: dict[str, Any] = {
        "driver": {
            "enabled": True,
            "repository": spec.driver_repository,
            "image": spec.driver_image,
            "version": spec.driver_version,
            "imagePullSecrets": [NGC_SECRET_NAME],
            "licensingConfig": licensing,
        },
    }
    facts = gpu_operator_facts(spec.version)
    if facts is None or facts.has_default_runtime:  # TKG nodes run containerd
        values["operator"] = {"defaultRuntime": "containerd"}
    if facts is not None and facts.devices_through_cdi:
        values.update(devices_only_from_the_plugin())
    if enforces_psp:
        values["psp"] = {"enabled": True}
    return values


UNPRIVILEGED_ENVVAR = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"


def devices_only_from_the_plugin() -> dict[str, Any]:
    """A container sees the GPUs the device plugin allocated to it and no other: CDI on (the
    plugin's allocation reaches the runtime as CDI devices), and the toolkit told to ignore
    ``NVIDIA_VISIBLE_DEVICES`` in unprivileged containers, which would otherwise open every GPU
    of the node to a pod that requests none (CUDA images set it to ``all``; NVIDIA, "Preventing
    unprivileged access to GPUs in Kubernetes"). Facts: ``addon_facts`` ``devices_source``."""
    return {"cdi": {"enabled": True}, "toolkit": {"env": [{"name": UNPRIVILEGED_ENVVAR, "value": "false"}]}}


def nfs_provisioner_values(storage: StorageSpec, nfs_server: str, nfs_path: str, enforces_psp: bool) -> dict[str, Any]:
    """Values for nfs-subdir-external-provisioner: one RWX StorageClass over the share.

    Reclaim policy Retain: deleting a claim must never delete the dataset behind it. No
    volume expansion: the provisioner cannot resize (``facts.NFS_NO_EXPANSION``), so a resized
    claim would be accepted and never grow.
    """
    repository, tag = NFS_PROVISIONER_IMAGE
    return {
        "image": {"repository": repository, "tag": tag},
        "nfs": {"server": nfs_server, "path": nfs_path, "mountOptions": ["nfsvers=4.1"]},
        "storageClass": {
            "name": storage.storage_class,
            "accessModes": "ReadWriteMany",
            "reclaimPolicy": "Retain",
            "archiveOnDelete": True,
            "defaultClass": False,
            "allowVolumeExpansion": False,
        },
        "podSecurityPolicy": {"enabled": enforces_psp},
    }
