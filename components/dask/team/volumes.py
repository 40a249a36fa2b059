"""The dataset and the prepared environment in a person's namespace, read-only: for each shared
claim (``external-nfs-pvc``, ``external-nfs-pip-cache-pvc`` of the Dask namespace) a
PersistentVolume made from the volume that claim is bound to, and a claim of the same name in
the person's namespace bound to it. Pure builders on the bound volume's manifest
(components/dask/team/person_space.py reads it from the cluster).

Why a volume of the program's and not a claim of the storage class: a claim of the class
would get a new, empty directory (nfs-subdir) or file share (vSphere CSI), not the data. The
shared volume's source is what each provisioner wrote:
- nfs-subdir-external-provisioner (``cmd/nfs-subdir-external-provisioner/provisioner.go`` at 0077874,
  ``Provision``): ``nfs: {server, path: <share path>/<namespace>-<claim>-<volume>}`` with the
  StorageClass's ``mountOptions``;
- vSphere CSI (kubernetes-sigs/vsphere-csi-driver, ``pkg/csi/service/wcpguest/controller.go``:
  in a guest cluster the handle is the Supervisor's claim, ``<cluster UID>-<volume UID>``):
  ``csi: {driver: csi.vsphere.vmware.com, volumeHandle, volumeAttributes: {type: "vSphere CNS
  File Volume"}}``. Its docs (``docs/book/features/file_volume.md``, "Static Provisioning for
  file volumes") say CNS takes several PersistentVolumes of one file share.
The copy says ``readOnly: true`` in its source, so the kubelet mounts it read-only whatever a
pod asks; access mode ReadOnlyMany; reclaim ``Retain`` (deleting it never touches the data);
no storage class (nothing provisions or deletes it) and a ``claimRef`` to the person's claim,
so no other claim can bind it. A person cannot change a PersistentVolume (cluster-scoped),
nor mount the share otherwise: Pod Security ``restricted`` allows no ``nfs`` volume.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.dask.team.access import LABELS

READ_ONLY_MANY = ["ReadOnlyMany"]
# the external provisioner's mark on a volume it made (sig-storage-lib-external-provisioner,
# csi-provisioner): not carried over, the copy is nobody's to delete
PROVISIONER_IDENTITY = "storage.kubernetes.io/csiProvisionerIdentity"


def volume_name(namespace: str, claim: str) -> str:
    """The copy's (cluster-scoped) name: one per person and claim."""
    return f"{namespace}-{claim}"


def read_only_source(bound: Mapping[str, Any]) -> dict[str, Any]:
    """``nfs`` or ``csi`` of the bound volume's spec, read-only; ValueError for any other."""
    if bound.get("nfs"):
        nfs = bound["nfs"]
        return {"nfs": {"server": nfs["server"], "path": nfs["path"], "readOnly": True}}
    if bound.get("csi"):
        csi = bound["csi"]
        source = {"driver": csi["driver"], "volumeHandle": csi["volumeHandle"], "readOnly": True}
        attributes = {k: v for k, v in (csi.get("volumeAttributes") or {}).items() if k != PROVISIONER_IDENTITY}
        if attributes:
            source["volumeAttributes"] = attributes
        if csi.get("fsType"):
            source["fsType"] = csi["fsType"]
        return {"csi": source}
    raise ValueError(f"the shared volume has neither an nfs nor a csi source: {sorted(bound)}")


def read_only_volume(bound: Mapping[str, Any], namespace: str, claim: str) -> dict[str, Any]:
    """The PersistentVolume of ``namespace``'s claim ``claim``: ``bound`` is the spec of the
    volume the shared claim of that name is bound to."""
    spec: dict[str, Any] = {
        "capacity": {"storage": bound["capacity"]["storage"]},
        "accessModes": READ_ONLY_MANY,
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "",
        "claimRef": {"namespace": namespace, "name": claim},
        **read_only_source(bound),
    }
    if bound.get("mountOptions"):
        spec["mountOptions"] = list(bound["mountOptions"])
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": volume_name(namespace, claim), "labels": dict(LABELS)}, "spec": spec}


def read_only_claim(namespace: str, claim: str, storage: str) -> dict[str, Any]:
    """The person's claim ``claim`` (the shared one's name: the runner's pods name it), bound
    to its volume by name, with no storage class so nothing provisions one."""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": namespace, "labels": dict(LABELS)},
            "spec": {"accessModes": READ_ONLY_MANY, "storageClassName": "", "volumeName": volume_name(namespace, claim),
                     "resources": {"requests": {"storage": storage}}}}
