"""The preview check of what a vSphere 8 Supervisor serves (TanzuKubernetesReleases), against the current stacks'
real kube-apiserver 1.33 holding the upstream CRDs and objects shaped like a Supervisor's. VKS 3.4+'s
KubernetesReleases: ``test_supervisor_kubernetes_releases.py``.

CRDs (pinned artifacts, installed unchanged but for the one noted in ``supervisor_stand_in.tanzu_release_crds``):
Cluster API v1.10.10's ClusterClass (namespaced, ``cluster.x-k8s.io/v1beta1``) and
tanzu-framework@2bcc114e's TanzuKubernetesRelease and OSImage (cluster-scoped,
``run.tanzu.vmware.com/v1alpha3``: ``spec.osImages``, ``spec.os.name``, conditions
``Ready``/``Compatible`` with ``reason``/``message``, set here through the status subresource
as the Supervisor's TKR controller does). ``SupervisorReleasesProvider.check`` is run with a
kubeconfig for this server, exactly as ``pulumi preview`` runs it.
"""
from __future__ import annotations

import copy

import pytest

from components.cluster.providers.supervisor_releases import SupervisorReleasesProvider
from tests.apiserver.supervisor_stand_in import (
    condition,
    kubeconfig,
    kubernetes_release_crd,
    os_image,
    tanzu_release_crds,
)
from tests.kube.crds import install_crd, uninstall_crd
from tests.kube.rest import apply_manifest, delete_object, patch_status

pytestmark = pytest.mark.apiserver

CLASS_NAMESPACE = "vmware-system-vks-public"
CLASSES = ("builtin-generic-v3.1.0", "builtin-generic-v3.4.0")  # what this Supervisor publishes
GOOD = "v1.32.3---vmware.1-fips-vkr.2"  # Ready, Compatible, Photon and Ubuntu images
PHOTON_ONLY = "v1.31.4---vmware.1-fips-vkr.3"  # Ready, Compatible, only a Photon image
NOT_READY = "v1.33.1---vmware.1-fips-vkr.1"
NOT_COMPATIBLE = "v1.20.8---vmware.1-tkg.2"
ABSENT = "v1.34.0---vmware.1-fips-vkr.1"
UBUNTU_2404 = "v1.33.6---vmware.1-fips-vkr.2"  # Ready, Compatible, Photon and Ubuntu 24.04 images (VKS 3.4's samples)
# The Compatible condition a vSphere 8 Supervisor gives a 1.20 TKR (reason and message made up
# in the style of tanzu-framework's TKR controller).
INCOMPATIBLE = {"reason": "NotCompatibleWithSupervisor", "message": "TKR v1.20.8 is not supported by TKG Service 3.4"}
NOT_READY_WHY = {"reason": "MissingOSImage", "message": "OSImage vmi-ubuntu-1331 is not yet available"}
POOLS = [{"key": "nodePools[0]", "name": "gpu-worker", "role": "gpu", "os": "ubuntu", "os_version": "22.04"},
         {"key": "nodePools[1]", "name": "cpu-worker", "role": "cpu", "os": "", "os_version": ""}]


def release(api, name: str, images: list[str], ready: dict, compatible: dict) -> None:
    k8s = name.split("---")[0] + "+vmware.1"
    obj = apply_manifest(api, {
        "apiVersion": "run.tanzu.vmware.com/v1alpha3", "kind": "TanzuKubernetesRelease", "metadata": {"name": name},
        "spec": {"version": name.replace("---", "+"), "kubernetes": {"version": k8s},
                 "osImages": [{"name": image} for image in images]}})
    patch_status(api, obj, {"conditions": [ready, compatible]})


@pytest.fixture(scope="module")
def supervisor(kube_apiserver, capi_crds):
    """The Supervisor's objects: two builtin classes, five releases, their OS images. A vSphere 8
    Supervisor's: no KubernetesRelease API, and no release another module's Supervisor left."""
    api = kube_apiserver.api_client
    for crd in (kubernetes_release_crd(), *tanzu_release_crds()):
        uninstall_crd(api, crd["metadata"]["name"])
    for crd in tanzu_release_crds():
        install_crd(api, crd)
    apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CLASS_NAMESPACE}},
                   update_existing=True)
    for name in CLASSES:
        apply_manifest(api, {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "ClusterClass",
                             "metadata": {"name": name, "namespace": CLASS_NAMESPACE}, "spec": {}},
                       update_existing=True)
    for name, os_name, version in (("vmi-photon-1323", "photon", "5"), ("vmi-ubuntu-1323", "ubuntu", "22.04"),
                                   ("vmi-photon-1314", "photon", "5"), ("vmi-photon-1331", "photon", "5"),
                                   ("vmi-photon-1336", "photon", "5"), ("vmi-ubuntu-1336", "ubuntu", "24.04")):
        apply_manifest(api, os_image(name, os_name, version, "v1.32.3+vmware.1"), update_existing=True)
    ok = (condition("Ready", "True"), condition("Compatible", "True"))
    release(api, GOOD, ["vmi-photon-1323", "vmi-ubuntu-1323"], *ok)
    release(api, PHOTON_ONLY, ["vmi-photon-1314"], *ok)
    release(api, UBUNTU_2404, ["vmi-photon-1336", "vmi-ubuntu-1336"], *ok)
    release(api, NOT_READY, ["vmi-photon-1331", "vmi-ubuntu-1331"], condition("Ready", "False", NOT_READY_WHY), ok[1])
    release(api, NOT_COMPATIBLE, [], ok[0], condition("Compatible", "False", INCOMPATIBLE))
    return kube_apiserver


def props(server, **overrides) -> dict:
    values = {"kubeconfig": kubeconfig(server), "access_key": "supervisorKubeconfig",
              "cluster_class": "builtin-generic-v3.4.0", "class_namespace": CLASS_NAMESPACE, "tkr": GOOD,
              "pools": copy.deepcopy(POOLS)}
    values.update(overrides)
    return values


def failures(server, **overrides) -> list[tuple[str, str]]:
    result = SupervisorReleasesProvider().check({}, props(server, **overrides))
    return [(f.property, f.reason) for f in result.failures]


def test_a_supervisor_that_serves_the_class_the_release_and_its_images_passes(supervisor):
    assert failures(supervisor) == []
    # the kubeconfig the fixture writes names its CA by file: read that way too
    assert failures(supervisor, kubeconfig=supervisor.kubeconfig.read_text()) == []


def test_a_class_the_supervisor_does_not_serve_is_refused_naming_cluster_class(supervisor):
    [(key, why)] = failures(supervisor, cluster_class="builtin-generic-v3.5.0")
    assert key == "clusterClass"
    assert (f"does not serve ClusterClass builtin-generic-v3.5.0 in namespace {CLASS_NAMESPACE} (GET "
            f"/apis/cluster.x-k8s.io/v1beta1/namespaces/{CLASS_NAMESPACE}/clusterclasses/builtin-generic-v3.5.0"
            " -> HTTP 404)") in why
    assert f"namespace {CLASS_NAMESPACE} has: builtin-generic-v3.1.0, builtin-generic-v3.4.0" in why
    [(_, other)] = failures(supervisor, class_namespace="vmware-system-tkg")
    assert "namespace vmware-system-tkg has: no ClusterClass" in other


def test_the_unversioned_class_is_not_looked_for(supervisor):
    """``tanzukubernetescluster`` lives in each vSphere Namespace, created later by the program."""
    assert failures(supervisor, cluster_class="tanzukubernetescluster") == []


def test_a_missing_release_is_refused_listing_the_usable_ones(supervisor):
    [(key, why)] = failures(supervisor, tkr=ABSENT)
    assert key == "tkr"
    assert f"TanzuKubernetesRelease {ABSENT} is not on the Supervisor" in why
    assert f"/apis/run.tanzu.vmware.com/v1alpha3/tanzukubernetesreleases/{ABSENT} -> HTTP 404" in why
    assert why.endswith(f"Ready and Compatible there: {PHOTON_ONLY}, {GOOD}, {UBUNTU_2404}")


def test_a_release_not_compatible_is_refused_with_the_supervisors_reason(supervisor):
    [(key, why)] = failures(supervisor, tkr=NOT_COMPATIBLE)
    assert key == "tkr"
    assert (f"TanzuKubernetesRelease {NOT_COMPATIBLE} is not Compatible (Compatible=False: "
            "NotCompatibleWithSupervisor; TKR v1.20.8 is not supported by TKG Service 3.4)") in why
    assert f"Ready and Compatible there: {PHOTON_ONLY}, {GOOD}" in why


def test_a_release_not_ready_is_refused_with_the_supervisors_reason(supervisor):
    [(key, why)] = failures(supervisor, tkr=NOT_READY)
    assert key == "tkr"
    assert (f"TanzuKubernetesRelease {NOT_READY} is not Ready (Ready=False: MissingOSImage; "
            "OSImage vmi-ubuntu-1331 is not yet available)") in why


def test_a_gpu_pool_on_a_release_without_ubuntu_is_refused_naming_the_pool(supervisor):
    [(key, why)] = failures(supervisor, tkr=PHOTON_ONLY)
    assert key == "nodePools[0]"
    assert (f"node pool gpu-worker (role gpu) needs an ubuntu 22.04 OS image of TanzuKubernetesRelease {PHOTON_ONLY}"
            " (tkr), which offers: photon 5 (vmi-photon-1314)") in why


def test_a_gpu_pool_on_a_release_without_ubuntu_2204_is_refused_naming_the_pool_and_tkr(supervisor):
    """Ubuntu, but 24.04 only (what VKS 3.4 resolves os-name=ubuntu to for 1.33): the GPU
    operator is validated on 22.04 only, so the pool asks for it by version and is refused here."""
    [(key, why)] = failures(supervisor, tkr=UBUNTU_2404)
    assert key == "nodePools[0]"
    assert (f"needs an ubuntu 22.04 OS image of TanzuKubernetesRelease {UBUNTU_2404} (tkr), which offers: photon 5"
            " (vmi-photon-1336), ubuntu 24.04 (vmi-ubuntu-1336)") in why
    assert "validated on VKS with Ubuntu 22.04 only" in why
    # a pool asking for Ubuntu by name alone (the paper's way) takes it
    assert failures(supervisor, tkr=UBUNTU_2404, pools=[{**POOLS[0], "os_version": ""}, POOLS[1]]) == []


def test_every_refusal_is_reported_at_once(supervisor):
    found = failures(supervisor, cluster_class="builtin-generic-v3.5.0", tkr=PHOTON_ONLY)
    assert [key for key, _ in found] == ["clusterClass", "nodePools[0]"]


def test_a_kubeconfig_that_may_not_read_names_the_setting_it_came_from(supervisor):
    """bob has a token but no role: the API answers 403, which is no verdict on the Supervisor."""
    [(key, why)] = failures(supervisor, kubeconfig=kubeconfig(supervisor, supervisor.users["bob"]),
                            access_key="supervisorServer")
    assert key == "supervisorServer"
    assert "cannot check what the Supervisor serves" in why and "HTTP 403" in why


def test_the_programs_check_refuses_then_passes_through_the_sdk_host(supervisor):
    """The dev stack's resource as ``pulumi preview``/``up`` run it: its serialized provider in the
    SDK's own dynamic-provider host (a fresh interpreter), only the kubeconfig replaced by this
    server's and ``tkr`` set to a release this Supervisor publishes only midway (then removes)."""
    from tests.program.graph import run_program
    from tests.program.provider_host import ProviderHost

    graph = run_program("dev")
    [check] = graph.of_type("dynamic/cluster:SupervisorReleases")
    tkr = "v1.33.9---vmware.1-fips-vkr.9"
    news = {**check.inputs, "kubeconfig": kubeconfig(supervisor), "tkr": tkr}
    with ProviderHost() as host:
        _, refused = host.check(check.urn, {}, news)
        assert [key for key, _ in refused] == ["tkr"]
        assert f"TanzuKubernetesRelease {tkr} is not on the Supervisor" in refused[0][1]

        ok = (condition("Ready", "True"), condition("Compatible", "True"))
        release(supervisor.api_client, tkr, ["vmi-photon-1323", "vmi-ubuntu-1323"], *ok)
        try:
            checked, passed = host.check(check.urn, {}, news)
        finally:  # the other tests list the Supervisor's usable releases
            delete_object(supervisor.api_client, "run.tanzu.vmware.com/v1alpha3", "TanzuKubernetesRelease", tkr)
        assert passed == []
        id_, outs = host.create(check.urn, checked)
        assert "kubeconfig" not in outs and outs["tkr"] == tkr
        # a fresh login token (a new kubeconfig) is no change; another release is
        assert not host.diff(id_, check.urn, outs, {**news, "kubeconfig": kubeconfig(supervisor, "other")}).changes
        assert host.diff(id_, check.urn, outs, {**news, "tkr": GOOD}).changes
