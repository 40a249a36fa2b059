"""The Dask Helm release: scheduler, GPU workers and Jupyter in one image, with mutual TLS,
a generated Jupyter password and, where asked, guarded external Services."""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.artifacts.charts import verified_chart
from components.dask import chart, podspec, post_render
from components.dask.exposure import ExposureArgs, external_host, external_service, guard_namespace
from components.dask.network_policy import DaskPodSelectors, NamespaceNetwork, dask_network_policies
from components.dask.jupyter_password import JupyterPassword
from components.dask.tls import DaskTls, DaskTlsArgs
from components.dask.values import (DaskValuesInputs, dask_values, dashboard_url, fullname, jupyter_url,
                                    scheduler_host, service_names)
from components.dask import facts
from components.settings.placement import DaskPlacement, placement_pool
from components.settings.model import POOL_ROLE_LABEL, DaskSpec, Settings

RELEASE = "dask"


@dataclass(frozen=True)
class DaskReleaseArgs:
    dask: DaskSpec
    placement: DaskPlacement
    dataset_mount: str
    namespace: pulumi.Input[str]
    dataset_claim: pulumi.Input[str]
    pip_cache_claim: pulumi.Input[str]
    network: NamespaceNetwork  # what the namespace's NetworkPolicies admit and allow (network_settings)
    enforces_psp: bool = False  # the cluster admits pods by PodSecurityPolicy (up to 1.24)
    # What must exist before the release installs (GPU operator, storage, data Job):
    # children do not inherit a component's depends_on, so it goes on the release itself.
    depends_on: tuple[pulumi.Resource, ...] = ()


class DaskRelease(pulumi.ComponentResource):
    scheduler_address: pulumi.Output[str]
    dashboard_url: pulumi.Output[str]
    jupyter_url: pulumi.Output[str]
    jupyter_password: pulumi.Output[str]  # secret
    tls_ca: pulumi.Output[str]
    tls_client_cert: pulumi.Output[str]  # secret
    tls_client_key: pulumi.Output[str]  # secret

    def __init__(self, name: str, args: DaskReleaseArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:dask:DaskRelease", name, None, opts)
        d = args.dask
        child = pulumi.ResourceOptions(parent=self)
        prefix = fullname(RELEASE)
        namespace = pulumi.Output.from_input(args.namespace)
        for warning in args.placement.warnings:
            pulumi.log.warn(warning, resource=self)
        scripts = facts.chart_script_warning(d.dask_version)
        if scripts:
            pulumi.log.warn(scripts, resource=self)

        self.password = JupyterPassword(f"{name}-jupyter", child)
        # The exposed Services first: their LoadBalancer addresses go into the certificates.
        self.external: dict[str, k8s.core.v1.Service] = self._external_services(name, args, child)
        tls_secret = podspec.tls_secret_name(prefix) if d.tls else None
        self.tls = None
        if d.tls:
            self.tls = DaskTls(f"{name}-tls", DaskTlsArgs(
                namespace=args.namespace, secret_name=tls_secret,
                scheduler_dns_names=namespace.apply(lambda ns: service_names(f"{prefix}-scheduler", ns)),
                scheduler_external_host=self._external_host("scheduler"),
                jupyter_dns_names=(namespace.apply(lambda ns: service_names(f"{prefix}-jupyter", ns))
                                   if d.jupyter.enabled else None),
                jupyter_external_host=self._external_host("jupyter")), child)

        def build(a: list) -> dict:
            ns, dataset, pip_cache, password_hash = a
            return dask_values(DaskValuesInputs(
                dask=d, namespace=ns, release=RELEASE,
                scheduler_selector=args.placement.scheduler_selector,
                jupyter_selector=args.placement.jupyter_selector,
                worker_selector=args.placement.worker_selector,
                dataset_claim=dataset, pip_cache_claim=pip_cache,
                dataset_mount=args.dataset_mount,
                jupyter_password_hash=password_hash, tls_secret=tls_secret, enforces_psp=args.enforces_psp,
            ))

        values = pulumi.Output.all(namespace, args.dataset_claim, args.pip_cache_claim, self.password.hash).apply(build)
        # The namespace's policies before the pods: they start confined.
        selectors = DaskPodSelectors.for_helm(RELEASE)
        self.network_policies = guard_namespace(
            name, namespace, lambda ns: dask_network_policies(
                ns, selectors, operator_namespace=None, network=args.network, name_prefix=RELEASE), RELEASE, child)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE,
            chart=verified_chart(d.chart_pin),  # the pinned archive of the dask chart's chart_version
            version=d.chart_version,
            namespace=args.namespace,
            values=values, postrender=str(post_render.LAUNCHER),
            timeout=900,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[*args.depends_on, *([self.tls] if self.tls else []), *self.network_policies]),
        )
        scheme = "tls" if d.tls else "tcp"
        scheduler_dns = namespace.apply(lambda ns: scheduler_host(RELEASE, ns))
        self.scheduler_address = scheduler_dns.apply(lambda h: f"{scheme}://{h}:{chart.SCHEDULER_PORT}")
        self.dashboard_url = namespace.apply(lambda ns: dashboard_url(RELEASE, ns, d.tls))
        self.jupyter_url = namespace.apply(lambda ns: jupyter_url(RELEASE, ns, d.tls) if d.jupyter.enabled else "")
        self._external_addresses(d, scheme)

        self.jupyter_password = self.password.password
        self.tls_ca = self.tls.ca_cert if self.tls else pulumi.Output.from_input("")
        self.tls_client_cert = self.tls.client_cert if self.tls else pulumi.Output.secret("")
        self.tls_client_key = self.tls.client_key if self.tls else pulumi.Output.secret("")
        self.register_outputs({
            "scheduler_address": self.scheduler_address, "dashboard_url": self.dashboard_url,
            "jupyter_url": self.jupyter_url, "jupyter_password": self.jupyter_password,
        })

    def _external_services(self, name: str, args: DaskReleaseArgs,
                           child: pulumi.ResourceOptions) -> dict[str, k8s.core.v1.Service]:
        """Guarded external Services where asked. Before the release: the provider reports a
        LoadBalancer Service created once it has an address and its Endpoints settled, pods
        or none (pulumi-kubernetes provider/pkg/await/service.go, ``checkAndLogStatus``), and
        the certificates the pods mount name that address."""
        d = args.dask
        external = {}
        if d.scheduler.service_type != "ClusterIP":
            external["scheduler"] = external_service(f"{name}-scheduler-external", ExposureArgs(
                namespace=args.namespace, release=RELEASE, component="scheduler",
                service_type=d.scheduler.service_type,
                ports=(("scheduler", chart.SCHEDULER_PORT, 8786), ("dashboard", chart.DASHBOARD_PORT, 8787)),
                source_ranges=d.lb_source_ranges), child)
        if d.jupyter.enabled and d.jupyter.service_type != "ClusterIP":
            external["jupyter"] = external_service(f"{name}-jupyter-external", ExposureArgs(
                namespace=args.namespace, release=RELEASE, component="jupyter",
                service_type=d.jupyter.service_type, ports=(("jupyter", chart.JUPYTER_PORT, chart.JUPYTER_CONTAINER_PORT),),
                source_ranges=d.lb_source_ranges), child)
        return external

    def _external_host(self, component: str) -> pulumi.Input[str]:
        """A LoadBalancer's address ("" until assigned, for NodePort, or not exposed)."""
        return external_host(self.external[component]) if component in self.external else ""

    def _external_addresses(self, d: DaskSpec, scheme: str) -> None:
        """The addresses follow a LoadBalancer's, with the scheme its server speaks."""
        web = "https" if d.tls else "http"
        if d.scheduler.service_type == "LoadBalancer":
            host = self._external_host("scheduler")
            self.scheduler_address = pulumi.Output.all(host, self.scheduler_address).apply(
                lambda a: f"{scheme}://{a[0]}:{chart.SCHEDULER_PORT}" if a[0] else a[1])
            self.dashboard_url = pulumi.Output.all(host, self.dashboard_url).apply(
                lambda a: f"{web}://{a[0]}:{chart.DASHBOARD_PORT}" if a[0] else a[1])
        if "jupyter" in self.external and d.jupyter.service_type == "LoadBalancer":
            self.jupyter_url = pulumi.Output.all(self._external_host("jupyter"), self.jupyter_url).apply(
                lambda a: f"{web}://{a[0]}:{chart.JUPYTER_PORT}" if a[0] else a[1])


def _selector(s: Settings, role: str) -> dict[str, str]:
    pool = placement_pool(s, role)
    return {POOL_ROLE_LABEL: pool.role} if pool else {}

