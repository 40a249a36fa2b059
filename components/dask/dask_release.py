"""The Dask Helm release: scheduler, GPU workers and Jupyter in one image, with mutual TLS,
a generated Jupyter password and, where asked, guarded external Services."""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import components.facts.dask_chart as chart
import components.facts.dask_facts as facts
from components.artifacts.charts import verified_chart
from components.dask import podspec, post_render
from components.dask.backend import DaskBackend, DaskBackendArgs
from components.dask.jupyter_password import JupyterPassword
from components.dask.tls import DaskTls, DaskTlsArgs
from components.dask.values import (
    DaskValuesInputs,
    dashboard_url,
    dask_values,
    fullname,
    jupyter_url,
    scheduler_host,
    service_names,
)
from components.kube.exposure import guard_namespace
from components.kube.network_policy import DaskPodSelectors, dask_network_policies
from components.kube.network_settings import namespace_network
from components.settings.placement import DaskPlacement  # also the name this module gave it before

RELEASE = "dask"


class DaskRelease(DaskBackend):
    """The Helm backend (``daskBackend=helm``, the paper's): the dask chart's release runs the
    scheduler, the GPU workers and Jupyter."""

    TYPE = "dask-tkg:dask:DaskRelease"

    def __init__(self, name: str, args: DaskBackendArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, args, opts)
        if args.environment_job is not None:
            raise ValueError("DaskRelease runs the image as it is: a prepared environment is the operator backend's")
        s, d = args.settings, args.settings.dask
        placement, network = DaskPlacement.from_settings(s), namespace_network(s)
        child = pulumi.ResourceOptions(parent=self)
        prefix = fullname(RELEASE)
        namespace = pulumi.Output.from_input(args.namespace)
        for warning in placement.warnings:
            pulumi.log.warn(warning, resource=self)
        scripts = facts.chart_script_warning(d.dask_version)
        if scripts:
            pulumi.log.warn(scripts, resource=self)

        self.password = JupyterPassword(f"{name}-jupyter", child)
        # The exposed Services first: their LoadBalancer addresses go into the certificates.
        self._expose(name, args, (RELEASE, RELEASE))
        tls_secret = podspec.tls_secret_name(prefix) if d.tls else None
        self.tls = None
        if tls_secret:
            self.tls = DaskTls(f"{name}-tls", DaskTlsArgs(
                namespace=args.namespace, secret_name=tls_secret,
                scheduler_dns_names=namespace.apply(lambda ns: service_names(f"{prefix}-scheduler", ns)),
                scheduler_external_host=self._external_host("scheduler"),
                jupyter_dns_names=(namespace.apply(lambda ns: service_names(f"{prefix}-jupyter", ns))
                                   if d.jupyter.enabled else None),
                jupyter_external_host=self._external_host("jupyter")), child)

        def build(a: list[Any]) -> dict[str, Any]:
            ns, dataset, pip_cache, password_hash = a
            return dask_values(DaskValuesInputs(
                dask=d, namespace=ns, release=RELEASE,
                scheduler_selector=placement.scheduler_selector,
                jupyter_selector=placement.jupyter_selector,
                worker_selector=placement.worker_selector,
                dataset_claim=dataset, pip_cache_claim=pip_cache,
                dataset_mount=s.storage.dataset_mount,
                jupyter_password_hash=password_hash, tls_secret=tls_secret, enforces_psp=s.cluster.enforces_psp,
            ))

        values = pulumi.Output.all(namespace, args.dataset_claim, args.pip_cache_claim, self.password.hash).apply(build)
        # The namespace's policies before the pods: they start confined.
        selectors = DaskPodSelectors.for_helm(RELEASE)
        self.network_policies = guard_namespace(
            name, namespace, lambda ns: dask_network_policies(
                ns, selectors, operator_namespace=None, network=network, name_prefix=RELEASE), RELEASE, child)
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
        self._follow_load_balancers(d, dashboard_tls=d.tls)
        self._declare_outputs(self.password, self.tls)

