"""TKG 1.20's PodSecurityPolicy admission against the program's own release and bindings.

The cluster runs ``--enable-admission-plugins=NodeRestriction,PodSecurityPolicy`` with the
two policies TKG ships (tests.cluster.kube). The Dask release is installed by Helm with the
values the program builds for the reference stack, unchanged: its ReplicaSets must be
refused pods (``FailedCreate``: ``PodSecurityPolicy: unable to admit pod``) until the
program's RoleBinding for the namespace exists, and then create them under the policy that
binding grants.
"""
from __future__ import annotations

from tests.artifacts import DASK_CHART, artifact_path
from tests.cluster import helm
from tests.cluster.kube import (
    delete_namespace,
    events,
    in_namespace,
    install_tkg_pod_security,
    pods,
    wait_default_service_account,
    wait_for,
)
from tests.cluster.program import declared_stack
from tests.kube.rest import api_request, apply_manifest

REFUSED = "unable to admit pod"


def test_the_release_is_refused_without_the_programs_binding_and_admitted_with_it(kube_cluster):
    api = kube_cluster.api_client
    stack = declared_stack("reference")
    ns = stack.dask_namespace
    namespace = next(o for o in stack.of_kind("Namespace") if o["metadata"]["name"] == ns)
    declared = in_namespace(stack.objects, "RoleBinding", ns)
    # the pod security binding, and the runner's own (its Role names no pod security policy)
    assert sorted(b["roleRef"]["name"] for b in declared) == ["dask-runner", "psp:vmware-system-restricted"]
    bindings = [b for b in declared if b["roleRef"]["kind"] == "ClusterRole"]
    install_tkg_pod_security(api)
    apply_manifest(api, namespace)
    try:
        wait_default_service_account(api, ns)
        helm.install(kube_cluster, "dask", artifact_path(DASK_CHART), ns, stack.dask_release["values"])
        deployments = api_request(api, "GET", f"/apis/apps/v1/namespaces/{ns}/deployments")["items"]
        expected_pods = sum(d["spec"]["replicas"] for d in deployments)
        assert {d["metadata"]["name"] for d in deployments} == {"dask-scheduler", "dask-worker", "dask-jupyter"}

        def refused_replicasets():
            refused = {e["involvedObject"]["name"].rsplit("-", 1)[0] for e in events(api, ns)
                       if e["reason"] == "FailedCreate" and REFUSED in e["message"]}
            return refused if refused == {d["metadata"]["name"] for d in deployments} else None

        wait_for("FailedCreate (PodSecurityPolicy) for every ReplicaSet", refused_replicasets, 60)
        assert pods(api, ns) == []

        for binding in bindings:
            apply_manifest(api, binding)
        admitted = wait_for(f"{expected_pods} pods admitted", lambda: (lambda p: p if len(p) >= expected_pods
                                                                       else None)(pods(api, ns)), 120)
        # TKG's restricted policy: the pods run as non-root without escalation or capabilities
        assert {p["metadata"]["annotations"].get("kubernetes.io/psp") for p in admitted} == {
            "vmware-system-restricted"}
    finally:
        delete_namespace(api, ns)

