"""NetworkPolicies of the Dask namespace, and a small evaluator of their ingress semantics.

Pure functions on plain dicts (no Pulumi): ``dask_network_policies`` builds the manifests for
either backend, ``admits`` says whether a set of policies lets a source reach a pod on a port.
The test cluster's network plugin does not enforce NetworkPolicy, so the evaluator is what
checks each policy's selectors and ports against the pods it must admit and refuse.

Who talks to whom in the Dask namespace:
- workers connect to the scheduler's comm port; the scheduler, other workers and clients
  (Jupyter) connect to the workers on ports chosen at random (comm and nanny);
- Jupyter's dashboard extension and the operator's controller (another namespace) call the
  scheduler's dashboard port, which also serves the unauthenticated HTTP API that retires
  workers;
- the runner, outside the cluster, reaches the scheduler and Jupyter either by a
  port-forward through the API server (traffic from the pod's own node, which NetworkPolicy
  always admits) or, when they are exposed (NodePort/LoadBalancer), from node addresses after
  kube-proxy's SNAT: everything outside the pod network, ``0.0.0.0/0`` except the pod CIDR;
- the data Job ``dataset-prepare`` serves nothing.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Mapping

from components.dask.chart import JUPYTER_CONTAINER_PORT
from components.dask.operator_spec import CLUSTER_LABEL, COMPONENT_LABEL, DASHBOARD_PORT, SCHEDULER_PORT

API_VERSION = "networking.k8s.io/v1"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace


@dataclass(frozen=True)
class DaskPodSelectors:
    """The matchLabels of the scheduler, worker and Jupyter pods (``jupyter`` None: no Jupyter)."""
    scheduler: dict[str, str]
    worker: dict[str, str]
    jupyter: dict[str, str] | None

    @classmethod
    def for_helm(cls, release: str) -> "DaskPodSelectors":
        """The dask chart's pods (the labels of ``exposure.selector``, label style "helm")."""
        return cls(scheduler=_chart_labels(release, "scheduler"), worker=_chart_labels(release, "worker"),
                   jupyter=_chart_labels(release, "jupyter"))

    @classmethod
    def for_operator(cls, cluster_name: str, jupyter_release: str | None) -> "DaskPodSelectors":
        """The operator's scheduler and workers (every worker group of the cluster) and, when
        Jupyter is on, the Jupyter pod of the dask chart's release ``jupyter_release``."""
        return cls(scheduler={CLUSTER_LABEL: cluster_name, COMPONENT_LABEL: "scheduler"},
                   worker={CLUSTER_LABEL: cluster_name, COMPONENT_LABEL: "worker"},
                   jupyter=_chart_labels(jupyter_release, "jupyter") if jupyter_release else None)


def _chart_labels(release: str, component: str) -> dict[str, str]:
    # Same labels as exposure.selector, which imports Pulumi; a test keeps the two equal.
    return {"app": "dask", "release": release, "component": component}


def _policy(name: str, namespace: str, pod_selector: dict[str, Any], ingress: list[dict[str, Any]] | None):
    spec: dict[str, Any] = {"podSelector": pod_selector, "policyTypes": ["Ingress"]}
    if ingress is not None:
        spec["ingress"] = ingress
    return {"apiVersion": API_VERSION, "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _pods(labels: Mapping[str, str]) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": dict(labels)}}


def _tcp(port: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": port}]


def _outside_pod_network(external_pod_cidr: str) -> dict[str, Any]:
    return {"ipBlock": {"cidr": "0.0.0.0/0", "except": [external_pod_cidr]}}


def default_deny(namespace: str, name_prefix: str) -> dict[str, Any]:
    """``<prefix>-default-deny``: every pod of the namespace refuses ingress unless another
    policy admits it, so a pod nobody lists (the data Job's, anything added later) serves
    nobody. Egress stays open: the images' entrypoints pip-install ``EXTRA_PIP_PACKAGES`` from
    PyPI and the data Job downloads the datasets, both from the internet and both after a DNS
    lookup, and the workers, Jupyter and the scheduler connect to each other's random ports."""
    return _policy(f"{name_prefix}-default-deny", namespace, {}, None)


def scheduler_policy(namespace: str, selectors: DaskPodSelectors, *, operator_namespace: str | None,
                     external_pod_cidr: str | None, name_prefix: str) -> dict[str, Any]:
    """``<prefix>-scheduler-api`` (the operator backend's existing object name when the prefix
    is the cluster's name), on the scheduler pod.

    The comm port admits the workers, which register and report there, and Jupyter, whose
    Client submits work there; when the scheduler is exposed (``external_pod_cidr``: the
    cluster's pod CIDR), also everything outside the pod network, the NodePort's or
    LoadBalancer's clients arriving from node addresses after kube-proxy's SNAT (the
    LoadBalancer already limits them to its source ranges, and mutual TLS guards the port).

    The dashboard port also serves the HTTP API that retires workers, without authentication
    (distributed's ``http/scheduler/api.py``): it admits the operator's controller, which calls
    that API (its namespace, when ``operator_namespace`` is given), the pods of the Dask
    namespace (Jupyter's dashboard extension), and, when exposed, everything outside the pod
    network, as the comm port. The port-forward and the kubelet's probes arrive from the pod's
    own node, which NetworkPolicy always admits."""
    comm_from = [_pods(selectors.worker)]
    if selectors.jupyter:
        comm_from.append(_pods(selectors.jupyter))
    dashboard_from: list[dict[str, Any]] = []
    if operator_namespace:
        dashboard_from.append({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: operator_namespace}}})
    dashboard_from.append({"podSelector": {}})
    if external_pod_cidr:
        comm_from.append(_outside_pod_network(external_pod_cidr))
        dashboard_from.append(_outside_pod_network(external_pod_cidr))
    return _policy(f"{name_prefix}-scheduler-api", namespace, {"matchLabels": dict(selectors.scheduler)}, [
        {"from": comm_from, "ports": _tcp(SCHEDULER_PORT)},
        {"from": dashboard_from, "ports": _tcp(DASHBOARD_PORT)},
    ])


def worker_policy(namespace: str, selectors: DaskPodSelectors, name_prefix: str) -> dict[str, Any]:
    """``<prefix>-workers``, on the worker pods: every port, since workers listen on random
    ports (comm and nanny), from the scheduler, which drives them, from the other workers,
    which fetch data from each other, and from Jupyter, whose Client may gather results from
    the workers directly. Clients outside the cluster go through the scheduler."""
    peers = [_pods(selectors.scheduler), _pods(selectors.worker)]
    if selectors.jupyter:
        peers.append(_pods(selectors.jupyter))
    return _policy(f"{name_prefix}-workers", namespace, {"matchLabels": dict(selectors.worker)},
                   [{"from": peers}])


def jupyter_policy(namespace: str, jupyter: Mapping[str, str], name_prefix: str) -> dict[str, Any]:
    """``<prefix>-jupyter``, on the Jupyter pod: its server's port from any source, in the
    cluster or, when exposed, outside it; the server asks for its password."""
    return _policy(f"{name_prefix}-jupyter", namespace, {"matchLabels": dict(jupyter)},
                   [{"ports": _tcp(JUPYTER_CONTAINER_PORT)}])


def dask_network_policies(namespace: str, selectors: DaskPodSelectors, *, operator_namespace: str | None,
                          external_pod_cidr: str | None, name_prefix: str) -> list[dict[str, Any]]:
    """The Dask namespace's NetworkPolicies: ``<prefix>-default-deny``,
    ``<prefix>-scheduler-api``, ``<prefix>-workers`` and, with Jupyter, ``<prefix>-jupyter``.

    ``name_prefix``: the cluster's name (operator backend, so that the scheduler's policy keeps
    its object name) or the release's (Helm backend). ``external_pod_cidr``: the cluster's pod
    CIDR when the scheduler is exposed, else None. ``operator_namespace``: the operator's
    controller's namespace (operator backend), else None."""
    policies = [
        default_deny(namespace, name_prefix),
        scheduler_policy(namespace, selectors, operator_namespace=operator_namespace,
                         external_pod_cidr=external_pod_cidr, name_prefix=name_prefix),
        worker_policy(namespace, selectors, name_prefix),
    ]
    if selectors.jupyter:
        policies.append(jupyter_policy(namespace, selectors.jupyter, name_prefix))
    return policies


# --- the evaluator ---------------------------------------------------------------------------

def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions: In, NotIn, Exists, DoesNotExist)
    against labels; the empty selector matches everything."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            raise ValueError(f"unknown matchExpressions operator {op!r}")
        if not ok:
            return False
    return True


def _ip_in_block(ip: str, block: Mapping[str, Any]) -> bool:
    address = ipaddress.ip_address(ip)
    network = ipaddress.ip_network(block["cidr"], strict=False)
    if address.version != network.version or address not in network:
        return False
    excepted = (ipaddress.ip_network(e, strict=False) for e in block.get("except") or [])
    return not any(e.version == address.version and address in e for e in excepted)


def _peer_matches(peer: Mapping[str, Any], policy_namespace: str, source: Mapping[str, Any]) -> bool:
    if "ipBlock" in peer:
        # Only addresses given as such match: pod sources come from the pod network, which the
        # blocks these policies use except (what a plugin does with pod IPs is its own choice).
        return "ip" in source and _ip_in_block(source["ip"], peer["ipBlock"])
    if "podSelector" not in peer and "namespaceSelector" not in peer:
        raise ValueError(f"a peer with neither podSelector, namespaceSelector nor ipBlock: {peer!r}")
    if "ip" in source:
        return False
    if "namespaceSelector" in peer:
        if not selector_matches(peer["namespaceSelector"], _source_namespace_labels(source)):
            return False
    elif source["namespace"] != policy_namespace:  # a podSelector alone: the policy's namespace
        return False
    return "podSelector" not in peer or selector_matches(peer["podSelector"], source.get("labels") or {})


def _source_namespace_labels(source: Mapping[str, Any]) -> dict[str, str]:
    return {NAMESPACE_NAME_LABEL: source["namespace"], **(source.get("namespace_labels") or {})}


def _port_matches(entry: Mapping[str, Any], port: int) -> bool:
    if entry.get("protocol", "TCP") != "TCP":
        return False
    if "port" not in entry:
        return True  # every port of the protocol
    first = entry["port"]
    if not isinstance(first, int):
        raise ValueError(f"named ports are not supported by this evaluator: {first!r}")
    return first <= port <= entry.get("endPort", first)


def _rule_admits(rule: Mapping[str, Any], policy_namespace: str, source: Mapping[str, Any], port: int) -> bool:
    peers = rule.get("from") or []  # absent or empty: every source
    ports = rule.get("ports") or []  # absent or empty: every port
    return ((not peers or any(_peer_matches(p, policy_namespace, source) for p in peers))
            and (not ports or any(_port_matches(e, port) for e in ports)))


def _policy_types(spec: Mapping[str, Any]) -> list[str]:
    # Unset policyTypes: Ingress always, Egress when the policy has egress rules.
    return spec.get("policyTypes") or ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def admits(policies: list[dict], namespace_labels: dict, pod_labels: dict, from_pod: dict | None,
           port: int) -> bool:
    """Whether ``policies`` admit TCP traffic to ``port`` of a pod (``pod_labels``) in the
    namespace of ``namespace_labels``, which must hold ``kubernetes.io/metadata.name`` (the
    API server sets it on every namespace).

    ``from_pod``: ``{"namespace": ..., "namespace_labels": {...}, "labels": {...}}`` for a pod
    (its namespace's ``kubernetes.io/metadata.name`` label is implied), ``{"ip": "10.1.2.3"}``
    for an address outside the pod network (matched by ipBlock peers only), or None for the
    pod's own node (kubelet probes, ``kubectl port-forward``), which NetworkPolicy always admits.

    The upstream semantics: a pod that no Ingress policy of its namespace selects admits
    everything; otherwise it admits the traffic when a rule of ANY policy selecting it has a
    ``from`` (absent or empty: every source) with a peer matching the source and ``ports``
    (absent or empty: every port) including the port. A podSelector peer without a
    namespaceSelector matches pods of the policy's own namespace only. Ports are numeric
    (with ``endPort``); a named port raises ValueError. Protocol: TCP only."""
    if NAMESPACE_NAME_LABEL not in namespace_labels:
        raise ValueError(f"namespace_labels must hold {NAMESPACE_NAME_LABEL}")
    if from_pod is None:
        return True
    namespace = namespace_labels[NAMESPACE_NAME_LABEL]
    selecting = [p for p in policies
                 if p.get("kind", "NetworkPolicy") == "NetworkPolicy"
                 and p["metadata"].get("namespace") == namespace
                 and "Ingress" in _policy_types(p["spec"])
                 and selector_matches(p["spec"].get("podSelector"), pod_labels)]
    if not selecting:
        return True
    return any(_rule_admits(rule, namespace, from_pod, port)
               for p in selecting for rule in p["spec"].get("ingress") or [])
