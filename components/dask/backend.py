"""What a Dask backend is (``daskBackend``): the Helm release (``dask_release.py``) and the Dask
operator's cluster (``operator_cluster.py``) take one argument shape and give the program the
same outputs, each the value of one stack output the runner reads (``workloads/contract.py``).
``__main__.py`` picks a backend by name (``backends.py``) and exports what it gives without
asking which one it got; a backend adds no output of its own, or the runner would see a stack
that depends on the backend (``tests/program/test_dask_backends.py`` holds both to this).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import pulumi
import pulumi_kubernetes as k8s

from components.dask.jupyter_password import JupyterPassword
from components.dask.tls import DaskTls
from components.facts.dask_chart import DASHBOARD_PORT, JUPYTER_CONTAINER_PORT, JUPYTER_PORT, SCHEDULER_PORT
from components.kube.exposure import ExposureArgs, external_host, external_service
from components.settings.model import DaskSpec, Settings
from workloads import contract

# The outputs every backend declares: attribute -> the stack output it becomes.
OUTPUTS: dict[str, str] = {
    "scheduler_address": contract.SCHEDULER_ADDRESS,
    "dashboard_url": contract.DASHBOARD_URL,
    "jupyter_url": contract.JUPYTER_URL,  # "" when Jupyter is disabled
    "jupyter_password": contract.JUPYTER_PASSWORD,  # secret
    "tls_ca": contract.TLS_CA,  # "" when TLS is off
    "tls_client_cert": contract.TLS_CLIENT_CERT,  # secret
    "tls_client_key": contract.TLS_CLIENT_KEY,  # secret
    "cluster_name": contract.DASK_CLUSTER_NAME,  # the DaskCluster's name; "" with Helm
}


@dataclass(frozen=True)
class DaskBackendArgs:
    """What either backend is given: the stack's settings, from which it reads its own part,
    and what the program made before it."""

    settings: Settings
    namespace: pulumi.Input[str]
    dataset_claim: pulumi.Input[str]
    pip_cache_claim: pulumi.Input[str]
    # What must exist before the pods start (GPU operator, storage, data Job, a team's namespaces):
    # children do not inherit a component's depends_on, so each backend puts it on its releases.
    depends_on: tuple[pulumi.Resource, ...] = ()
    # workerEnvironment=prepared (operator backend only): the Job that prepares the environment
    # (the pods start after it) and its directory on the pip-cache claim (prepared_env.py)
    environment_job: pulumi.Resource | None = None
    environment_subdir: str | None = None

    @property
    def environment_steps(self) -> list[pulumi.Resource]:
        return [self.environment_job] if self.environment_job is not None else []


class DaskBackend(pulumi.ComponentResource):
    """The base both backends build on: the outputs declared here once, set and registered by
    ``_declare_outputs`` once a backend has made its resources."""

    TYPE: ClassVar[str]  # the component's Pulumi type, part of every URN below it
    # the DaskCluster whose worker group the runner may resize (runner_access.role_rules); None: none
    SCALED_CLUSTER: ClassVar[str | None] = None

    scheduler_address: pulumi.Output[str]
    dashboard_url: pulumi.Output[str]
    jupyter_url: pulumi.Output[str]
    jupyter_password: pulumi.Output[str]
    tls_ca: pulumi.Output[str]
    tls_client_cert: pulumi.Output[str]
    tls_client_key: pulumi.Output[str]
    cluster_name: pulumi.Output[str]

    def __init__(self, name: str, args: DaskBackendArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        """Every backend is built as ``Backend(name, DaskBackendArgs(...), opts)``."""
        super().__init__(self.TYPE, name, None, opts)
        self.external: dict[str, k8s.core.v1.Service] = {}  # the guarded external Services by component

    def _expose(self, name: str, args: DaskBackendArgs, releases: tuple[str, str],
                scheduler_pods: Mapping[str, str] | None = None) -> None:
        """Guarded external Services where asked, before the pods: the provider reports a new
        LoadBalancer Service created once it has an address and its Endpoints settled, pods or
        none (pulumi-kubernetes provider/pkg/await/service.go, ``checkAndLogStatus``), and the
        certificates the pods mount name that address. ``releases``: the names the scheduler's
        and Jupyter's objects carry; ``scheduler_pods``: the scheduler pods' labels where they
        are not the dask chart's."""
        d, child = args.settings.dask, pulumi.ResourceOptions(parent=self)
        if d.scheduler.service_type != "ClusterIP":
            self.external["scheduler"] = external_service(f"{name}-scheduler-external", ExposureArgs(
                namespace=args.namespace, release=releases[0], component="scheduler",
                service_type=d.scheduler.service_type,
                ports=(("scheduler", SCHEDULER_PORT, SCHEDULER_PORT), ("dashboard", DASHBOARD_PORT, DASHBOARD_PORT)),
                source_ranges=d.lb_source_ranges, pod_selector=scheduler_pods), child)
        if d.jupyter.enabled and d.jupyter.service_type != "ClusterIP":
            self.external["jupyter"] = external_service(f"{name}-jupyter-external", ExposureArgs(
                namespace=args.namespace, release=releases[1], component="jupyter",
                service_type=d.jupyter.service_type, ports=(("jupyter", JUPYTER_PORT, JUPYTER_CONTAINER_PORT),),
                source_ranges=d.lb_source_ranges), child)

    def _external_host(self, component: str) -> pulumi.Input[str]:
        """A LoadBalancer's address ("" until assigned, for NodePort, or not exposed)."""
        return external_host(self.external[component]) if component in self.external else ""

    def _follow_load_balancers(self, d: DaskSpec, dashboard_tls: bool) -> None:
        """The addresses follow a LoadBalancer's, each with the scheme its server speaks (the
        dashboard's https only where the backend serves it over TLS)."""
        scheme, web = ("tls", "https") if d.tls else ("tcp", "http")
        if d.scheduler.service_type == "LoadBalancer":
            host, dashboard = self._external_host("scheduler"), "https" if dashboard_tls else "http"
            self.scheduler_address = _or_address(host, self.scheduler_address, f"{scheme}://{{}}:{SCHEDULER_PORT}")
            self.dashboard_url = _or_address(host, self.dashboard_url, f"{dashboard}://{{}}:{DASHBOARD_PORT}")
        if "jupyter" in self.external and d.jupyter.service_type == "LoadBalancer":
            self.jupyter_url = _or_address(self._external_host("jupyter"), self.jupyter_url,
                                           f"{web}://{{}}:{JUPYTER_PORT}")

    def _declare_outputs(self, password: JupyterPassword, tls: DaskTls | None) -> None:
        """The outputs the backend does not set itself (the addresses it does), then all of
        them registered: the password's and the TLS material's, and the DaskCluster's name."""
        self.cluster_name = pulumi.Output.from_input(self.SCALED_CLUSTER or "")
        self.jupyter_password = password.password
        self.tls_ca = tls.ca_cert if tls else pulumi.Output.from_input("")
        self.tls_client_cert = tls.client_cert if tls else pulumi.Output.secret("")
        self.tls_client_key = tls.client_key if tls else pulumi.Output.secret("")
        self.register_outputs({attribute: getattr(self, attribute) for attribute in OUTPUTS})


def _or_address(host: pulumi.Input[str], inside: pulumi.Output[str], outside: str) -> pulumi.Output[str]:
    """``outside`` with the LoadBalancer's ``host`` once it has one, else the in-cluster address."""
    return pulumi.Output.all(host, inside).apply(lambda a: outside.format(a[0]) if a[0] else a[1])
