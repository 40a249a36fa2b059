"""A person's namespace, by its NetworkPolicies evaluated (``network_semantics``; the test
cluster's network plugin enforces none): the pods of every DaskCluster of the person, labelled
as dask-kubernetes' own controller labels them, reach each other as Dask needs, the operator
reaches their schedulers' dashboard; another person's pods, and the shared Dask namespace's,
reach nothing of theirs and are reached by nothing of theirs.
"""
from __future__ import annotations

from dask_kubernetes.operator.controller.controller import (
    build_job_pod_spec,
    build_scheduler_deployment_spec,
    build_worker_deployment_spec,
)

from components.dask import operator_spec
from components.kube.network_policy import DaskPodSelectors, NamespaceNetwork, Outside, dask_network_policies
from components.kube.network_semantics import admits, reaches

ALICE, BOB, SHARED, OPERATOR_NS = "dask-alice", "dask-bob", "rapidsai", "dask-operator"
NAME_LABEL = "kubernetes.io/metadata.name"
NETWORK = NamespaceNetwork(outside=Outside(excepted=("192.168.0.0/16", "10.96.0.0/12")), pod_cidr="192.168.0.0/16")
COMM, DASHBOARD, RANDOM_PORT = operator_spec.SCHEDULER_PORT, operator_spec.DASHBOARD_PORT, 40123


def person_policies(namespace: str) -> list[dict]:
    """What components/dask/team/person_space.py declares in a person's namespace."""
    return dask_network_policies(namespace, DaskPodSelectors.for_any_operator_cluster(), operator_namespace=OPERATOR_NS,
                                 network=NETWORK, name_prefix="dask")


def labels(cluster: str, namespace: str) -> dict[str, dict]:
    """The labels of a cluster's pods, from the controller's own builders."""
    scheduler = build_scheduler_deployment_spec(cluster, {}, {}, {})
    worker = build_worker_deployment_spec(f"{cluster}-default", namespace, cluster, "a1b2", {"containers": []}, {}, {})
    job = build_job_pod_spec("job", cluster, namespace, {"containers": []}, {}, {})
    return {"scheduler": dict(scheduler["spec"]["template"]["metadata"]["labels"]),
            "worker": dict(worker["spec"]["template"]["metadata"]["labels"]), "job": dict(job["metadata"]["labels"])}


def pod(pod_labels: dict, namespace: str) -> dict:
    return {"namespace": namespace, "namespace_labels": {NAME_LABEL: namespace}, "labels": pod_labels}


def admitted(namespace: str, target: dict, source: dict, port: int) -> bool:
    return admits(person_policies(namespace), {NAME_LABEL: namespace}, target, source, port)


def test_every_cluster_of_the_person_works_inside_their_namespace():
    for cluster in ("mine", "other-run"):
        p = labels(cluster, ALICE)
        assert admitted(ALICE, p["scheduler"], pod(p["worker"], ALICE), COMM)
        assert admitted(ALICE, p["worker"], pod(p["scheduler"], ALICE), RANDOM_PORT)
        assert admitted(ALICE, p["worker"], pod(p["worker"], ALICE), RANDOM_PORT)
        for port in (COMM, DASHBOARD):  # a DaskJob's runner is the scheduler's client
            assert admitted(ALICE, p["scheduler"], pod(p["job"], ALICE), port)
        assert admitted(ALICE, p["scheduler"], pod({"app.kubernetes.io/name": "dask-kubernetes-operator"}, OPERATOR_NS),
                        DASHBOARD)
        assert reaches(person_policies(ALICE), {NAME_LABEL: ALICE}, p["worker"], pod(p["scheduler"], ALICE), COMM)


def test_another_persons_pods_reach_nothing_of_hers():
    hers, his = labels("mine", ALICE), labels("mine", BOB)  # the same labels, another namespace
    for target in ("scheduler", "worker"):
        for source in ("scheduler", "worker", "job"):
            for port in (COMM, DASHBOARD, RANDOM_PORT):
                assert not admitted(ALICE, hers[target], pod(his[source], BOB), port), (target, source, port)


def test_her_pods_open_nothing_to_another_persons_or_the_shared_namespace():
    hers = labels("mine", ALICE)
    for namespace in (BOB, SHARED):
        theirs = labels("dask", namespace)
        for source in ("scheduler", "worker", "job"):
            for target in ("scheduler", "worker"):
                assert not reaches(person_policies(ALICE), {NAME_LABEL: ALICE}, hers[source],
                                   pod(theirs[target], namespace), COMM)


def test_the_shared_clusters_scheduler_refuses_her_workers():
    shared = dask_network_policies(SHARED, DaskPodSelectors.for_operator("dask", "dask"),
                                   operator_namespace=OPERATOR_NS,
                                   network=NETWORK, name_prefix="dask")
    scheduler = labels("dask", SHARED)["scheduler"]
    for source in labels("dask", ALICE).values():  # even a cluster she names like the shared one
        for port in (COMM, DASHBOARD):
            assert not admits(shared, {NAME_LABEL: SHARED}, scheduler, pod(source, ALICE), port)
