"""The variables a Cluster API Cluster sets on its ClusterClass, from the stack's cluster settings,
and their check against the class (``cluster_classes``).

They live with the settings, not with the manifest builder (``components/cluster/manifests.py``,
which puts them into the Cluster), because the settings' checks test them at preview: a value
the class does not take names its setting before anything is created.
"""
from __future__ import annotations

from typing import Any

import components.facts.cluster_classes as cluster_classes
from components.settings.model import CLUSTER_API, ClusterSpec, NodePool


def cluster_variables(spec: ClusterSpec, structured: bool) -> list[dict[str, Any]]:
    """The Cluster's cluster-wide variables in the generation its class takes."""
    default_class = spec.control_plane.storage_class
    classes = sorted({default_class} | {p.storage_class for p in spec.node_pools})
    pss = _pod_security(spec.pod_security_default)
    variables: list[dict[str, Any]] = [{"name": "vmClass", "value": spec.control_plane.vm_class},
                 {"name": "storageClass", "value": default_class}]
    if structured:
        variables += [
            {"name": "vsphereOptions", "value": {"persistentVolumes": {
                "availableStorageClasses": classes, "defaultStorageClass": default_class}}},
        ]
        if pss:
            variables.append({"name": "kubernetes", "value": {"security": {"podSecurityStandard": pss}}})
    else:
        variables += [{"name": "defaultStorageClass", "value": default_class},
                      {"name": "storageClasses", "value": classes}]
        if pss:
            variables.append({"name": "podSecurityStandard", "value": pss})
    return variables


def _pod_security(enforce: str) -> dict[str, str]:
    """The cluster-wide Pod Security default (namespaces this program creates carry their own
    labels, which win): ``enforce`` as set, audit and warn at restricted."""
    if not enforce:
        return {}
    return {"enforce": enforce, "enforceVersion": "latest", "audit": "restricted", "auditVersion": "latest",
            "warn": "restricted", "warnVersion": "latest"}


def pool_overrides(pool: NodePool, spec: ClusterSpec, structured: bool) -> list[dict[str, Any]]:
    """A node pool's variable overrides: its VM class, storage class, labels and volumes."""
    overrides: list[dict[str, Any]] = [{"name": "vmClass", "value": pool.vm_class},
                                       {"name": "storageClass", "value": pool.storage_class}]
    volumes = [{"name": v.name, "mountPath": v.mount_path, "storageClass": pool.storage_class,
                "capacity": v.capacity if structured else {"storage": v.capacity}} for v in spec.volumes]
    if structured:
        overrides += [{"name": "node", "value": {"labels": dict(pool.labels)}},
                      {"name": "volumes", "value": volumes}]
    else:
        overrides += [
            {"name": "nodePoolLabels", "value": [{"key": k, "value": v} for k, v in sorted(pool.labels.items())]},
            {"name": "nodePoolVolumes", "value": volumes},
        ]
    return overrides


def class_variable_problems(spec: ClusterSpec) -> list[tuple[str, str]]:
    """(setting, problem) for every variable the Cluster would set that its class does not
    take in that shape; empty for a TanzuKubernetesCluster."""
    if spec.api_version != CLUSTER_API:
        return []
    structured = cluster_classes.generation(spec.cluster_class).structured
    problems = [("clusterClass", p) for p in cluster_classes.check_variables(
        spec.cluster_class, cluster_variables(spec, structured), "topology.variables",
        cluster_classes.REQUIRED_VARIABLES)]
    for i, pool in enumerate(spec.node_pools):
        problems += [(f"nodePools[{i}]", p) for p in cluster_classes.check_variables(
            spec.cluster_class, pool_overrides(pool, spec, structured),
            f"machineDeployments[{pool.name}].variables.overrides")]
    return problems
