"""Which OS image each node pool asks the release for: the same as the manifests ask
(``GPU_POOL_OS_ANNOTATION``, Ubuntu 22.04, on GPU machineDeployments of a Cluster;
``UBUNTU_ANNOTATION`` on the whole v1alpha3 TanzuKubernetesCluster), so the preview checks cannot drift from what is
deployed."""
from __future__ import annotations

from components.cluster.manifests import GPU_POOL_OS_ANNOTATION, capi_cluster_manifest
from components.cluster.os_images import ANY, UBUNTU, library_os_names, pool_os_needs, pool_os_versions
from tests.unit.support import load_current as load_with


def test_gpu_pools_of_a_cluster_ask_for_exactly_the_pools_the_manifest_annotates():
    spec = load_with().cluster
    deployments = capi_cluster_manifest(spec, "ns")["spec"]["topology"]["workers"]["machineDeployments"]
    annotated = [d.get("metadata", {}).get("annotations") == GPU_POOL_OS_ANNOTATION for d in deployments]
    assert [wants == UBUNTU for _key, _name, wants in pool_os_needs(spec)] == annotated
    # by version too: Ubuntu 22.04, what the GPU operator is validated on with VKS
    assert pool_os_versions(spec) == ["22.04" if a else ANY for a in annotated]
    assert any(annotated) and UBUNTU == "ubuntu"
    assert [key for key, _, _ in pool_os_needs(spec)] == [f"nodePools[{i}]" for i in range(len(deployments))]
    assert library_os_names(spec) == ["ubuntu"]


def test_a_v1alpha3_cluster_asks_ubuntu_for_every_pool_and_v1alpha2_for_none():
    v3 = load_with(clusterApi="run.tanzu.vmware.com/v1alpha3", tkr="v1.26.5---vmware.2-fips.1-tkg.1").cluster
    assert {wants for *_, wants in pool_os_needs(v3)} == {UBUNTU} and set(pool_os_versions(v3)) == {ANY}
    paper = load_with(vsphereVersion=7, supervisorId="", clusterApi="run.tanzu.vmware.com/v1alpha2",
                      tkr="v1.20.8---vmware.1-tkg.2").cluster
    assert {wants for *_, wants in pool_os_needs(paper)} == {ANY} and library_os_names(paper) == []
