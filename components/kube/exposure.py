"""Services that expose the scheduler or Jupyter outside the cluster, when asked, and the
NetworkPolicies that guard the Dask namespace (``network_policy.py`` builds them).

The pinned chart's Services cannot carry ``loadBalancerSourceRanges``, so they stay
ClusterIP and these Services (same pod selector) do the exposing. An exposed Service without
source ranges is refused by the settings unless ``allowPublicLoadBalancer`` is set, and so is
any exposure without TLS.

Who may connect is decided twice. ``loadBalancerSourceRanges`` "will restrict traffic through
the cloud-provider load-balancer" (the ServiceSpec field, k8s.io/api core/v1): kube-proxy
filters only traffic to the load balancer's address (kubernetes/kubernetes#33586, closed
without applying it to NodePorts), and the Supervisor's load balancer reaches the guest nodes
through their NodePorts, which anyone who reaches a node may use directly. So the Dask
namespace's NetworkPolicy admits the exposed ports from the source ranges only, and the
Services keep the client's address for it to see: ``externalTrafficPolicy: Local`` ("each
node will deliver traffic only to the node-local endpoints of the service, without
masquerading the client source IP"; with ``Cluster`` every client would arrive from a node's
address). The vSphere paravirtual cloud provider passes the policy and the health-check
NodePort on to the Supervisor's VirtualMachineService (kubernetes/cloud-provider-vsphere
``pkg/cloudprovider/vsphereparavirtual/vmservice/vmservice.go``, ``getVMServiceAnnotations``),
whose load balancer then sends only to the node that runs the pod.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


@dataclass(frozen=True)
class ExposureArgs:
    namespace: pulumi.Input[str]
    release: str
    component: str  # scheduler | jupyter (the chart's component label)
    service_type: str  # NodePort | LoadBalancer
    ports: tuple[tuple[str, int, int], ...]  # (name, port, targetPort)
    source_ranges: tuple[str, ...]
    # The pods' labels when they are not the chart's (the operator's scheduler pods).
    pod_selector: Mapping[str, str] | None = None


def selector(release: str, component: str) -> dict[str, str]:
    """The chart's pod selector labels (label style "helm", the pinned chart's default)."""
    return {"app": "dask", "release": release, "component": component}


def external_service(name: str, args: ExposureArgs, opts: pulumi.ResourceOptions) -> k8s.core.v1.Service:
    spec: dict[str, Any] = {
        "type": args.service_type,
        "selector": dict(args.pod_selector) if args.pod_selector else selector(args.release, args.component),
        "ports": [{"name": n, "port": p, "targetPort": t, "protocol": "TCP"} for n, p, t in args.ports],
        "externalTrafficPolicy": "Local",  # the client's address reaches the pod and its NetworkPolicy
    }
    if args.service_type == "LoadBalancer" and args.source_ranges:
        spec["loadBalancerSourceRanges"] = list(args.source_ranges)
    return k8s.core.v1.Service(
        name,
        metadata={"name": f"{args.release}-{args.component}-external", "namespace": args.namespace,
                  "labels": {"app.kubernetes.io/managed-by": "dask-tkg", "component": args.component}},
        spec=spec,
        opts=opts,
    )


def _field(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def load_balancer_host(status: Any) -> str:
    """First ingress IP or hostname of a Service status ("" until one is assigned)."""
    ingress = _field(_field(status, "load_balancer") or _field(status, "loadBalancer"), "ingress") or []
    if not ingress:
        return ""
    host: str = _field(ingress[0], "ip") or _field(ingress[0], "hostname") or ""
    return host


def external_host(service: k8s.core.v1.Service) -> pulumi.Output[str]:
    """The LoadBalancer's address once assigned ("" until then or for NodePort)."""
    host: pulumi.Output[str] = service.status.apply(load_balancer_host)
    return host


def guard_namespace(name: str, namespace: pulumi.Input[str], build: Callable[[str], list[dict[str, Any]]],
                    prefix: str, opts: pulumi.ResourceOptions) -> list[k8s.networking.v1.NetworkPolicy]:
    """One NetworkPolicy resource per policy ``build(namespace)`` returns, named
    ``<name>-<policy name less prefix>`` (the scheduler's: ``<name>-scheduler-api``). The list's
    length does not depend on the namespace, so it is known at preview."""
    namespace = pulumi.Output.from_input(namespace)
    policies = []
    for index, policy in enumerate(build("-")):
        built = namespace.apply(partial(_policy_at, build, index))
        suffix = policy["metadata"]["name"].removeprefix(f"{prefix}-")
        policies.append(k8s.networking.v1.NetworkPolicy(
            f"{name}-{suffix}", metadata=built.apply(lambda m: m["metadata"]), spec=built.apply(lambda m: m["spec"]),
            opts=opts))
    return policies


def confine(name: str, namespace: pulumi.Input[str], build: Callable[[str], dict[str, Any]],
            opts: pulumi.ResourceOptions) -> k8s.networking.v1.NetworkPolicy:
    """One NetworkPolicy resource of ``build(namespace)`` (``network_policy.fetch_policy``):
    the policy of a pod that downloads, which its Job waits for."""
    built = pulumi.Output.from_input(namespace).apply(build)
    return k8s.networking.v1.NetworkPolicy(name, metadata=built.apply(lambda m: m["metadata"]),
                                           spec=built.apply(lambda m: m["spec"]), opts=opts)


def _policy_at(build: Callable[[str], list[dict[str, Any]]], index: int, namespace: str) -> dict[str, Any]:
    """The ``index``th policy ``build`` makes for ``namespace``."""
    return build(namespace)[index]
