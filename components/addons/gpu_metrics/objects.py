"""The GPU metrics' objects on the workload cluster: a namespace and two ConfigMaps.

Declared as plain objects, not as the VKS Prometheus and Grafana packages: the packages' names,
versions and data-values schema for VKS were not found at VMware's source, so the program does not
install them (docs/deploy.md, "GPU metrics"). The ConfigMaps carry the files the cluster's
Prometheus and Grafana load: the recording rules, the scrape jobs (a configuration to merge) and
the dashboard, labelled ``grafana_dashboard: "1"`` for a Grafana that collects dashboards from
labelled ConfigMaps.
"""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.addons import gpu_metrics
from components.kube.pod_security import GuestNamespace, GuestNamespaceArgs

NAMESPACE = "gpu-metrics"
RULES_CONFIGMAP = "dask-tkg-gpu-rules"
DASHBOARD_CONFIGMAP = "dask-tkg-gpu-dashboard"
DASHBOARD_LABEL = {"grafana_dashboard": "1"}


@dataclass(frozen=True)
class GpuMetricsArgs:
    enforces_psp: bool


class GpuMetrics(pulumi.ComponentResource):
    namespace_name: pulumi.Output[str]

    def __init__(self, name: str, args: GpuMetricsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:addons:GpuMetrics", name, None, opts)
        self.namespace = GuestNamespace(
            f"{name}-namespace", GuestNamespaceArgs(NAMESPACE, "restricted", args.enforces_psp),
            pulumi.ResourceOptions(parent=self))
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        labels = {"app.kubernetes.io/managed-by": "dask-tkg", "app.kubernetes.io/part-of": "gpu-metrics"}
        self.rules = k8s.core.v1.ConfigMap(
            f"{name}-rules", metadata={"name": RULES_CONFIGMAP, "namespace": NAMESPACE, "labels": labels},
            data={gpu_metrics.RULES_KEY: gpu_metrics.rules_text(),
                  gpu_metrics.PROMETHEUS_KEY: gpu_metrics.prometheus_text()}, opts=in_ns)
        self.dashboard = k8s.core.v1.ConfigMap(
            f"{name}-dashboard",
            metadata={"name": DASHBOARD_CONFIGMAP, "namespace": NAMESPACE, "labels": {**labels, **DASHBOARD_LABEL}},
            data={gpu_metrics.DASHBOARD_KEY: gpu_metrics.dashboard_text()}, opts=in_ns)
        self.namespace_name = self.namespace.name
        self.register_outputs({"namespace_name": self.namespace_name})
