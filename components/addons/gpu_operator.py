"""The NVIDIA GPU operator with vGPU licensing and the NGC pull secret (what the paper's
install-gpu-operator.sh did)."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.addons.values import (
    LICENSING_NAME,
    NGC_SECRET_NAME,
    gpu_operator_values,
    gridd_conf,
    licensing_uses_secret,
)
from components.artifacts.charts import verified_chart
from components.kube.pod_security import GuestNamespace, GuestNamespaceArgs
from components.settings.model import GpuOperatorSpec

NAMESPACE = "gpu-operator"


def docker_config(registry: str, api_key: str) -> str:
    """A dockerconfigjson for NGC: user ``$oauthtoken``, password the API key."""
    auth = base64.b64encode(f"$oauthtoken:{api_key}".encode()).decode()
    return json.dumps({"auths": {registry: {"username": "$oauthtoken", "password": api_key, "auth": auth}}})


@dataclass(frozen=True)
class GpuOperatorArgs:
    spec: GpuOperatorSpec
    enforces_psp: bool


class GpuOperator(pulumi.ComponentResource):
    release_status: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:addons:GpuOperator", name, None, opts)
        spec = args.spec
        child = pulumi.ResourceOptions(parent=self)
        self.namespace = GuestNamespace(
            f"{name}-namespace", GuestNamespaceArgs(NAMESPACE, "privileged", args.enforces_psp), child)
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        token = pulumi.Output.secret(spec.license_token)
        licensing_data = {"gridd.conf": gridd_conf(spec), "client_configuration_token.tok": token}
        metadata = {"name": LICENSING_NAME, "namespace": NAMESPACE}
        if licensing_uses_secret(spec):
            self.licensing = k8s.core.v1.Secret(f"{name}-licensing", metadata=metadata,
                                                string_data=licensing_data, opts=in_ns)
        else:
            # Chart versions before 25.10 read the token only from a ConfigMap.
            self.licensing = k8s.core.v1.ConfigMap(f"{name}-licensing", metadata=metadata,
                                                   data=licensing_data, opts=in_ns)
        api_key = pulumi.Output.secret(spec.ngc_api_key)
        self.pull_secret = k8s.core.v1.Secret(
            f"{name}-ngc",
            metadata={"name": NGC_SECRET_NAME, "namespace": NAMESPACE},
            type="kubernetes.io/dockerconfigjson",
            string_data={".dockerconfigjson": api_key.apply(lambda key: docker_config(spec.ngc_registry, key))},
            opts=in_ns,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="gpu-operator",
            chart=verified_chart(spec.chart_pin),  # the pinned archive of chart_repo/chart/version
            version=spec.version,
            namespace=NAMESPACE,
            values=gpu_operator_values(spec, args.enforces_psp),
            timeout=1200,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.licensing, self.pull_secret]),
        )
        self.release_status = self.release.status
        self.register_outputs({"release_status": self.release_status})
