"""The workload cluster in the Supervisor namespace (a TanzuKubernetesCluster, or a Cluster
API Cluster on a VMware ClusterClass), and its admin kubeconfig.

``pulumi up`` waits until the cluster is ready (``pulumi.com/waitFor`` on the custom
resource), then reads Secret ``<cluster>-kubeconfig`` from the Supervisor namespace (key
``value``: the TKG Service writes it for a TanzuKubernetesCluster, Cluster API for a
Cluster); the kubeconfig stays a secret and feeds the guest-cluster provider built in
``__main__``.

For a Cluster API Cluster it then waits for the GPU pools too (``GpuPoolsReady``): the
Cluster's Ready condition does not wait for the workers' machines, and the GPU operator and
Dask need the vGPU nodes. ``ready_for_workloads`` is what those depend on.
"""
from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.cluster.manifests import cluster_manifest, kubeconfig_secret_name
from components.cluster.providers.pool_readiness import GpuPoolsReady
from components.settings.model import CLUSTER_API, ClusterSpec


@dataclass(frozen=True)
class TanzuClusterArgs:
    spec: ClusterSpec
    namespace: pulumi.Input[str]  # the Supervisor namespace, from the vSphere layer
    # the kubeconfig of the Cluster's provider (secret): a Cluster API Cluster's GPU pools are read with it
    supervisor_kubeconfig: pulumi.Input[str] | None = None


class TanzuCluster(pulumi.ComponentResource):
    kubeconfig: pulumi.Output[str]  # secret
    name: pulumi.Output[str]

    def __init__(self, name: str, args: TanzuClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:cluster:TanzuCluster", name, None, opts)
        manifest = cluster_manifest(args.spec, namespace="")
        timeout = f"{args.spec.ready_timeout_minutes}m"
        suffix = "tkc" if manifest["kind"] == "TanzuKubernetesCluster" else "cluster"
        self.tkc = k8s.apiextensions.CustomResource(
            f"{name}-{suffix}",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata={**manifest["metadata"], "namespace": args.namespace},
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(
                parent=self,
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
            ),
        )
        secret_name = kubeconfig_secret_name(args.spec.name)
        # The id only resolves once the cluster exists, so a preview of a new cluster does not
        # try to read a Secret that cannot exist yet.
        secret_id = pulumi.Output.all(self.tkc.id, args.namespace).apply(lambda a: f"{a[1]}/{secret_name}")
        self.kubeconfig_secret = k8s.core.v1.Secret.get(
            f"{name}-kubeconfig", secret_id, opts=pulumi.ResourceOptions(parent=self, depends_on=[self.tkc]))
        self.kubeconfig = pulumi.Output.secret(
            self.kubeconfig_secret.data.apply(lambda data: base64.b64decode(data["value"]).decode()))
        self.name = self.tkc.metadata.apply(lambda m: m["name"])
        self.gpu_pools_ready = self._gpu_pools_ready(name, args, manifest)
        self.ready_for_workloads = (self.gpu_pools_ready,) if self.gpu_pools_ready else ()
        self.register_outputs({"name": self.name, "kubeconfig": self.kubeconfig})

    def _gpu_pools_ready(self, name: str, args: TanzuClusterArgs, manifest: dict[str, Any]) -> GpuPoolsReady | None:
        """The wait for the GPU pools of a Cluster API Cluster, created once the Cluster is Ready."""
        spec = args.spec
        if spec.api_version != CLUSTER_API or not spec.pools("gpu") or args.supervisor_kubeconfig is None:
            return None
        return GpuPoolsReady(
            f"{name}-gpu-pools-ready", pulumi.ResourceOptions(parent=self, depends_on=[self.tkc]),
            kubeconfig=args.supervisor_kubeconfig, namespace=args.namespace, cluster_name=self.name,
            pools={p.name: p.replicas for p in spec.pools("gpu")}, revision=gpu_pools_revision(manifest, spec),
            timeout_seconds=spec.gpu_pools_ready_timeout_minutes * 60)


def gpu_pools_revision(manifest: dict[str, Any], spec: ClusterSpec) -> str:
    """A digest of what decides the GPU pools' machines (the release, each GPU pool's
    machineDeployment): when it changes, ``pulumi up`` waits for them again."""
    topology = manifest["spec"]["topology"]
    gpu = {p.name for p in spec.pools("gpu")}
    pools = [d for d in topology["workers"]["machineDeployments"] if d["name"] in gpu]
    text = json.dumps({"version": topology["version"], "pools": pools}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
