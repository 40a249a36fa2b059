"""The rules on the Dask Helm release: one GPU per worker, placement, one pinned image,
no well-known Jupyter password. Each passes on what the program builds and fails on a
bad case made from the program's own release."""
from __future__ import annotations

import hashlib

import pytest
from argon2 import PasswordHasher
from pulumi_policy import ResourceValidationArgs

from policy.rules import gpu_worker_one_gpu, jupyter_no_default_password, one_pinned_image, scheduler_jupyter_off_gpu
from policy.rules.passwords import CHART_DEFAULT_HASH, password_problem
from tests.policy.support import hand_made, inputs, resource_args, violations
from tests.program.graph import Graph

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
ARGON2 = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)  # cheap to make; verified the same way
GPU_SELECTOR = {"dask-tkg.io/pool-role": "gpu"}


def release_with(graph: Graph, change) -> ResourceValidationArgs:
    """Args of the program's Dask release after ``change(values)`` edits its values."""
    release = graph.named("dask-release")
    props = inputs(release)
    change(props["values"]["__secret__"])
    return resource_args(release, inputs=props)


# --- dask-gpu-worker-one-gpu -------------------------------------------------------------
def test_one_gpu_per_worker_passes_on_the_program(reference: Graph, topology_b: Graph) -> None:
    for graph in (reference, topology_b):
        assert violations(gpu_worker_one_gpu, resource_args(graph.named("dask-release"))) == []


def test_two_gpus_per_worker_fail(reference: Graph) -> None:
    def two(values):
        for kind in ("limits", "requests"):
            values["worker"]["resources"][kind]["nvidia.com/gpu"] = 2

    [message] = violations(gpu_worker_one_gpu, release_with(reference, two))
    assert "Helm release 'dask' (Pulumi resource 'dask-release')" in message
    assert "worker.resources.limits asks for 2" in message and "exactly 1" in message
    assert "workerGpus=1" in message


def test_a_gpu_worker_without_a_gpu_fails(reference: Graph) -> None:
    def none(values):
        for kind in ("limits", "requests"):
            del values["worker"]["resources"][kind]["nvidia.com/gpu"]

    [message] = violations(gpu_worker_one_gpu, release_with(reference, none))
    assert "requests no nvidia.com/gpu" in message


def test_gpu_request_unlike_the_limit_fails(reference: Graph) -> None:
    def unequal(values):
        values["worker"]["resources"]["requests"]["nvidia.com/gpu"] = "2"

    [message] = violations(gpu_worker_one_gpu, release_with(reference, unequal))
    assert "worker.resources.requests asks for '2'" in message and "to be equal" in message


def test_a_cpu_worker_group_is_not_a_gpu_worker(reference: Graph) -> None:
    def cpu_only(values):
        worker = values["worker"]
        worker["image"]["dask_worker"] = "dask-worker"
        worker["nodeSelector"] = {"dask-tkg.io/pool-role": "cpu"}
        for kind in ("limits", "requests"):
            del worker["resources"][kind]["nvidia.com/gpu"]

    assert violations(gpu_worker_one_gpu, release_with(reference, cpu_only)) == []


def test_the_rapidsai_wrapper_chart_is_checked_under_its_dask_key() -> None:
    values = {"dask": {"worker": {"image": {"dask_worker": "dask-cuda-worker"},
                                  "resources": {"limits": {"nvidia.com/gpu": 2}}}}}
    [message] = violations(gpu_worker_one_gpu, hand_made(RELEASE_TYPE, {"chart": "rapidsai", "values": values}))
    assert "dask.worker.resources.limits" in message


def test_other_charts_are_left_alone(reference: Graph) -> None:
    for name in ("gpu-operator-release", "storage-provisioner"):
        for policy in (gpu_worker_one_gpu, scheduler_jupyter_off_gpu, one_pinned_image, jupyter_no_default_password):
            assert violations(policy, resource_args(reference.named(name))) == []


# --- dask-scheduler-jupyter-off-gpu-nodes ----------------------------------------------------
def test_placement_passes_on_the_program(reference: Graph, topology_b: Graph) -> None:
    b = topology_b.named("dask-release").inputs["values"]
    assert b["jupyter"]["nodeSelector"] == GPU_SELECTOR  # topology B: Jupyter with a GPU on a GPU node
    for graph in (reference, topology_b):
        assert violations(scheduler_jupyter_off_gpu, resource_args(graph.named("dask-release"))) == []


def test_scheduler_on_gpu_nodes_fails(reference: Graph) -> None:
    def on_gpu(values):
        values["scheduler"]["nodeSelector"] = dict(GPU_SELECTOR)

    [message] = violations(scheduler_jupyter_off_gpu, release_with(reference, on_gpu))
    assert "scheduler.nodeSelector selects the GPU nodes" in message and "Fix:" in message


def test_cpu_jupyter_on_gpu_nodes_fails(reference: Graph) -> None:
    def on_gpu(values):
        values["jupyter"]["nodeSelector"] = dict(GPU_SELECTOR)

    [message] = violations(scheduler_jupyter_off_gpu, release_with(reference, on_gpu))
    assert "jupyter.nodeSelector" in message and "jupyterGpu=true" in message


def test_required_node_affinity_to_gpu_nodes_fails(reference: Graph) -> None:
    def affinity(values):
        values["scheduler"]["nodeSelector"] = {}
        values["scheduler"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "dask-tkg.io/pool-role", "operator": "In", "values": ["gpu"]}]}]}}}

    assert len(violations(scheduler_jupyter_off_gpu, release_with(reference, affinity))) == 1


def test_a_disabled_jupyter_may_select_anything(reference: Graph) -> None:
    def disabled(values):
        values["jupyter"]["enabled"] = False
        values["jupyter"]["nodeSelector"] = dict(GPU_SELECTOR)

    assert violations(scheduler_jupyter_off_gpu, release_with(reference, disabled)) == []


# --- dask-one-pinned-image -----------------------------------------------------------------
def test_one_pinned_image_passes_on_the_program(reference: Graph, reference_dev: Graph) -> None:
    for graph in (reference, reference_dev):
        assert violations(one_pinned_image, resource_args(graph.named("dask-release"))) == []


@pytest.mark.parametrize("tag, expected", [("latest", "moving tag 'latest'"), ("", "has no tag")])
def test_unpinned_images_fail(reference: Graph, tag: str, expected: str) -> None:
    def unpinned(values):
        for component in ("scheduler", "worker", "jupyter"):
            values[component]["image"]["tag"] = tag

    found = violations(one_pinned_image, release_with(reference, unpinned))
    assert len(found) == 3 and all(expected in m and "daskImage" in m for m in found)


def test_different_images_fail(reference: Graph) -> None:
    def mixed(values):
        values["jupyter"]["image"]["tag"] = "22.02-cuda11.5-runtime-ubuntu20.04"

    [message] = violations(one_pinned_image, release_with(reference, mixed))
    assert "run different images" in message and "jupyter=nvcr.io/nvidia/rapidsai/rapidsai:22.02" in message


def test_a_missing_image_runs_the_chart_default_and_fails(reference: Graph) -> None:
    def missing(values):
        del values["jupyter"]["image"]

    [message] = violations(one_pinned_image, release_with(reference, missing))
    assert "jupyter.image.repository is not set" in message


# --- jupyter-no-default-password -----------------------------------------------------------
def test_the_generated_password_hash_passes(reference: Graph, reference_dev: Graph) -> None:
    for graph in (reference, reference_dev):
        assert violations(jupyter_no_default_password, resource_args(graph.named("dask-release"))) == []


def _salted(algorithm: str, password: str, salt: str = "0123456789ab") -> str:
    h = hashlib.new(algorithm)
    h.update(password.encode() + salt.encode())
    return f"{algorithm}:{salt}:{h.hexdigest()}"


@pytest.mark.parametrize("password, expected", [
    pytest.param(CHART_DEFAULT_HASH, "the dask chart's default hash", id="chart-default"),
    pytest.param(None, "sets no password", id="unset"),
    pytest.param(_salted("sha1", "rapidsai"), "sha1 hash of the password 'rapidsai'", id="sha1-rapidsai"),
    pytest.param(_salted("sha256", "dask"), "sha256 hash of the password 'dask'", id="sha256-dask"),
    pytest.param("argon2:" + ARGON2.hash("dask"), "argon2 hash of the password 'dask'", id="argon2-dask"),
    pytest.param("argon2:" + ARGON2.hash(""), "argon2 hash of an empty password", id="argon2-empty"),
    pytest.param("correct-horse-battery", "is not a Jupyter password hash", id="plain-text"),
])
def test_well_known_and_plain_passwords_fail(reference: Graph, password, expected: str) -> None:
    def set_password(values):
        if password is None:
            del values["jupyter"]["password"]
        else:
            values["jupyter"]["password"] = password

    [message] = violations(jupyter_no_default_password, release_with(reference, set_password))
    assert expected in message and "jupyter.password" in message and "Fix:" in message
    if password and not password.startswith(("sha", "argon2")):
        assert password not in message  # a secret is never echoed


def test_hashes_of_other_passwords_pass() -> None:
    assert password_problem(_salted("sha1", "a-long-generated-one")) is None
    assert password_problem("argon2:" + ARGON2.hash("a-long-generated-one")) is None
    assert "not an argon2 hash" in (password_problem("argon2:nonsense") or "")


def test_the_chart_default_is_sha1_of_dask() -> None:
    algorithm, salt, digest = CHART_DEFAULT_HASH.split(":")
    assert hashlib.new(algorithm, b"dask" + salt.encode()).hexdigest() == digest
