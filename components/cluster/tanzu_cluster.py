"""The TanzuKubernetesCluster in the Supervisor namespace, and its admin kubeconfig.

``pulumi up`` waits until the cluster is ready (``pulumi.com/waitFor`` on the custom
resource), then reads Secret ``<cluster>-kubeconfig`` from the Supervisor namespace; the
kubeconfig stays a secret and feeds the guest-cluster provider built in ``__main__``.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.cluster.manifests import kubeconfig_secret_name, tkc_manifest
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
        manifest = tkc_manifest(args.spec, namespace="")
        timeout = f"{args.spec.ready_timeout_minutes}m"
        self.tkc = k8s.apiextensions.CustomResource(
            f"{name}-tkc",
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
        # The id only resolves once the TKC exists, so a preview of a new cluster does not
        # try to read a Secret that cannot exist yet.
        secret_id = pulumi.Output.all(self.tkc.id, args.namespace).apply(lambda a: f"{a[1]}/{secret_name}")
        self.kubeconfig_secret = k8s.core.v1.Secret.get(
            f"{name}-kubeconfig", secret_id, opts=pulumi.ResourceOptions(parent=self, depends_on=[self.tkc]))
        self.kubeconfig = pulumi.Output.secret(
            self.kubeconfig_secret.data.apply(lambda data: base64.b64decode(data["value"]).decode()))
        self.name = self.tkc.metadata.apply(lambda m: m["name"])
        self.register_outputs({"name": self.name, "kubeconfig": self.kubeconfig})
