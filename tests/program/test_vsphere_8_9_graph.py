"""The vSphere layer on vSphere 8 and 9 under Pulumi's mocks.

There the releases come from the Supervisor's one Kubernetes-service library: no content
library is created, the Supervisor's (addressed by ``supervisorId``) is checked to hold
``tkr``. The namespace stays the ``vsphere.Namespace`` an existing vSphere 8 stack has, and
its access list and storage limits reach vCenter through ``NamespaceAccessAndLimits``.
"""
from __future__ import annotations

import pytest

from tests.program.graph import SECRETS, run_program

ACCESS = "role=EDIT,subjectType=GROUP,subject=data-science,domain=vsphere.local"
VSPHERE_8 = {"vsphereVersion": 8, "supervisorId": "domain-c8", "clusterApi": "run.tanzu.vmware.com/v1alpha3",
             "tkr": "v1.21.6---vmware.1-tkg.1", "namespaceAccess": [ACCESS]}
VSPHERE_9 = {"vsphereVersion": 9, "supervisorId": "domain-c8", "clusterApi": "cluster.x-k8s.io/v1beta1",
             "tkr": "v1.32.3---vmware.1-fips-vkr.2", "namespaceAccess": [ACCESS]}
VERSIONS = {"8": VSPHERE_8, "9": VSPHERE_9}
ONE_TIB_IN_MIB = 1024 * 1024  # Pulumi.dev.yaml: namespaceStorageLimits vsan-r5=1Ti, vsan-r1-sw8=1Ti

LIBRARY = "vsphere:index/contentLibrary:ContentLibrary"
RELEASE_CHECK = "dynamic/vsphere:SupervisorReleaseLibrary"
ACCESS_AND_LIMITS = "dynamic/vsphere:NamespaceAccessAndLimits"
NAMESPACE = "vsphere:index/namespace:Namespace"


@pytest.fixture(scope="module", params=sorted(VERSIONS))
def config(request) -> dict:
    return VERSIONS[request.param]


@pytest.fixture(scope="module")
def graph(config):
    g = run_program("dev", config=config)
    assert g.error is None, g.traceback
    return g


def test_no_content_library_is_created(graph):
    assert not graph.of_type(LIBRARY)
    assert not graph.of_type("dask-tkg:vsphere:ContentLibrary")
    assert not graph.of_type("dynamic/vsphere:SupervisorTkrLibrary")


def test_the_supervisors_library_is_checked_for_the_release(graph, config):
    (check,) = graph.of_type(RELEASE_CHECK)
    assert (check.inputs["supervisor"], check.inputs["tkr"]) == ("domain-c8", config["tkr"])
    assert (check.inputs["library_id"], check.inputs["set_library"]) == ("", False)
    (namespace,) = graph.of_type(NAMESPACE)
    assert graph.depends_on(namespace, check)  # a Supervisor without the release stops before the namespace


def test_the_vsphere_namespace_resource_is_kept_as_vsphere_8_stacks_have_it(graph):
    """Same URN and inputs as before this change: an existing vSphere 8 namespace is neither
    replaced nor updated."""
    (namespace,) = graph.of_type(NAMESPACE)
    assert namespace.urn == ("urn:pulumi:dev::dask-tkg::dask-tkg:vsphere:Namespace$vsphere:index/namespace:"
                             "Namespace::vsphere-namespace-ns")
    assert {k: v for k, v in namespace.inputs.items() if not k.startswith("__")} == {
        "name": "dask-dev",
        "supervisor": "domain-c8",
        "storagePolicies": ["pbm-vsan-r5", "pbm-vsan-r1-sw8"],
        "vmServices": [{"vmClasses": ["16cpu-64gram-ts-20c-vmxnet3", "best-effort-medium", "best-effort-large",
                                      "best-effort-xlarge", "best-effort-2xlarge"]}],
    }
    assert not graph.of_type("dynamic/vsphere:SupervisorNamespace")


def test_the_access_list_and_limits_reach_vcenter(graph):
    (settings,) = graph.of_type(ACCESS_AND_LIMITS)
    (namespace,) = graph.of_type(NAMESPACE)
    assert (settings.inputs["namespace"], settings.inputs["supervisor"]) == ("dask-dev", "domain-c8")
    assert settings.inputs["access_list"] == [
        {"subject_type": "GROUP", "subject": "data-science", "domain": "vsphere.local", "role": "EDIT"}]
    assert sorted(settings.inputs["storage_limits"], key=lambda s: s["policy"]) == [
        {"policy": "pbm-vsan-r1-sw8", "limit": ONE_TIB_IN_MIB}, {"policy": "pbm-vsan-r5", "limit": ONE_TIB_IN_MIB}]
    # What vsphere.Namespace holds: a change there (its update drops the limits) re-applies them.
    assert settings.inputs["namespace_spec"]["storage_policies"] == ["pbm-vsan-r5", "pbm-vsan-r1-sw8"]
    assert graph.depends_on(settings, namespace)
    (component,) = graph.of_type("dask-tkg:vsphere:Namespace")
    assert settings.parent == component.urn


def test_vcenter_password_reaches_the_new_resources_only_as_a_secret(graph):
    for kind in (RELEASE_CHECK, ACCESS_AND_LIMITS):
        (resource,) = graph.of_type(kind)
        assert resource.raw["inputs"]["password"] == {"__secret__": SECRETS["vsphere:password"]}, kind


def test_without_access_or_limits_the_namespace_is_all_there_is():
    g = run_program("dev", config={**VSPHERE_8, "namespaceAccess": [], "namespaceStorageLimits": []})
    assert g.error is None, g.traceback
    assert g.of_type(NAMESPACE) and not g.of_type(ACCESS_AND_LIMITS)


def test_set_tkr_library_on_vsphere_8_points_at_an_existing_library_without_creating_one():
    g = run_program("dev", config={**VSPHERE_8, "supervisorSetTkrLibrary": True})
    assert g.error is None, g.traceback
    assert not g.of_type(LIBRARY)
    (check,) = g.of_type(RELEASE_CHECK)
    assert (check.inputs["set_library"], check.inputs["library_id"]) == (True, "library-tkg-content-library")


def test_vsphere_7_declares_none_of_the_vsphere_8_resources():
    g = run_program("reference")
    assert g.error is None, g.traceback
    assert not g.of_type(RELEASE_CHECK) and not g.of_type(ACCESS_AND_LIMITS) and not g.of_type(NAMESPACE)
    (_library,) = g.of_type(LIBRARY)
    (check,) = g.of_type("dynamic/vsphere:SupervisorTkrLibrary")
    assert check.inputs["library_id"] == "vsphere-library-library-id"
