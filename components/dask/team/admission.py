"""What the cluster's own admission refuses in a person's namespace, whoever asks: the person
(their DaskCluster, DaskWorkerGroup, DaskJob) or the Dask operator (the Deployments, pods and
Services it makes of them with its own rights). Pure builders of plain manifests
(components/dask/team/team.py declares them; tests/apiserver applies them to a real 1.33 server).

ValidatingAdmissionPolicy (``admissionregistration.k8s.io/v1``, GA in Kubernetes 1.30: CEL the
API server evaluates itself, no webhook to run or to fail open), bound to the namespaces that
carry the team label (``team_access.LABELS``; a person cannot label namespaces). Three policies,
each refusal a message that names its rule (``dask-tkg team rule <name>: ...``):

- ``dask-tkg-team-pods``: every pod spec an object holds (a Pod, a workload's template, the
  scheduler's and workers' specs of the Dask resources: dask-kubernetes-operator 2026.3.0's CRDs
  type them as pod specs, and the controller copies them into Deployments unchanged):
  no ``nodeName`` (placing a pod past the scheduler, on a control-plane node); no
  ``priorityClassName`` (``system-node-critical`` is admitted in any namespace since Kubernetes
  1.17, kubernetes#76310, and preempts everyone's GPU workers); tolerations only of the keys the
  namespace's parameters list (the GPU pools' taints; an ``operator: Exists`` without a key
  tolerates every taint) and the not-ready/unreachable ones the DefaultTolerationSeconds plugin
  adds to every pod; no ``runtimeClassName`` and no ``NVIDIA_*`` variable nor ``envFrom`` (a
  Secret the person writes could carry one): the GPUs a container sees come from the device
  plugin's allocation alone (the toolkit refuses the variable too: addons/values.py); no generic
  ephemeral volume (it makes the controller create claims the person may not create, on any
  class: the RWX class holds the dataset and the environment; scratch is ``emptyDir``).
- ``dask-tkg-team-services``: a Service, or the scheduler Service a DaskCluster or DaskJob
  describes (the controller copies ``spec.scheduler.service`` verbatim): ``ClusterIP`` only (a
  LoadBalancer or NodePort publishes the scheduler's unauthenticated HTTP API and uses up the
  Supervisor's addresses) and no ``externalIPs`` (CVE-2020-8554: capturing traffic for any
  address, the file service's included).
- ``dask-tkg-team-lifetime``: a DaskCluster's (and a DaskJob's cluster's) ``idleTimeout`` set,
  above 0 and at most the person's own (``users`` ``idleTimeout``), read from the namespace's
  parameter ConfigMap (``PARAMS``), which the person may not write; an idle timeout of 0 in
  ``users`` (kept for ever) lets them choose any. No finalizer on a Dask resource but the
  operator's own (kopf's): one of the person's would keep a deleted cluster, and what it owns,
  past the team's reclaimer (components/dask/team/reclaim.py).

The Pod Security level of the namespace (``restricted``) is the server's own admission too
(``pod_security.GuestNamespace``'s label).
"""
from __future__ import annotations

from typing import Any

from components.dask.team.access import LABELS

API_VERSION = "admissionregistration.k8s.io/v1"
PARAMS = "dask-team-limits"  # the ConfigMap of parameters in each person's namespace
RULE_PREFIX = "dask-tkg team rule"
TEAM_SELECTOR = {"matchLabels": {"app.kubernetes.io/component": LABELS["app.kubernetes.io/component"]}}
# Tolerations the DefaultTolerationSeconds admission plugin adds to every pod (NoExecute, 300 s)
DEFAULT_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
WRITES = ["CREATE", "UPDATE"]
DASK_GROUP = "kubernetes.dask.org"

# The pod specs an object holds, by kind (``object`` is dynamic: one expression serves every kind)
POD_SPECS = (
    "object.kind == 'Pod' ? [object.spec] : "
    "object.kind in ['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job'] ? [object.spec.template.spec] : "
    "object.kind == 'CronJob' ? [object.spec.jobTemplate.spec.template.spec] : "
    "object.kind == 'DaskCluster' ? [object.spec.scheduler.spec, object.spec.worker.spec] : "
    "object.kind == 'DaskWorkerGroup' ? [object.spec.worker.spec] : "
    "object.kind == 'DaskJob' ? [object.spec.job.spec, object.spec.cluster.spec.scheduler.spec, "
    "object.spec.cluster.spec.worker.spec] : []"
)
CONTAINERS = ("variables.specs.map(s, (has(s.initContainers) ? s.initContainers : [])"
              " + (has(s.containers) ? s.containers : []) + (has(s.ephemeralContainers) ? s.ephemeralContainers : []))")
SERVICE_SPECS = (
    "object.kind == 'Service' ? [object.spec] : "
    "object.kind == 'DaskCluster' ? [object.spec.scheduler.service] : "
    "object.kind == 'DaskJob' ? [object.spec.cluster.spec.scheduler.service] : []"
)
CLUSTER_SPECS = (
    "object.kind == 'DaskCluster' ? [object.spec] : object.kind == 'DaskJob' ? [object.spec.cluster.spec] : []"
)


def _rule(name: str, expression: str, message: str) -> dict[str, str]:
    return {"expression": expression, "message": f"{RULE_PREFIX} {name}: {message}", "reason": "Forbidden"}


POD_RULES = [
    _rule("no-node-name", "variables.specs.all(s, !has(s.nodeName) || s.nodeName == '')",
          "a pod may not name its node (spec.nodeName): the scheduler places it"),
    _rule("no-priority-class", "variables.specs.all(s, !has(s.priorityClassName) || s.priorityClassName == '')",
          "a pod may not set spec.priorityClassName: it could preempt others' GPU workers"),
    _rule("pool-tolerations-only",
          "variables.specs.all(s, !has(s.tolerations) || s.tolerations.all(t, has(t.key) && t.key != '' && ("
          "t.key in params.data.tolerationKeys.split(',') || "
          "(t.key in " + repr(list(DEFAULT_TOLERATIONS)) + " && has(t.effect) && t.effect == 'NoExecute'))))",
          "a pod may tolerate only the GPU pools' taints (spec.tolerations: a key of this namespace's "
          f"{PARAMS} tolerationKeys, never an empty key)"),
    _rule("no-runtime-class", "variables.specs.all(s, !has(s.runtimeClassName) || s.runtimeClassName == '')",
          "a pod may not choose its runtime (spec.runtimeClassName): GPUs come from the device plugin alone"),
    _rule("no-nvidia-variables",
          "variables.containers.all(cs, cs.all(c, !has(c.env) || c.env.all(e, !e.name.startsWith('NVIDIA_'))))",
          "a container may not set NVIDIA_* variables (env): GPUs come from the device plugin alone"),
    _rule("no-env-from", "variables.containers.all(cs, cs.all(c, !has(c.envFrom) || size(c.envFrom) == 0))",
          "a container may not take variables from a Secret or ConfigMap (envFrom)"),
    _rule("no-ephemeral-volumes",
          "variables.specs.all(s, !has(s.volumes) || s.volumes.all(v, !has(v.ephemeral)))",
          "a pod may not ask for ephemeral volume claims (volumes[].ephemeral): scratch is emptyDir"),
]
SERVICE_RULES = [
    _rule("cluster-ip-only", "variables.services.all(v, !has(v.type) || v.type == 'ClusterIP')",
          "a Service must be of type ClusterIP (a person reaches their scheduler by port-forward)"),
    _rule("no-external-ips", "variables.services.all(v, !has(v.externalIPs) || size(v.externalIPs) == 0)",
          "a Service may not claim externalIPs (CVE-2020-8554)"),
]
LIFETIME_RULES = [
    _rule("operator-finalizers-only",
          "!has(object.metadata.finalizers) || object.metadata.finalizers.all(f, f.startsWith('kopf.zalando.org/'))",
          "a Dask resource may carry no finalizer but the operator's (kopf.zalando.org/...): it could keep a deleted"
          " cluster's pods and GPUs"),
    _rule("idle-timeout",
          "params.data.idleTimeout == '0' || variables.clusters.all(c, has(c.idleTimeout) && c.idleTimeout > 0 && "
          "c.idleTimeout <= int(params.data.idleTimeout))",
          f"a Dask cluster's idleTimeout must be set, above 0 and at most this namespace's ({PARAMS} idleTimeout)"),
]


def _policy(name: str, resources: list[dict[str, Any]], variables: list[dict[str, str]],
            validations: list[dict[str, str]], params: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": r["groups"], "apiVersions": ["*"], "operations": WRITES,
                                                "resources": r["resources"]} for r in resources]},
        "variables": variables, "validations": validations}
    if params:
        spec["paramKind"] = {"apiVersion": "v1", "kind": "ConfigMap"}
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": dict(LABELS)}, "spec": spec}


def policies() -> list[dict[str, Any]]:
    """The three policies (module docstring)."""
    dask = {"groups": [DASK_GROUP], "resources": ["daskclusters", "daskworkergroups", "daskjobs"]}
    return [
        _policy("dask-tkg-team-pods", [
            {"groups": [""], "resources": ["pods"]},
            {"groups": ["apps"], "resources": ["deployments", "replicasets", "statefulsets", "daemonsets"]},
            {"groups": ["batch"], "resources": ["jobs", "cronjobs"]}, dask],
            [{"name": "specs", "expression": POD_SPECS}, {"name": "containers", "expression": CONTAINERS}],
            POD_RULES, params=True),
        _policy("dask-tkg-team-services", [{"groups": [""], "resources": ["services"]},
                                           {"groups": [DASK_GROUP], "resources": ["daskclusters", "daskjobs"]}],
                [{"name": "services", "expression": SERVICE_SPECS}], SERVICE_RULES, params=False),
        _policy("dask-tkg-team-lifetime", [dask],
                [{"name": "clusters", "expression": CLUSTER_SPECS}], LIFETIME_RULES, params=True),
    ]


def binding(policy: dict[str, Any]) -> dict[str, Any]:
    """The policy bound to the team's namespaces, denying; a policy with parameters reads the
    request's namespace's ``PARAMS`` ConfigMap, and denies where it is missing."""
    name = policy["metadata"]["name"]
    spec: dict[str, Any] = {"policyName": name, "validationActions": ["Deny"],
                            "matchResources": {"namespaceSelector": TEAM_SELECTOR}}
    if "paramKind" in policy["spec"]:
        spec["paramRef"] = {"name": PARAMS, "parameterNotFoundAction": "Deny"}
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": dict(LABELS)}, "spec": spec}


def params(namespace: str, idle_timeout: int, toleration_keys: tuple[str, ...]) -> dict[str, Any]:
    """A person's parameters: their idle timeout (seconds; 0 = their clusters may live for ever)
    and the taint keys their pods may tolerate (the GPU pools')."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": PARAMS, "namespace": namespace, "labels": dict(LABELS)},
            "data": {"idleTimeout": str(idle_timeout), "tolerationKeys": ",".join(toleration_keys)}}
