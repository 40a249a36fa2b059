"""The preview check of what a VKS 3.4+ Supervisor serves: its releases as KubernetesReleases
(``kubernetes.vmware.com/v1alpha1``, ``kubectl get kr``), against the current stacks' real
kube-apiserver 1.33.

The KubernetesRelease CRD is derived (``supervisor_stand_in.kubernetes_release_crd`` says from
what); the OSImage CRD is tanzu-framework's pinned file, as the TKR one is. As on such a
Supervisor both release APIs are served: each KubernetesRelease may also be mirrored as a
TanzuKubernetesRelease labelled ``kubernetes.vmware.com/kubernetesrelease``, and the check must
read the KubernetesRelease. A Supervisor serving neither API is refused with both named.
"""
from __future__ import annotations

import pytest

from components.cluster.providers.supervisor_releases import SupervisorReleasesProvider
from tests.apiserver.supervisor_stand_in import (
    KR_API,
    condition,
    kubeconfig,
    kubernetes_release,
    kubernetes_release_crd,
    os_image,
    tanzu_release_crds,
)
from tests.kube.crds import install_crd, uninstall_crd
from tests.kube.rest import api_request, apply_manifest, patch_status

pytestmark = pytest.mark.apiserver

CLASS_NAMESPACE = "vmware-system-vks-public"
CLASS = "builtin-generic-v3.4.0"
GOOD = "v1.33.6---vmware.1-fips-vkr.2"  # Ready, Compatible; Photon, Ubuntu 22.04 and 24.04 images
UBUNTU_2404 = "v1.34.2---vmware.2-vkr.2"  # Ready, Compatible; Photon and Ubuntu 24.04 images only
NOT_READY = "v1.35.0---vmware.1-vkr.1"  # not Ready as a KubernetesRelease; its TKR mirror says Ready
INCOMPATIBLE = "v1.31.4---vmware.1-fips-vkr.3"
ABSENT = "v1.36.2---vmware.2-vkr.3"
NOT_READY_WHY = {"reason": "ImagesNotAvailable", "message": "the release's OVAs are not yet in the content library"}
INCOMPATIBLE_WHY = {"reason": "NotCompatibleWithVKS", "message": "VKr 1.31 is not supported by VKS 3.6"}
IMAGES = {  # name: (os, version, the Kubernetes version an OSImage carries: the release's without -vkr.N)
    "vmi-photon-1336": ("photon", "5", "v1.33.6+vmware.1-fips"),
    "vmi-ubuntu2204-1336": ("ubuntu", "22.04", "v1.33.6+vmware.1-fips"),
    "vmi-ubuntu2404-1336": ("ubuntu", "24.04", "v1.33.6+vmware.1-fips"),
    "vmi-photon-1342": ("photon", "5", "v1.34.2+vmware.2"),
    "vmi-ubuntu2404-1342": ("ubuntu", "24.04", "v1.34.2+vmware.2"),
}
POOLS = [{"key": "nodePools[0]", "name": "gpu-worker", "role": "gpu", "os": "ubuntu", "os_version": "22.04"},
         {"key": "nodePools[1]", "name": "cpu-worker", "role": "cpu", "os": "", "os_version": ""}]
KR_CRD = kubernetes_release_crd()["metadata"]["name"]
TKR_CRD = "tanzukubernetesreleases.run.tanzu.vmware.com"


def publish_kr(api, name: str, ready: dict, compatible: dict) -> None:
    obj = apply_manifest(api, kubernetes_release(name), update_existing=True)
    patch_status(api, obj, {"conditions": [ready, compatible]})


def mirror_as_tkr(api, name: str) -> None:
    """The TKR VKS keeps beside a KubernetesRelease (listed by ``kubectl get tkr``), Ready here."""
    obj = apply_manifest(api, {
        "apiVersion": "run.tanzu.vmware.com/v1alpha3", "kind": "TanzuKubernetesRelease",
        "metadata": {"name": name, "labels": {"kubernetes.vmware.com/kubernetesrelease": name}},
        "spec": {"version": name.replace("---", "+"), "kubernetes": {"version": name.split("---")[0] + "+vmware.1"},
                 "osImages": [{"name": "vmi-photon-1336"}]}},
        update_existing=True)
    patch_status(api, obj, {"conditions": [condition("Ready", "True"), condition("Compatible", "True")]})


def publish(api) -> None:
    """A VKS 3.4+ Supervisor's objects: one class, four KubernetesReleases, their OS images."""
    for crd in (kubernetes_release_crd(), *tanzu_release_crds()):
        install_crd(api, crd)
    apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CLASS_NAMESPACE}},
                   update_existing=True)
    apply_manifest(api, {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "ClusterClass",
                         "metadata": {"name": CLASS, "namespace": CLASS_NAMESPACE}, "spec": {}}, update_existing=True)
    for name, (os_name, version, k8s) in IMAGES.items():
        apply_manifest(api, os_image(name, os_name, version, k8s), update_existing=True)
    ok = (condition("Ready", "True"), condition("Compatible", "True"))
    publish_kr(api, GOOD, *ok)
    publish_kr(api, UBUNTU_2404, *ok)
    publish_kr(api, NOT_READY, condition("Ready", "False", NOT_READY_WHY), ok[1])
    publish_kr(api, INCOMPATIBLE, ok[0], condition("Compatible", "False", INCOMPATIBLE_WHY))
    mirror_as_tkr(api, NOT_READY)


@pytest.fixture(scope="module")
def supervisor(kube_apiserver, capi_crds):
    publish(kube_apiserver.api_client)
    yield kube_apiserver
    uninstall_crd(kube_apiserver.api_client, KR_CRD)  # other modules' Supervisors are vSphere 8's


def failures(server, **overrides) -> list[tuple[str, str]]:
    props = {"kubeconfig": kubeconfig(server), "access_key": "supervisorKubeconfig", "cluster_class": CLASS,
             "class_namespace": CLASS_NAMESPACE, "tkr": GOOD, "pools": [dict(pool) for pool in POOLS], **overrides}
    result = SupervisorReleasesProvider().check({}, props)
    return [(f.property, f.reason) for f in result.failures]


def test_the_crd_serves_kr_as_kubectl_lists_it(supervisor):
    """What the derivation rests on holds on the server: ``kr`` names the resource and the
    table has the columns ``kubectl get kr`` prints."""
    api = supervisor.api_client
    listed = api_request(api, "GET", f"/apis/{KR_API}")
    [resource] = [r for r in listed["resources"] if r["name"] == "kubernetesreleases"]
    assert resource["shortNames"] == ["kr"] and resource["namespaced"] is False
    table = api_request(api, "GET", f"/apis/{KR_API}/kubernetesreleases/{GOOD}",
                        accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "VERSION", "READY", "COMPATIBLE", "CREATED"]
    assert table["rows"][0]["cells"][:4] == [GOOD, "v1.33.6+vmware.1-fips-vkr.2", "True", "True"]


def test_a_release_served_only_as_a_kubernetes_release_passes(supervisor):
    """GOOD has no TKR mirror: a check reading TanzuKubernetesReleases would find it missing."""
    assert failures(supervisor) == []


def test_a_missing_release_is_refused_naming_the_kubernetes_release_api(supervisor):
    [(key, why)] = failures(supervisor, tkr=ABSENT)
    assert key == "tkr"
    assert (f"KubernetesRelease {ABSENT} is not on the Supervisor ({supervisor.url}; GET "
            f"/apis/kubernetes.vmware.com/v1alpha1/kubernetesreleases/{ABSENT} -> HTTP 404)") in why
    assert why.endswith(f"Ready and Compatible there: {GOOD}, {UBUNTU_2404}")


def test_the_kubernetes_release_is_read_not_its_tkr_mirror(supervisor):
    """NOT_READY's TKR mirror says Ready; the KubernetesRelease says why it is not."""
    [(key, why)] = failures(supervisor, tkr=NOT_READY)
    assert key == "tkr"
    assert (f"KubernetesRelease {NOT_READY} is not Ready (Ready=False: ImagesNotAvailable; the release's OVAs are not"
            " yet in the content library)") in why


def test_an_incompatible_release_is_refused_with_the_supervisors_reason(supervisor):
    [(key, why)] = failures(supervisor, tkr=INCOMPATIBLE)
    assert key == "tkr"
    assert "is not Compatible (Compatible=False: NotCompatibleWithVKS; VKr 1.31 is not supported by VKS 3.6)" in why


def test_a_gpu_pool_needs_an_ubuntu_2204_image_of_the_releases_own_kubernetes_version(supervisor):
    """The OS images are those whose Kubernetes version is the release's: 1.33.6's Ubuntu 22.04
    image does not count for 1.34.2, which offers 24.04 only."""
    [(key, why)] = failures(supervisor, tkr=UBUNTU_2404)
    assert key == "nodePools[0]"
    assert (f"node pool gpu-worker (role gpu) needs an ubuntu 22.04 OS image of KubernetesRelease {UBUNTU_2404} (tkr),"
            " which offers: photon 5 (vmi-photon-1342), ubuntu 24.04 (vmi-ubuntu2404-1342)") in why
    assert failures(supervisor, tkr=UBUNTU_2404, pools=[{**POOLS[0], "os_version": ""}, POOLS[1]]) == []


def test_a_supervisor_serving_neither_release_api_is_refused_naming_both(supervisor):
    api = supervisor.api_client
    try:
        uninstall_crd(api, KR_CRD)
        uninstall_crd(api, TKR_CRD)
        [(key, why)] = failures(supervisor, access_key="supervisorServer")
    finally:
        publish(api)
    assert key == "supervisorServer"
    assert (f"the Supervisor ({supervisor.url}) serves no Kubernetes releases: neither kubernetes.vmware.com/v1alpha1"
            " KubernetesReleases (VKS 3.4 and later, `kubectl get kr`) nor run.tanzu.vmware.com/v1alpha3"
            " TanzuKubernetesReleases (vSphere 8 TKG Service, `kubectl get tkr`)") in why
    assert "is the vSphere Kubernetes Service running on it?" in why
