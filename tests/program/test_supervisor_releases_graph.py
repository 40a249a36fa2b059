"""The Supervisor's releases check in the program, under Pulumi's mocks.

On vSphere 8/9 with ``clusterApi=cluster.x-k8s.io/v1beta1`` (stacks ``dev`` and ``full``) one
``SupervisorReleases`` resource reads the Supervisor at preview, and the whole vSphere layer
waits for it: a Supervisor that cannot serve the Cluster stops ``pulumi up`` before VM classes,
storage policies, namespace or file share are created. The paper's vSphere 7 stacks declare no
such check (``test_paper_stacks.py`` holds them to their record)."""
from __future__ import annotations

import pytest

from tests.program.graph import SECRETS, run_program

CHECK = "dynamic/cluster:SupervisorReleases"
LAYER = "dask-tkg:vsphere:Layer"
LIBRARY_CHECK = "dynamic/vsphere:SupervisorReleaseLibrary"
BUILT_BY_THE_LAYER = ("vsphere:index/virtualMachineClass:VirtualMachineClass", "dynamic/vsphere:StoragePolicy",
                      "vsphere:index/namespace:Namespace")


@pytest.fixture(scope="module", params=["dev", "full"])
def graph(request):
    g = run_program(request.param)
    assert g.error is None, g.traceback
    return g


def test_the_check_reads_the_supervisor_with_its_kubeconfig_for_the_settings_it_names(graph):
    (check,) = graph.of_type(CHECK)
    inputs = check.inputs
    assert inputs["kubeconfig"] == SECRETS["supervisorKubeconfig"]
    assert "__secret__" in str(check.raw["inputs"]["kubeconfig"])  # stays a secret
    (cluster,) = graph.of_type("kubernetes:cluster.x-k8s.io/v1beta1:Cluster")
    topology = cluster.manifest()["spec"]["topology"]  # the check asks for what the Cluster asks for
    assert (inputs["cluster_class"], inputs["class_namespace"]) == (topology["class"], topology["classNamespace"])
    assert inputs["tkr"] == topology["version"]
    assert inputs["access_key"] == "supervisorKubeconfig"
    gpu = [p for p in inputs["pools"] if p["role"] == "gpu"]
    assert gpu and all(p["os"] == "ubuntu" and p["key"].startswith("nodePools[") for p in gpu)
    assert all(p["os"] == "" for p in inputs["pools"] if p["role"] != "gpu")


def test_nothing_of_the_vsphere_layer_is_built_before_the_check(graph):
    (check,) = graph.of_type(CHECK)
    (layer,) = graph.of_type(LAYER)
    assert check.urn in layer.raw["dependencies"]
    built = [r for suffix in BUILT_BY_THE_LAYER for r in graph.of_type(suffix)]
    assert built and all(graph.depends_on(r, check) for r in built)


def test_the_library_is_asked_for_the_gpu_pools_ubuntu_image(graph):
    (library,) = graph.of_type(LIBRARY_CHECK)
    assert library.inputs["os_names"] == ["ubuntu"]


@pytest.mark.parametrize("stack", ["reference", "reference-dev"])
def test_the_papers_vsphere_7_stacks_declare_no_check(stack):
    g = run_program(stack)
    assert g.error is None, g.traceback
    assert not g.of_type(CHECK)
    (layer,) = g.of_type(LAYER)
    assert layer.raw["dependencies"] == []
