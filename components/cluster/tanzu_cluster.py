"""The workload cluster in the Supervisor namespace (a TanzuKubernetesCluster, or a Cluster
API Cluster on a VMware ClusterClass), and its admin kubeconfig.

``pulumi up`` waits until the cluster is ready (``pulumi.com/waitFor`` on the custom
resource), then reads Secret ``<cluster>-kubeconfig`` from the Supervisor namespace (key
``value``: the TKG Service writes it for a TanzuKubernetesCluster, Cluster API for a
Cluster); the kubeconfig stays a secret and feeds the guest-cluster provider built in
``__main__``.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.cluster.manifests import cluster_manifest, kubeconfig_secret_name
from components.settings.model import ClusterSpec


@dataclass(frozen=True)
class TanzuClusterArgs:
    spec: ClusterSpec
    namespace: pulumi.Input[str]  # the Supervisor namespace, from the vSphere layer


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
        self.register_outputs({"name": self.name, "kubeconfig": self.kubeconfig})
