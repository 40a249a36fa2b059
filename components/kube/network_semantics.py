"""The upstream semantics of NetworkPolicy, evaluated: does a set of policies let traffic in to
a pod, or out of it? The test cluster's network plugin (bridge) enforces no NetworkPolicy, so
this evaluator is what checks the program's policies against the pods each stack really runs.

The semantics are the API's own (``k8s.io/api`` ``networking/v1`` ``NetworkPolicySpec``,
``NetworkPolicyIngressRule``, ``NetworkPolicyEgressRule``, ``NetworkPolicyPeer``,
``NetworkPolicyPort``, ``IPBlock``; the field documentation the pinned kube-apiserver v1.20.2
serves in its OpenAPI, word for word the same through 1.25's):

- ``spec.ingress``: "Traffic is allowed to a pod if there are no NetworkPolicies selecting the
  pod (...), OR if the traffic source is the pod's local node, OR if the traffic matches at
  least one ingress rule across all of the NetworkPolicy objects whose podSelector matches the
  pod."
- ``spec.egress``: "Outgoing traffic is allowed if there are no NetworkPolicies selecting the
  pod (...), OR if the traffic matches at least one egress rule across all of the
  NetworkPolicy objects whose podSelector matches the pod." No exception for the node.
- ``spec.policyTypes`` unset: Ingress always, Egress when the policy has an egress section.
- a rule's ``from``/``to`` and ``ports``: absent or empty matches every peer / every port;
  ``protocol`` defaults to TCP; ``endPort`` extends a numeric port to a range.
- a peer's ``podSelector`` without ``namespaceSelector`` selects pods of the policy's own
  namespace; with one, pods in the selected namespaces; ``ipBlock`` excludes its ``except``.

Which address a rule sees when a Service rewrites it (a ClusterIP to its endpoint, a node to
a pod) the upstream documentation leaves to the plugin ("it is not defined whether this
happens before or after NetworkPolicy processing", concepts/services-networking/
network-policies): a caller checks both addresses where it matters (the ``kubernetes``
Service's ClusterIP and its endpoints).
"""
from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace (1.21+)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions: In, NotIn, Exists, DoesNotExist)
    against labels; the empty selector matches everything."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_expression_matches(expr, labels) for expr in selector.get("matchExpressions") or [])


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise ValueError(f"unknown matchExpressions operator {op!r}")


def _ip_in_block(ip: str, block: Mapping[str, Any]) -> bool:
    address = ipaddress.ip_address(ip)
    network = ipaddress.ip_network(block["cidr"], strict=False)
    if address.version != network.version or address not in network:
        return False
    excepted = (ipaddress.ip_network(e, strict=False) for e in block.get("except") or [])
    return not any(e.version == address.version and address in e for e in excepted)


def _peer_matches(peer: Mapping[str, Any], policy_namespace: str, other: Mapping[str, Any]) -> bool:
    if "ipBlock" in peer:
        # Only addresses given as such match: pod peers are named by their labels.
        return "ip" in other and _ip_in_block(other["ip"], peer["ipBlock"])
    if "podSelector" not in peer and "namespaceSelector" not in peer:
        raise ValueError(f"a peer with neither podSelector, namespaceSelector nor ipBlock: {peer!r}")
    if "ip" in other:
        return False
    if "namespaceSelector" in peer:
        if not selector_matches(peer["namespaceSelector"], _namespace_labels(other)):
            return False
    elif other["namespace"] != policy_namespace:  # a podSelector alone: the policy's namespace
        return False
    return "podSelector" not in peer or selector_matches(peer["podSelector"], other.get("labels") or {})


def _namespace_labels(pod: Mapping[str, Any]) -> dict[str, str]:
    """A pod's namespace labels: ``namespace_labels`` when given (exactly what the namespace
    carries), else the name label the API server sets from 1.21 on."""
    if "namespace_labels" in pod:
        return dict(pod["namespace_labels"])
    return {NAMESPACE_NAME_LABEL: pod["namespace"]}


def _port_matches(entry: Mapping[str, Any], port: int, protocol: str) -> bool:
    if entry.get("protocol", "TCP") != protocol:
        return False
    if "port" not in entry:
        return True  # every port of the protocol
    first = entry["port"]
    if not isinstance(first, int):
        raise ValueError(f"named ports are not supported by this evaluator: {first!r}")
    last: int = entry.get("endPort", first)
    return first <= port <= last


def _rule_matches(rule: Mapping[str, Any], peers_key: str, policy_namespace: str, other: Mapping[str, Any],
                  port: int, protocol: str) -> bool:
    peers = rule.get(peers_key) or []  # absent or empty: every peer
    ports = rule.get("ports") or []  # absent or empty: every port
    return ((not peers or any(_peer_matches(p, policy_namespace, other) for p in peers))
            and (not ports or any(_port_matches(e, port, protocol) for e in ports)))


def policy_types(spec: Mapping[str, Any]) -> list[str]:
    """``spec.policyTypes``, or its default: Ingress always, Egress when there are egress rules."""
    return spec.get("policyTypes") or ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def _allowed(policies: list[dict[str, Any]], direction: str, namespace_labels: Mapping[str, str],
             pod_labels: Mapping[str, str], other: Mapping[str, Any], port: int, protocol: str) -> bool:
    if NAMESPACE_NAME_LABEL not in namespace_labels:
        raise ValueError(f"namespace_labels must hold {NAMESPACE_NAME_LABEL}")
    namespace = namespace_labels[NAMESPACE_NAME_LABEL]
    selecting = [p for p in policies
                 if p.get("kind", "NetworkPolicy") == "NetworkPolicy"
                 and p["metadata"].get("namespace") == namespace
                 and direction in policy_types(p["spec"])
                 and selector_matches(p["spec"].get("podSelector"), pod_labels)]
    if not selecting:
        return True
    rules_key, peers_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    return any(_rule_matches(rule, peers_key, namespace, other, port, protocol)
               for p in selecting for rule in p["spec"].get(rules_key) or [])


def admits(policies: list[dict[str, Any]], namespace_labels: dict[str, str], pod_labels: dict[str, str],
           from_pod: dict[str, Any] | None,
           port: int, protocol: str = "TCP") -> bool:
    """Whether ``policies`` admit traffic to ``port`` of a pod (``pod_labels``) in the
    namespace of ``namespace_labels``, which must hold ``kubernetes.io/metadata.name``.

    ``from_pod``: ``{"namespace": ..., "namespace_labels": {...}, "labels": {...}}`` for a pod
    (without ``namespace_labels``, the name label is implied), ``{"ip": "10.1.2.3"}`` for an
    address (matched by ipBlock peers only), or None for the pod's own node (kubelet probes,
    ``kubectl port-forward``), which NetworkPolicy always admits. Named ports raise
    ValueError."""
    if from_pod is None:
        return True
    return _allowed(policies, "Ingress", namespace_labels, pod_labels, from_pod, port, protocol)


def reaches(policies: list[dict[str, Any]], namespace_labels: dict[str, str], pod_labels: dict[str, str],
            to: dict[str, Any], port: int,
            protocol: str = "TCP") -> bool:
    """Whether ``policies`` let a pod (``pod_labels``, in the namespace of
    ``namespace_labels``) open traffic to ``to`` on ``port``: ``to`` is a pod, as
    ``admits``' ``from_pod``, or ``{"ip": ...}`` for an address (the node, a Service's
    ClusterIP, anything outside the cluster). Only the egress side: the destination's own
    ingress policies are ``admits``' question."""
    return _allowed(policies, "Egress", namespace_labels, pod_labels, to, port, protocol)
