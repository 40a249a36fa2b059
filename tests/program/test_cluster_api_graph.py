"""The program under mocks on the current platform (vSphere 8 U3 / VCF 9): each current stack
(Pulumi.dev.yaml, Pulumi.full.yaml: Pulumi.yaml's defaults) declares one Cluster API Cluster
on a VMware ClusterClass and no TanzuKubernetesCluster; the paper's stack keeps its
TanzuKubernetesCluster."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.program.graph import run_program

REPO = Path(__file__).resolve().parents[2]

VKR = "v1.33.6---vmware.1-fips-vkr.2"
CURRENT = {"vsphereVersion": 8, "supervisorId": "domain-c8", "clusterApi": "cluster.x-k8s.io/v1beta1", "tkr": VKR}


# stack, vSphere version -> (control plane, GPU and CPU workers, namespace, cluster name)
CURRENT_STACKS = {
    ("dev", 8): (1, 2, 1, "dask-dev", "vks-dask-dev"),
    ("dev", 9): (1, 2, 1, "dask-dev", "vks-dask-dev"),
    ("full", 8): (3, 8, 2, "dask", "vks-dask"),  # the paper's topology: 3 + 8 vGPU + 2
}


@pytest.fixture(scope="module", params=list(CURRENT_STACKS), ids=lambda p: f"{p[0]}-vsphere{p[1]}")
def graph(request):
    stack, version = request.param
    g = run_program(stack, config={"vsphereVersion": version})
    assert g.error is None, g.traceback
    g.expected = CURRENT_STACKS[request.param]
    return g


def test_one_cluster_on_the_class_and_no_tkc(graph):
    control_plane, gpu, cpu, namespace, _ = graph.expected
    assert graph.of_type("TanzuKubernetesCluster") == []
    (cluster,) = graph.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster")
    m = cluster.manifest()
    topology = m["spec"]["topology"]
    assert (topology["class"], topology["version"]) == ("builtin-generic-v3.4.0", VKR)
    assert topology["controlPlane"]["replicas"] == control_plane
    pools = {d["name"]: d for d in topology["workers"]["machineDeployments"]}
    assert (pools["gpu-worker"]["replicas"], pools["cpu-worker"]["replicas"]) == (gpu, cpu)
    gpu_overrides = {v["name"]: v["value"] for v in pools["gpu-worker"]["variables"]["overrides"]}
    assert gpu_overrides["vmClass"] == "16cpu-64gram-ts-20c-vmxnet3"
    assert pools["gpu-worker"]["metadata"]["annotations"] == {"run.tanzu.vmware.com/resolve-os-image":
                                                             "os-name=ubuntu,os-version=22.04"}
    volumes = {v["name"]: v for v in gpu_overrides["volumes"]}
    assert (volumes["containerd"]["capacity"], volumes["kubelet"]["capacity"]) == ("100Gi", "50Gi")
    assert m["metadata"]["namespace"] == namespace


def test_the_defaults_install_todays_add_ons(graph):
    releases = {Path(r.inputs["chart"]).name for r in graph.of_type("Release")}  # the pinned archives
    assert {"gpu-operator-v26.7.0.tgz", "dask-kubernetes-operator-2026.3.0.tgz"} <= releases
    (dask_cluster,) = graph.of_type("kubernetes:kubernetes.dask.org/v1:DaskCluster")
    worker = dask_cluster.manifest()["spec"]["worker"]["spec"]["containers"][0]
    assert worker["image"].startswith("python:3.11.15-slim-trixie@sha256:")
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert "EXTRA_PIP_PACKAGES" not in env  # the prepared environment (tests/program/test_worker_environment.py)
    mounts = {m["name"]: m["mountPath"] for m in worker["volumeMounts"]}
    assert mounts["environment"] == "/opt/dask-env" and "pip-cache" not in mounts
    assert not [w for w in graph.warnings if "cannot drive" in w or "out of support" in w], graph.warnings


def test_the_guest_provider_reads_the_kubeconfig_cluster_api_writes(graph):
    *_, namespace, name = graph.expected
    (cluster,) = graph.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster")
    secret = graph.named("tkc-kubeconfig")
    assert secret.raw["read"] and secret.raw["id"] == f"{namespace}/{name}-kubeconfig"
    assert graph.depends_on(secret, cluster)
    assert graph.depends_on(graph.named("guest"), secret)


def test_the_papers_stack_still_declares_its_tkc():
    g = run_program("reference")
    assert g.error is None, g.traceback
    (tkc,) = g.of_type("TanzuKubernetesCluster")
    assert tkc.manifest()["apiVersion"] == "run.tanzu.vmware.com/v1alpha2"
    assert g.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster") == []


def test_the_papers_stack_says_once_what_is_out_of_support():
    g = run_program("reference")
    notices = [w for w in g.warnings if w.startswith("out of support today")]
    assert len(notices) == 1, g.warnings
    (notice,) = notices
    for part in ("vSphere 7", "TKR v1.20.8---vmware.1-tkg.2", "GPU operator v1.9.1",
                 "policy/v1beta1 PodSecurityPolicy", "node.k8s.io/v1beta1 RuntimeClass"):
        assert part in notice, notice
    doc, section = re.search(r'see (docs/[\w/]+\.md), "([^"]+)"', notice).groups()
    assert f"\n## {section}\n" in (REPO / doc).read_text(encoding="utf-8"), notice


def test_the_current_platform_cluster_is_not_called_out_of_support(graph):
    notices = [w for w in graph.warnings if w.startswith("out of support today")]
    # the GPU operator default stays v1.9.1 until the add-ons follow the platform
    assert all("end of general support" not in n and "TKR" not in n for n in notices), notices


def test_the_papers_stack_says_once_that_the_runner_cannot_drive_its_image():
    g = run_program("reference")
    notices = [w for w in g.warnings if "cannot drive" in w]
    assert len(notices) == 1, g.warnings
    (notice,) = notices
    for part in ("Python 3.8", "Dask 2021.09.1", "Python 3.11", "Dask 2026.7.1", "daskBackend operator",
                 "workerEnvironment prepared", "daskImage python:3.11.15-slim-trixie@sha256:",
                 "daskImageDaskVersion 2026.7.1", "extraPipPackages \"\""):
        assert part in notice, notice


def test_the_gpu_operator_of_the_paper_is_refused_on_todays_kubernetes():
    g = run_program("dev", config={"gpuOperatorVersion": "v1.9.1", "licenseTokenInConfigMap": True})
    assert g.error is not None
    for part in ("gpuOperatorVersion", "v1.9.1", "policy/v1beta1 PodSecurityPolicy", "Kubernetes 1.33",
                 f"tkr {VKR}", "v26.7.0"):
        assert part in g.error, g.error
