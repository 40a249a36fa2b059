"""The vCenter privileges the program's account needs, per component and per entity.

Each privilege is the one vCenter itself checks for the calls a component makes, from
VMware's own API definitions:

* SOAP (SPBM, vSAN): the ``privId`` pyVmomi 9.1.1 records for each method and parameter
  (``pyVmomi/_typeinfo_pbm.py``: PbmCreate/PbmUpdate/PbmDelete ``StorageProfile.Update``,
  PbmQueryProfile/PbmRetrieveContent ``StorageProfile.View``; ``_typeinfo_vsanhealth.py``:
  VsanCreateFileShare/VsanReconfigureFileShare/VsanClusterRemoveShare ``Host.Config.Storage``
  on the cluster, VsanClusterQueryFileShares/VsanClusterQueryFsDomains ``System.Read``).
* REST: the privileges the vSphere Automation API reference names for each operation
  (Unauthorized/403 "if the user does not have ... privilege"):
  namespace-management/virtual-machine-classes create/update/delete
  ``VirtualMachineClasses.Manage``; namespaces/instances create/update/delete and their
  access entries ``Namespaces.Configure``; namespace-management/clusters enable/update
  (the Supervisor and its TKR library) ``Namespaces.Manage``, get ``System.Read``;
  content/subscribed-library create ``ContentLibrary.CreateSubscribedLibrary`` plus
  ``Datastore.AllocateSpace`` on the backing datastore, update/delete
  ``ContentLibrary.UpdateSubscribedLibrary``/``ContentLibrary.DeleteSubscribedLibrary``.

Global objects (VM classes, storage policies, content libraries) are checked on the root
folder; the Supervisor, its namespace and the file share on the compute cluster.
"""
from __future__ import annotations

from dataclasses import dataclass

ROOT = "root"  # the vCenter root folder: where global permissions show
CLUSTER = "cluster"
DATASTORE = "datastore"
ENTITY_LABELS = {ROOT: "the vCenter root folder", CLUSTER: "compute cluster", DATASTORE: "datastore"}


@dataclass(frozen=True)
class Need:
    """Privileges one component needs on one entity."""

    component: str
    entity: str  # ROOT | CLUSTER | DATASTORE
    privileges: tuple[str, ...]


def required(vsphere_version: int, supervisor_mode: str, set_tkr_library: bool, creates_library: bool,
             custom_vm_classes: bool, vsan_file_share: bool) -> list[Need]:
    """What the account needs for the components these settings build."""
    needs = [
        Need("inventory look-ups and the vGPU check", ROOT, ("System.Read",)),
        Need("storage policies (SPBM)", ROOT, ("StorageProfile.Update", "StorageProfile.View")),
        Need("Supervisor namespace", CLUSTER, ("Namespaces.Configure",)),
    ]
    if custom_vm_classes:
        needs.append(Need("VM classes", ROOT, ("VirtualMachineClasses.Manage",)))
    if creates_library:
        needs.append(Need("TKR content library", ROOT, (
            "ContentLibrary.CreateSubscribedLibrary", "ContentLibrary.UpdateSubscribedLibrary",
            "ContentLibrary.DeleteSubscribedLibrary")))
        needs.append(Need("TKR content library", DATASTORE, ("Datastore.AllocateSpace",)))
    if supervisor_mode == "create" or set_tkr_library:
        needs.append(Need("Supervisor (enable, or set its TKR library)", CLUSTER, ("Namespaces.Manage",)))
    if vsan_file_share:
        needs.append(Need("vSAN file share", CLUSTER, ("Host.Config.Storage",)))
    return needs


def by_entity(needs: list[Need]) -> dict[str, dict[str, list[str]]]:
    """``{entity: {privilege: [components]}}``, the shape the check asks vCenter about."""
    out: dict[str, dict[str, list[str]]] = {}
    for need in needs:
        for privilege in need.privileges:
            out.setdefault(need.entity, {}).setdefault(privilege, []).append(need.component)
    return out
