"""The Dask cluster run by the Dask Kubernetes operator (``daskBackend=operator``): the pinned
operator chart (controller + CRDs) in its own namespace, a ``DaskCluster`` whose GPU worker
group an autoscaler (or the runner) resizes, an optional CPU worker group, and Jupyter as
with the Helm backend. The outputs are every backend's (``backend.py``), the cluster's name among them.

The cluster is named like the Helm release (``dask``), so its Services are the same
``dask-scheduler`` names: the TLS certificate, the Jupyter chart's ``DASK_SCHEDULER_ADDRESS``
and the stack outputs are the Helm backend's.
"""
from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.artifacts.charts import verified_chart
from components.dask import operator_rbac, operator_spec, podspec, post_render
from components.dask.backend import DaskBackend, DaskBackendArgs
from components.dask.jupyter_password import JupyterPassword
from components.dask.tls import DaskTls, DaskTlsArgs
from components.dask.values import DaskValuesInputs, dask_values, jupyter_url, service_names
from components.kube.exposure import guard_namespace
from components.kube.network_policy import DaskPodSelectors, dask_network_policies
from components.kube.network_settings import namespace_network
from components.kube.pod_security import GuestNamespace, GuestNamespaceArgs
from components.settings.model import POOL_ROLE_LABEL, OperatorSpec, Settings
from components.settings.operator import initial_workers
from components.settings.placement import pool_selector

CLUSTER_NAME = "dask"
OPERATOR_RELEASE = "dask-kubernetes-operator"
JUPYTER_RELEASE = "dask"  # the dask chart with only Jupyter enabled


def _operator(s: Settings) -> OperatorSpec:
    """The operator's settings, which only daskBackend=operator has."""
    if s.dask.operator is None:
        raise ValueError("DaskOperatorCluster needs daskBackend=operator settings")
    return s.dask.operator


def served_namespaces(s: Settings) -> list[str]:
    """The namespaces the controller watches: the Dask namespace and each person's (users),
    where the program grants it its Role (components/dask/team/person_space.py)."""
    return [s.storage.namespace, *(m.namespace for m in s.team)]


def jupyter_only_values(values: dict[str, Any]) -> dict[str, Any]:
    """The dask chart's values with only Jupyter running: the operator runs scheduler and workers."""
    values = {**values, "scheduler": {**values["scheduler"], "enabled": False},
              "worker": {**values["worker"], "replicas": 0}}
    return values


class DaskOperatorCluster(DaskBackend):
    """The operator backend (``daskBackend=operator``)."""

    TYPE = "dask-tkg:dask:DaskOperatorCluster"
    SCALED_CLUSTER = CLUSTER_NAME

    def __init__(self, name: str, args: DaskBackendArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, args, opts)
        s, d = args.settings, args.settings.dask
        op = _operator(s)
        child = pulumi.ResourceOptions(parent=self)
        self.namespace = pulumi.Output.from_input(args.namespace)

        self.operator_namespace = GuestNamespace(f"{name}-operator-ns", GuestNamespaceArgs(
            op.namespace, "restricted", s.cluster.enforces_psp,
            labels={"kubernetes.io/metadata.name": op.namespace}), child)  # automatic only from 1.21 on
        self.operator_rights = self._operator_rights(name, args, op.namespace)
        self.operator = k8s.helm.v3.Release(
            f"{name}-operator",
            name=OPERATOR_RELEASE, chart=verified_chart(op.chart_pin), version=op.chart_version,
            namespace=self.operator_namespace.name,
            values=operator_spec.operator_values(op, pool_selector(s, "scheduler"), served_namespaces(s),
                                                 s.cluster.enforces_psp),
            skip_crds=False,  # the CRDs come from the chart's crds/ folder
            timeout=600,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.depends_on, *self.operator_rights]))

        # The exposed Services first: their LoadBalancer addresses go into the certificates.
        self._expose(name, args, (CLUSTER_NAME, JUPYTER_RELEASE), scheduler_pods={
            operator_spec.CLUSTER_LABEL: CLUSTER_NAME, operator_spec.COMPONENT_LABEL: "scheduler"})
        tls_secret = podspec.tls_secret_name(CLUSTER_NAME) if d.tls else None
        self.tls = self._tls(name, args, tls_secret, child)
        self.password = JupyterPassword(f"{name}-jupyter", child)
        self.network_policies = self._guard(name, s)  # before the pods: they start confined
        self._declare_cluster(name, args, tls_secret)
        self._declare_jupyter(name, args, tls_secret)
        self._follow_load_balancers(d, dashboard_tls=False)  # HTTP: see _declare_jupyter
        self._declare_outputs(self.password, self.tls)

    def _operator_rights(self, name: str, args: DaskBackendArgs, operator_namespace: str) -> list[pulumi.Resource]:
        """The controller's Role and RoleBinding in the Dask namespace, the only one it serves
        (its kopf flags), and its read-only ClusterRole (namespaces, CRDs), there before it
        starts: the chart grants it nothing (operator_rbac)."""
        namespace = pulumi.Output.from_input(args.namespace)
        role = namespace.apply(operator_rbac.operator_role)
        binding = namespace.apply(lambda ns: operator_rbac.operator_role_binding(ns, operator_namespace))
        observe = operator_rbac.observe_cluster_role()
        observe_binding = operator_rbac.observe_binding(operator_namespace)
        child = pulumi.ResourceOptions(parent=self)
        return [
            k8s.rbac.v1.Role(f"{name}-operator-role", metadata=role.apply(lambda r: r["metadata"]),
                             rules=role.apply(lambda r: r["rules"]), opts=child),
            k8s.rbac.v1.RoleBinding(f"{name}-operator-binding", metadata=binding.apply(lambda b: b["metadata"]),
                                    role_ref=binding.apply(lambda b: b["roleRef"]),
                                    subjects=binding.apply(lambda b: b["subjects"]), opts=child),
            # read-only, cluster-wide: namespaces and CRDs, which kopf observes (operator_rbac.OBSERVE_RULES)
            k8s.rbac.v1.ClusterRole(f"{name}-operator-observe", metadata=observe["metadata"], rules=observe["rules"],
                                    opts=child),
            k8s.rbac.v1.ClusterRoleBinding(f"{name}-operator-observe-binding", metadata=observe_binding["metadata"],
                                           role_ref=observe_binding["roleRef"], subjects=observe_binding["subjects"],
                                           opts=child),
        ]

    def _tls(self, name: str, args: DaskBackendArgs, secret: str | None,
             child: pulumi.ResourceOptions) -> DaskTls | None:
        if not secret:
            return None
        ns = args.settings.storage.namespace
        jupyter = args.settings.dask.jupyter.enabled
        return DaskTls(f"{name}-tls", DaskTlsArgs(
            namespace=args.namespace, secret_name=secret,
            scheduler_dns_names=service_names(f"{CLUSTER_NAME}-scheduler", ns),
            scheduler_external_host=self._external_host("scheduler"),
            jupyter_dns_names=service_names(f"{JUPYTER_RELEASE}-jupyter", ns) if jupyter else None,
            jupyter_external_host=self._external_host("jupyter")), child)

    def _declare_cluster(self, name: str, args: DaskBackendArgs, tls_secret: str | None) -> None:
        s = args.settings

        def inputs(a: list[Any]) -> operator_spec.DaskClusterInputs:
            ns, dataset, pip_cache = a
            return operator_spec.DaskClusterInputs(
                dask=s.dask, name=CLUSTER_NAME, namespace=ns,
                scheduler_selector=pool_selector(s, "scheduler"), worker_selector={POOL_ROLE_LABEL: "gpu"},
                cpu_worker_selector={POOL_ROLE_LABEL: "cpu"},
                claims=podspec.Claims(dataset, pip_cache, s.storage.dataset_mount, args.environment_subdir),
                initial_workers=initial_workers(s), tls_secret=tls_secret, enforces_psp=s.cluster.enforces_psp)

        built = pulumi.Output.all(self.namespace, args.dataset_claim, args.pip_cache_claim).apply(inputs)
        after = [self.operator, *args.depends_on, *args.environment_steps, *([self.tls] if self.tls else []),
                 *self.network_policies]
        # A changed pod template replaces the cluster: the controller copies it into the worker
        # Deployments only when it creates them. A changed replica count is a plain update.
        self.cluster = self._custom(f"{name}-cluster", "DaskCluster", built.apply(operator_spec.dask_cluster),
                                    after, replace_on_changes=["spec.scheduler", "spec.worker.spec"])
        op = _operator(s)
        self.cpu_workers = self.autoscaler = None
        if op.cpu_workers:
            self.cpu_workers = self._custom(f"{name}-cpu-workers", "DaskWorkerGroup",
                                            built.apply(operator_spec.cpu_worker_group), [self.cluster])
        if op.autoscale:
            self.autoscaler = self._custom(f"{name}-autoscaler", "DaskAutoscaler",
                                           built.apply(operator_spec.autoscaler), [self.cluster])
        scheme = "tls" if tls_secret else "tcp"
        self.scheduler_address = self.namespace.apply(
            lambda ns: operator_spec.scheduler_address(CLUSTER_NAME, ns, scheme == "tls"))
        self.dashboard_url = self.namespace.apply(lambda ns: operator_spec.dashboard_url(CLUSTER_NAME, ns))

    def _guard(self, name: str, s: Settings) -> list[k8s.networking.v1.NetworkPolicy]:
        """The Dask namespace's NetworkPolicies (``network_policy.dask_network_policies``)."""
        selectors = DaskPodSelectors.for_operator(CLUSTER_NAME, JUPYTER_RELEASE if s.dask.jupyter.enabled else None)
        network, operator_namespace = namespace_network(s), _operator(s).namespace
        return guard_namespace(
            name, self.namespace, lambda ns: dask_network_policies(
                ns, selectors, operator_namespace=operator_namespace, network=network, name_prefix=CLUSTER_NAME),
            CLUSTER_NAME, pulumi.ResourceOptions(parent=self))

    def _custom(self, name: str, kind: str, manifest: pulumi.Output[Any], after: list[pulumi.Resource],
                replace_on_changes: list[str] | None = None) -> pulumi.CustomResource:
        # ``manifest`` is a dict; Output[Any] because the optional ones' builders (cpu_worker_group,
        # autoscaler) are typed ``dict | None``: None when their option is off, and then no call comes here.
        resource: pulumi.CustomResource = k8s.apiextensions.CustomResource(
            name, api_version=operator_spec.API_VERSION, kind=kind,
            metadata=manifest.apply(lambda m: m["metadata"]), spec=manifest.apply(lambda m: m["spec"]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=after, replace_on_changes=replace_on_changes))
        return resource

    def _declare_jupyter(self, name: str, args: DaskBackendArgs, tls_secret: str | None) -> None:
        s, d = args.settings, args.settings.dask
        self.jupyter_release = None
        self.jupyter_url = pulumi.Output.from_input("")
        if not d.jupyter.enabled:
            return

        def build(a: list[Any]) -> dict[str, Any]:
            ns, dataset, pip_cache, password_hash = a
            return jupyter_only_values(dask_values(DaskValuesInputs(
                dask=d, namespace=ns, release=JUPYTER_RELEASE, scheduler_selector=pool_selector(s, "scheduler"),
                jupyter_selector=pool_selector(s, "jupyter"), worker_selector={POOL_ROLE_LABEL: "gpu"},
                dataset_claim=dataset, pip_cache_claim=pip_cache, dataset_mount=s.storage.dataset_mount,
                jupyter_password_hash=password_hash, tls_secret=tls_secret,
                # The operator's controller calls the dashboard's HTTP API in plain HTTP
                # (dask-kubernetes 2026.3.0 operator/networking.py builds ``tcp://host:port``
                # and controller.py posts to it with aiohttp): the dashboard stays HTTP.
                dashboard_tls=False,
                enforces_psp=s.cluster.enforces_psp, environment=args.environment_subdir)))

        values = pulumi.Output.all(self.namespace, args.dataset_claim, args.pip_cache_claim,
                                   self.password.hash).apply(build)
        self.jupyter_release = k8s.helm.v3.Release(
            f"{name}-jupyter-release", name=JUPYTER_RELEASE, chart=verified_chart(d.chart_pin), version=d.chart_version,
            namespace=args.namespace,
            values=values, postrender=str(post_render.LAUNCHER), timeout=900,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.depends_on, *args.environment_steps,
                                                                 *self.network_policies,
                                                                 *([self.tls] if self.tls else [])]))
        self.jupyter_url = self.namespace.apply(lambda ns: jupyter_url(JUPYTER_RELEASE, ns, d.tls))
