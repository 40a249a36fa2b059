"""The workload cluster's control plane and class: an odd number of control-plane nodes, and
on one of VMware's ClusterClasses the variables the class requires; for a TanzuKubernetesCluster
and a Cluster API ``Cluster`` alike (``clusters.read``).

- Control plane: the TKG Service builds it as a Cluster API KubeadmControlPlane (the
  ``tanzukubernetescluster`` class's ``controlPlane.ref``: vSphere 8 TKG Service docs,
  GUID-69E52B31), whose admission webhook refuses replicas that are not positive or, with the
  stacked etcd it runs, even (cluster-api ``controlplane/kubeadm/internal/webhooks/
  kubeadm_control_plane.go``: "cannot be less than or equal to 0", "cannot be an even number
  when etcd is stacked"). Found at preview rather than when ``pulumi up`` meets the webhook
  (or a cluster that never scales); the program's own setting allows 1 or 3.
- Class: VMware's classes (``tanzukubernetescluster``, ``builtin-generic-v3.x.y``) require the
  ``vmClass`` and ``storageClass`` variables (GUID-69E52B31); a Cluster without one is refused
  by the class's variable schema. A site's own class is not judged on its variables.
"""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from .clusters import REQUIRED_VARIABLES, VMWARE_CLASS
from .clusters import read as read_cluster
from .common import count


def _check_shape(args: ResourceValidationArgs, report: ReportViolation) -> None:
    cluster = read_cluster(args.resource_type, args.props, args.name)
    if cluster is None:
        return
    replicas = cluster.control_plane_replicas
    number = count(replicas)
    if replicas is not None and (number is None or number < 1 or number % 2 == 0):
        report(f"{cluster.label}: {cluster.replicas_at} is {replicas!r}: the control plane's etcd needs an odd number "
               "of nodes, at least 1 (Cluster API's KubeadmControlPlane refuses 0 and even numbers with stacked etcd). "
               "Fix: 1, or 3 for a control plane that survives the loss of a node (stack setting "
               "controlPlaneReplicas).", args.urn)
    if cluster.kind != "Cluster" or not VMWARE_CLASS.match(str(cluster.class_name)):
        return
    for name in REQUIRED_VARIABLES:
        if cluster.variables.get(name) in (None, ""):
            report(f"{cluster.label}: spec.topology.variables sets no {name!r} variable, which ClusterClass "
                   f"{cluster.class_name!r} requires: the API server refuses the Cluster. Fix: set {name} in "
                   "spec.topology.variables (the stack settings controlPlaneVmClass and controlPlaneStorageClass "
                   "give the program's).", args.urn)


workload_cluster_shape = ResourceValidationPolicy(
    name="workload-cluster-shape",
    description="The workload cluster (a TanzuKubernetesCluster or a Cluster API Cluster) has an odd number of "
                "control-plane nodes, at least 1, and a Cluster on one of VMware's ClusterClasses sets the vmClass "
                "and storageClass variables the class requires.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_check_shape,
)

POLICIES = [workload_cluster_shape]
