"""The rules on plain Kubernetes objects: the dataset claim, LoadBalancer exposure (with
its opt-in, from the stack's setting or the policy config) and pinned workload images."""
from __future__ import annotations

from typing import Any

import pytest

from policy.rules import container_images_pinned, dataset_claim_rwx_protected, no_public_load_balancer
from policy.rules.common import image_problem
from tests.policy.support import hand_made, inputs, resource_args, violations
from tests.program.graph import Graph

DIGEST = "sha256:" + "a" * 64


# --- dataset-pvc-rwx-protected -------------------------------------------------------------
def test_the_program_dataset_claim_passes(reference: Graph, reference_dev: Graph) -> None:
    for graph in (reference, reference_dev):
        claim = graph.named("storage-dataset")
        assert claim.raw["protect"] is True
        assert violations(dataset_claim_rwx_protected, resource_args(claim)) == []


def test_an_unprotected_dataset_claim_fails(reference: Graph) -> None:
    args = resource_args(reference.named("storage-dataset"), protect=False)
    assert args.opts.protect is False
    [message] = violations(dataset_claim_rwx_protected, args)
    assert "PersistentVolumeClaim 'external-nfs-pvc' (Pulumi resource 'storage-dataset')" in message
    assert "not protected" in message and "protect=True" in message


def test_a_read_write_once_dataset_claim_fails(reference: Graph) -> None:
    claim = reference.named("storage-dataset")
    props = inputs(claim)
    props["spec"]["accessModes"] = ["ReadWriteOnce"]
    [message] = violations(dataset_claim_rwx_protected, resource_args(claim, inputs=props))
    assert "['ReadWriteOnce']" in message and "ReadWriteMany" in message


def test_the_dataset_label_marks_a_claim_with_another_name(reference: Graph) -> None:
    props = inputs(reference.named("storage-dataset"))
    del props["metadata"]["name"]  # auto-named by Pulumi
    found = violations(dataset_claim_rwx_protected, hand_made("kubernetes:core/v1:PersistentVolumeClaim", props,
                                                              name="data-claim"))
    assert len(found) == 1 and "'data-claim'" in found[0]


def test_other_claims_need_no_protection(reference: Graph) -> None:
    pip_cache = reference.named("storage-pip-cache")
    assert pip_cache.raw["protect"] is False
    assert violations(dataset_claim_rwx_protected, resource_args(pip_cache)) == []


# --- no-public-load-balancer ---------------------------------------------------------------
def public_services(graph: Graph) -> list:
    return [s for s in graph.of_type("kubernetes:core/v1:Service") if s.inputs["spec"]["type"] == "LoadBalancer"]


def test_load_balancers_with_source_ranges_pass(reference: Graph) -> None:
    services = public_services(reference)
    assert [s.inputs["spec"]["loadBalancerSourceRanges"] for s in services] == [["172.16.105.0/24"]] * 2
    for service in services:
        assert violations(no_public_load_balancer, resource_args(service)) == []


def test_a_public_load_balancer_without_opt_in_fails(public_lb: Graph) -> None:
    services = public_services(public_lb)
    assert len(services) == 2 and all("loadBalancerSourceRanges" not in s.inputs["spec"] for s in services)
    for service in services:
        [message] = violations(no_public_load_balancer, resource_args(service))
        assert f"Service '{service.inputs['metadata']['name']}'" in message
        assert "no loadBalancerSourceRanges" in message and "allowPublicLoadBalancer=true" in message


def test_the_stack_setting_opts_in(public_lb: Graph, stack_config) -> None:
    stack_config(allowPublicLoadBalancer=True)
    for service in public_services(public_lb):
        assert violations(no_public_load_balancer, resource_args(service)) == []


def test_a_stack_setting_of_false_does_not_opt_in(public_lb: Graph, stack_config) -> None:
    stack_config(allowPublicLoadBalancer=False)
    assert all(violations(no_public_load_balancer, resource_args(s)) for s in public_services(public_lb))


def test_the_policy_config_opts_in(public_lb: Graph) -> None:
    for service in public_services(public_lb):
        args = resource_args(service, config={"allowPublicLoadBalancer": True})
        assert violations(no_public_load_balancer, args) == []


def test_the_policy_config_overrides_the_stack_opt_in(public_lb: Graph, stack_config) -> None:
    stack_config(allowPublicLoadBalancer=True)
    service = public_services(public_lb)[0]
    [message] = violations(no_public_load_balancer, resource_args(service, config={"allowPublicLoadBalancer": False}))
    assert "policy config allowPublicLoadBalancer=false overrides" in message


@pytest.mark.parametrize("ranges", [["0.0.0.0/0"], ["10.0.0.0/8", "::/0"], ["0.0.0.0/00"]])
def test_source_ranges_with_everyone_fail(reference: Graph, ranges: list[str]) -> None:
    service = public_services(reference)[0]
    props = inputs(service)
    props["spec"]["loadBalancerSourceRanges"] = ranges
    [message] = violations(no_public_load_balancer, resource_args(service, inputs=props))
    assert "include 0.0.0.0/0 or ::/0" in message


def test_the_legacy_source_ranges_annotation_counts(reference: Graph) -> None:
    service = public_services(reference)[0]
    props = inputs(service)
    del props["spec"]["loadBalancerSourceRanges"]
    props["metadata"]["annotations"] = {"service.beta.kubernetes.io/load-balancer-source-ranges": "10.1.0.0/16"}
    assert violations(no_public_load_balancer, resource_args(service, inputs=props)) == []


def test_cluster_ip_services_pass(reference: Graph) -> None:
    props = inputs(public_services(reference)[0])
    props["spec"]["type"] = "ClusterIP"
    del props["spec"]["loadBalancerSourceRanges"]
    assert violations(no_public_load_balancer, hand_made("kubernetes:core/v1:Service", props)) == []


def test_the_dask_charts_own_load_balancers_fail_without_opt_in(reference: Graph) -> None:
    release = reference.named("dask-release")
    assert violations(no_public_load_balancer, resource_args(release)) == []
    props = inputs(release)
    props["values"]["__secret__"]["scheduler"]["serviceType"] = "LoadBalancer"
    [message] = violations(no_public_load_balancer, resource_args(release, inputs=props))
    assert "scheduler.serviceType = LoadBalancer" in message and "cannot carry loadBalancerSourceRanges" in message
    assert violations(no_public_load_balancer,
                      resource_args(release, config={"allowPublicLoadBalancer": True}, inputs=props)) == []


# --- container-images-pinned ---------------------------------------------------------------
def test_the_data_job_image_is_pinned(reference: Graph, reference_dev: Graph) -> None:
    for graph in (reference, reference_dev):
        job = graph.named("dataset-job")
        image = job.inputs["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image.startswith("python:3.12.13-slim-trixie@sha256:")  # the default, by tag and digest
        assert violations(container_images_pinned, resource_args(job)) == []


@pytest.mark.parametrize("image, expected", [("python", "has no tag"), ("python:latest", "moving tag 'latest'"),
                                             ("registry.lab:5000/tools/python", "has no tag"),
                                             ("python:3.12 slim", "not a valid image reference")])
def test_unpinned_job_images_fail(reference: Graph, image: str, expected: str) -> None:
    job = reference.named("dataset-job")
    props = inputs(job)
    props["spec"]["template"]["spec"]["containers"][0]["image"] = image
    [message] = violations(container_images_pinned, resource_args(job, inputs=props))
    assert "Job 'dataset-prepare' (Pulumi resource 'dataset-job'): container 'prepare'" in message
    assert expected in message and "Fix:" in message


def test_digests_pin_images(reference: Graph) -> None:
    job = reference.named("dataset-job")
    props = inputs(job)
    props["spec"]["template"]["spec"]["containers"][0]["image"] = f"registry.lab:5000/python@{DIGEST}"
    assert violations(container_images_pinned, resource_args(job, inputs=props)) == []


def test_every_workload_kind_and_container_list_is_checked() -> None:
    pod = {"initContainers": [{"name": "init", "image": "busybox:latest"}],
           "containers": [{"name": "c", "image": "nginx"}]}
    cases: dict[str, dict[str, Any]] = {
        "kubernetes:core/v1:Pod": {"spec": pod},
        "kubernetes:apps/v1:Deployment": {"spec": {"template": {"spec": pod}}},
        "kubernetes:apps/v1:DaemonSet": {"spec": {"template": {"spec": pod}}},
        "kubernetes:batch/v1:CronJob": {"spec": {"jobTemplate": {"spec": {"template": {"spec": pod}}}}},
        "kubernetes:apps/v1:StatefulSetPatch": {"spec": {"template": {"spec": pod}}},
    }
    for resource_type, props in cases.items():
        assert len(violations(container_images_pinned, hand_made(resource_type, props))) == 2, resource_type


def test_a_patch_that_keeps_the_image_passes() -> None:
    props = {"spec": {"template": {"spec": {"containers": [{"name": "c", "env": []}]}}}}
    assert violations(container_images_pinned, hand_made("kubernetes:batch/v1:JobPatch", props)) == []


def test_image_references() -> None:
    assert image_problem("nvcr.io/nvidia/rapidsai/rapidsai:21.10-cuda11.2-runtime-ubuntu20.04") is None
    assert image_problem(f"python:3.12@{DIGEST}") is None
    assert image_problem("localhost:5000/dask:2024.1.0") is None
    assert "no tag" in (image_problem("localhost:5000/dask") or "")
    assert "names no image" in (image_problem(None) or "")
