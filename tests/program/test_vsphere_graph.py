"""The vSphere half of the graph under Pulumi's mocks, with the paper's values."""
from __future__ import annotations

import pytest

from components.settings.vsan import RAID1, RAID56
from tests.program.graph import SECRETS, run_program


@pytest.fixture(scope="module")
def graph():
    g = run_program("reference")
    assert g.error is None, g.traceback
    return g


def test_vgpu_vm_class(graph):
    (vm_class,) = graph.of_type("vsphere:index/virtualMachineClass:VirtualMachineClass")
    assert vm_class.inputs["name"] == "16cpu-64gram-ts-20c-vmxnet3"
    assert (vm_class.inputs["cpus"], vm_class.inputs["memory"]) == (16, 65536)
    assert vm_class.inputs["memoryReservation"] == 100
    assert vm_class.inputs["vgpuDevices"] == ["grid_a100-20c"]


def test_storage_policies_carry_their_vsan_rules(graph):
    policies = {r.inputs["policy_name"]: r.inputs["rules"] for r in graph.of_type("dynamic/vsphere:VsanStoragePolicy")}
    assert policies == {
        "vsan-r5": {"hostFailuresToTolerate": 1, "replicaPreference": RAID56},
        "vsan-r1-sw8": {"hostFailuresToTolerate": 1, "replicaPreference": RAID1, "stripeWidth": 8},
    }


def test_content_library_subscribes_to_the_tkr_feed(graph):
    (library,) = graph.of_type("vsphere:index/contentLibrary:ContentLibrary")
    assert library.inputs["subscription"]["subscriptionUrl"] == "https://wp-content.vmware.com/v2/latest/lib.json"
    assert library.inputs["storageBackings"] == ["datastore-12"]


def test_namespace_offers_policies_classes_and_library(graph):
    (ns,) = graph.of_type("dynamic/vsphere:SupervisorNamespace")
    assert ns.inputs["namespace"] == "dask" and ns.inputs["cluster"] == "domain-c8"
    assert sorted(s["policy"] for s in ns.inputs["storage_specs"]) == ["pbm-vsan-r1-sw8", "pbm-vsan-r5"]
    assert ns.inputs["vm_classes"] == ["16cpu-64gram-ts-20c-vmxnet3", "best-effort-medium", "best-effort-large",
                                       "best-effort-xlarge", "best-effort-2xlarge"]
    # TKRs come from the Supervisor's library, not the namespace's VM-service libraries (item 5).
    assert ns.inputs.get("content_libraries") in (None, [])


def test_the_supervisors_tkr_library_is_checked_for_the_clusters_tkr(graph):
    (check,) = graph.of_type("dynamic/vsphere:SupervisorTkrLibrary")
    assert (check.inputs["cluster"], check.inputs["tkr"]) == ("domain-c8", "v1.20.8---vmware.1-tkg.2")
    assert check.inputs["library_id"] == "vsphere-library-library-id" and check.inputs["set_library"] is False
    (ns,) = graph.of_type("dynamic/vsphere:SupervisorNamespace")
    assert graph.depends_on(ns, check)


def test_supervisor_set_tkr_library_and_an_existing_library_by_name():
    g = run_program("reference", config={"supervisorSetTkrLibrary": True, "contentLibraryExisting": True})
    assert g.error is None, g.traceback
    assert not g.of_type("vsphere:index/contentLibrary:ContentLibrary")  # looked up, not created
    (check,) = g.of_type("dynamic/vsphere:SupervisorTkrLibrary")
    assert check.inputs["set_library"] is True and check.inputs["library_id"] == "library-tkg-content-library"


def test_namespace_depends_on_policies_and_vm_classes(graph):
    (ns,) = graph.of_type("dynamic/vsphere:SupervisorNamespace")
    for dep in [*graph.of_type("dynamic/vsphere:VsanStoragePolicy"),
                *graph.of_type("vsphere:index/virtualMachineClass:VirtualMachineClass"),
                *graph.of_type("vsphere:index/contentLibrary:ContentLibrary")]:
        assert graph.depends_on(ns, dep), dep.name


def test_file_share_is_protected_and_uses_the_r1_sw8_policy(graph):
    (share,) = graph.of_type("dynamic/vsphere:VsanFileShare")
    assert share.raw["protect"] and share.raw["retain_on_delete"]
    assert (share.inputs["share_name"], share.inputs["quota_gib"], share.inputs["policy_id"]) == (
        "ml-share", 2048, "pbm-vsan-r1-sw8")


def test_every_vsphere_resource_sits_under_the_layer(graph):
    (layer,) = graph.of_type("dask-tkg:vsphere:Layer")
    for r in graph.resources:
        if r.type.startswith(("vsphere:index", "pulumi-python:dynamic")):
            assert layer in graph.ancestors(r), r.name


def test_vcenter_password_reaches_dynamic_providers_only_as_a_secret(graph):
    for r in graph.of_type("pulumi-python:dynamic"):
        assert r.raw["inputs"]["password"] == {"__secret__": SECRETS["vsphere:password"]}, r.name


def test_namespace_on_vsphere_8_uses_the_vsphere_namespace_resource():
    g = run_program("reference", config={"vsphereVersion": 8, "supervisorId": "supervisor-1",
                                          "clusterApi": "run.tanzu.vmware.com/v1alpha3",
                                          "tkr": "v1.21.6---vmware.1-tkg.1"})
    assert g.error is None, g.traceback
    (ns,) = g.of_type("vsphere:index/namespace:Namespace")
    assert ns.inputs["supervisor"] == "supervisor-1"
    assert sorted(ns.inputs["storagePolicies"]) == ["pbm-vsan-r1-sw8", "pbm-vsan-r5"]
    assert not g.of_type("dynamic/vsphere:SupervisorNamespace")


def test_missing_vgpu_profile_fails_before_anything_is_created():
    g = run_program("reference", mock={"vgpu_profiles": {"vxrail-esxi-03.vxrail.example": ["grid_a100-10c"]}})
    assert g.error and "VgpuProfileMissing" in g.error
    assert "vxrail-esxi-03.vxrail.example" in g.error and "grid_a100-20c" in g.error
    assert "grid_a100-10c" in g.error  # says what the host does offer
    assert not [r for r in g.resources if r.raw["custom"] and not r.type.startswith("pulumi:providers")]


def test_existing_nfs_export_needs_no_file_share():
    g = run_program("reference", config={"fileShareMode": "existing", "nfsServer": "10.0.0.5", "nfsPath": "/export/ml"})
    assert g.error is None, g.traceback
    assert not g.of_type("dynamic/vsphere:VsanFileShare")
    assert (g.outputs["nfsServer"], g.outputs["nfsPath"]) == ("10.0.0.5", "/export/ml")


def test_invalid_setting_fails_the_program_naming_the_key():
    g = run_program("reference", config={"gpuWorkers": 12})
    assert g.error and "SettingsError" in g.error and "dask-tkg:gpuWorkers" in g.error
    assert not g.resources


def test_file_share_domain_and_nfs_address_reach_the_share():
    g = run_program("reference", config={"fileShareDomain": "fs.corp.example", "fileShareNfsAddress": "ip"})
    assert g.error is None, g.traceback
    (share,) = g.of_type("dynamic/vsphere:VsanFileShare")
    assert (share.inputs["domain_name"], share.inputs["nfs_address"]) == ("fs.corp.example", "ip")
