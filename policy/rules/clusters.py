"""The workload cluster, read one way from either of its APIs, so that every rule checks a
Cluster API ``Cluster`` exactly as it checks a TanzuKubernetesCluster.

- ``TanzuKubernetesCluster`` (run.tanzu.vmware.com v1alpha2, v1alpha3): the control plane and
  each ``spec.topology.nodePools[]`` carry ``vmClass``, ``storageClass``, ``volumes``,
  ``labels`` and a ``tkr.reference.name`` (a pool without one takes the control plane's); v1alpha3
  asks for Ubuntu with the cluster's ``run.tanzu.vmware.com/resolve-os-image`` annotation.
- ``Cluster`` (cluster.x-k8s.io/v1beta1) on a VMware ClusterClass: one release for every node
  (``spec.topology.version``, a VKr; VKS also resolves a short ``v1.33``), the control plane's
  and every pool's default VM class and storage class as the ``topology.variables`` ``vmClass``
  and ``storageClass`` (required by VMware's classes: vSphere 8 TKG Service docs, "Using the
  Cluster v1beta1 API", GUID-69E52B31), each ``workers.machineDeployments[]`` overriding them in
  ``variables.overrides``; labels and volumes in the class's generation of variables (flat:
  ``nodePoolLabels`` key/value lists and ``nodePoolVolumes``; structured, from
  builtin-generic-v3.2.0: ``node.labels`` and ``volumes``; Broadcom KB 404143); Ubuntu asked
  for per pool with the same annotation on the machineDeployment's ``metadata.annotations``
  (the class's own default is ``os-name=photon``: GUID-69E52B31's tanzukubernetescluster class;
  the per-pool annotation as in papivot/tkg-helper-scripts ``tkgs-cluster-class-noaz.yaml``
  @ f3e362ed).

Reading goes through the SDK's proxies: an unknown value raises ``UnknownValueError`` as
any direct read would (the SDK's advisory "can't run policy during preview").
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .common import CAPI_CLUSTER, TKC_TYPES, TKC_V1ALPHA3, as_list, as_map, dig, k8s_name, where

OS_IMAGE_ANNOTATION = "run.tanzu.vmware.com/resolve-os-image"
UNVERSIONED_CLASS = "tanzukubernetescluster"
VMWARE_CLASS = re.compile(rf"^({UNVERSIONED_CLASS}|builtin-generic-v\d+\.\d+\.\d+)$")
REQUIRED_VARIABLES = ("vmClass", "storageClass")  # GUID-69E52B31


@dataclass
class NodeGroup:
    """The control plane or one node pool, with where each of its settings lives."""

    where: str  # "spec.topology.nodePools[0] ('gpu-worker')"
    name: Any
    vm_class: Any
    vm_class_at: str  # where the VM class it runs on is set
    labels: Mapping[str, Any]
    release: Any  # the TKR or VKr name its nodes run
    ubuntu: bool | None  # None: the API has no OS choice to check (v1alpha2)
    ubuntu_fix: str = ""
    storage: list[tuple[str, Any]] = field(default_factory=list)  # (where, storage class)


@dataclass
class WorkloadCluster:
    kind: str  # TanzuKubernetesCluster | Cluster
    label: str  # how messages name it
    control_plane: NodeGroup
    control_plane_replicas: Any
    replicas_at: str
    pools: list[NodeGroup]
    storage: list[tuple[str, Any]]  # cluster-wide storage classes
    release_kind: str  # TKR | VKr
    release_fix: str
    class_name: Any = None  # a Cluster's ClusterClass
    variables: Mapping[str, Any] = field(default_factory=dict)  # a Cluster's topology.variables by name


def read(resource_type: str, props: Mapping[str, Any], resource_name: str) -> WorkloadCluster | None:
    """The workload cluster ``props`` declare, or None for any other resource."""
    if resource_type in TKC_TYPES:
        return _tanzu_cluster(resource_type, props, resource_name)
    if resource_type == CAPI_CLUSTER:
        return _capi_cluster(props, resource_name)
    return None


def _storage(where: str, part: Mapping[str, Any], volumes_key: str = "volumes") -> list[tuple[str, Any]]:
    found = [(f"{where}.storageClass", part.get("storageClass"))]
    found += [(f"{where}.{volumes_key}[{j}].storageClass", as_map(v).get("storageClass"))
              for j, v in enumerate(as_list(part.get(volumes_key)))]
    return found


def _tanzu_cluster(resource_type: str, props: Mapping[str, Any], resource_name: str) -> WorkloadCluster:
    spec = as_map(props.get("spec"))
    topology = as_map(spec.get("topology"))
    control = as_map(topology.get("controlPlane"))
    default_tkr = (dig(control, "tkr", "reference", "name") or dig(spec, "distribution", "fullVersion")
                   or dig(spec, "distribution", "version"))
    ubuntu = None
    if resource_type == TKC_V1ALPHA3:
        ubuntu = "os-name=ubuntu" in str(as_map(dig(props, "metadata", "annotations")).get(OS_IMAGE_ANNOTATION, ""))
    fix = f"annotate the cluster {OS_IMAGE_ANNOTATION}: os-name=ubuntu."

    def group(where: str, part: Mapping[str, Any]) -> NodeGroup:
        return NodeGroup(where, part.get("name"), part.get("vmClass"), where, as_map(part.get("labels")),
                         dig(part, "tkr", "reference", "name") or default_tkr, ubuntu, fix, _storage(where, part))

    pools = [group(f"spec.topology.nodePools[{i}] ({as_map(p).get('name')!r})", as_map(p))
             for i, p in enumerate(as_list(topology.get("nodePools")))]
    storage = [(f"spec.settings.storage.classes[{j}]", c)
               for j, c in enumerate(as_list(dig(spec, "settings", "storage", "classes")))]
    storage.append(("spec.settings.storage.defaultClass", dig(spec, "settings", "storage", "defaultClass")))
    return WorkloadCluster(
        "TanzuKubernetesCluster", where("TanzuKubernetesCluster", k8s_name(props, resource_name), resource_name),
        group("spec.topology.controlPlane", control), control.get("replicas"), "spec.topology.controlPlane.replicas",
        pools, storage, "TKR", "set tkr.reference.name of the pool (or the control plane's) to {minimum} or a later "
        "TKR with vGPU support (stack setting tkr).")


def variables_by_name(variables: Any) -> dict[str, Any]:
    """``[{name, value}]`` as a mapping (the last of a name wins, as the API server's merge)."""
    entries = [as_map(v) for v in as_list(variables)]
    return {entry["name"]: entry.get("value") for entry in entries if isinstance(entry.get("name"), str)}


def _labels(variables: Mapping[str, Any]) -> dict[str, Any]:
    """A pool's labels from the structured ``node.labels`` or the flat ``nodePoolLabels``."""
    labels = dict(as_map(dig(variables.get("node"), "labels")))
    for item in map(as_map, as_list(variables.get("nodePoolLabels"))):
        if isinstance(item.get("key"), str):
            labels[item["key"]] = item.get("value")
    return labels


def _capi_cluster(props: Mapping[str, Any], resource_name: str) -> WorkloadCluster:
    topology = as_map(dig(props, "spec", "topology"))
    cluster_vars = variables_by_name(topology.get("variables"))
    at = "spec.topology.variables"
    version = topology.get("version")
    control = NodeGroup("spec.topology.controlPlane", None, cluster_vars.get("vmClass"),
                        f"{at} vmClass (the control plane's)", {}, version, None,
                        storage=[(f"{at} storageClass", cluster_vars.get("storageClass")),
                                 *_volume_storage(at, cluster_vars, "controlPlaneVolumes")])
    pools = []
    for i, deployment in enumerate(map(as_map, as_list(dig(topology, "workers", "machineDeployments")))):
        own = variables_by_name(dig(deployment, "variables", "overrides"))
        merged = {**cluster_vars, **own}
        where_ = f"spec.topology.workers.machineDeployments[{i}] ({deployment.get('name')!r})"

        def source(key: str, own: Mapping[str, Any] = own, where_: str = where_) -> str:
            return f"{where_} variables.overrides" if key in own else at

        annotation = str(as_map(dig(deployment, "metadata", "annotations")).get(OS_IMAGE_ANNOTATION, ""))
        pools.append(NodeGroup(
            where_, deployment.get("name"), merged.get("vmClass"), f"{source('vmClass')} vmClass",
            _labels(merged), version, "os-name=ubuntu" in annotation,
            f"annotate the pool (spec.topology.workers.machineDeployments[{i}].metadata.annotations) "
            f"{OS_IMAGE_ANNOTATION}: os-name=ubuntu; the class's default is Photon.",
            [(f"{source('storageClass')} storageClass", merged.get("storageClass")),
             *_volume_storage(source("volumes"), merged, "volumes"),
             *_volume_storage(source("nodePoolVolumes"), merged, "nodePoolVolumes")]))
    return WorkloadCluster(
        "Cluster", where("Cluster", k8s_name(props, resource_name), resource_name), control,
        dig(topology, "controlPlane", "replicas"), "spec.topology.controlPlane.replicas", pools,
        _cluster_storage(at, cluster_vars), "VKr",
        "set spec.topology.version to {minimum} or a later release with vGPU support, a VKr on vSphere 8 and 9 "
        "(stack setting tkr).", topology.get("class"), cluster_vars)


def _volume_storage(at: str, variables: Mapping[str, Any], key: str) -> list[tuple[str, Any]]:
    return [(f"{at} {key}[{j}].storageClass", as_map(v).get("storageClass"))
            for j, v in enumerate(as_list(variables.get(key)))]


def _cluster_storage(at: str, variables: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The storage classes a Cluster makes available in it: flat ``defaultStorageClass`` and
    ``storageClasses``; structured ``vsphereOptions.persistentVolumes``."""
    volumes = as_map(dig(variables.get("vsphereOptions"), "persistentVolumes"))
    found = [(f"{at} defaultStorageClass", variables.get("defaultStorageClass"))]
    found += [(f"{at} storageClasses[{j}]", c) for j, c in enumerate(as_list(variables.get("storageClasses")))]
    found.append((f"{at} vsphereOptions.persistentVolumes.defaultStorageClass", volumes.get("defaultStorageClass")))
    found += [(f"{at} vsphereOptions.persistentVolumes.availableStorageClasses[{j}]", c)
              for j, c in enumerate(as_list(volumes.get("availableStorageClasses")))]
    return found
