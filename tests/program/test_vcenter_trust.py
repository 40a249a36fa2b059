"""The whole program under the mocks (issue 37, item 9): ``vcenterCaPem`` reaches every dynamic
vCenter resource (their sessions verify against it), and ``vsphere:allowUnverifiedSsl``
warns at preview, naming what goes unchecked."""
from __future__ import annotations

from tests.program.graph import run_program

PEM = "-----BEGIN CERTIFICATE-----\nMIIBvcenter\n-----END CERTIFICATE-----\n"


def test_every_dynamic_vcenter_resource_verifies_against_the_vcenter_ca():
    graph = run_program("reference", config={"vcenterCaPem": PEM})
    assert graph.error is None, graph.traceback
    dynamic = [r for r in graph.resources if r.type.startswith("pulumi-python:dynamic/vsphere:")]
    assert len(dynamic) >= 4
    for resource in dynamic:
        assert resource.inputs["ca_pem"] == PEM, resource.name


def test_allow_unverified_ssl_is_refused_unless_acknowledged_and_then_warns_at_preview():
    # (the harness gives a supervisorKubeconfig: the Supervisor login's part is tests/unit/test_vcenter_trust.py's)
    refused = run_program("reference", config={"vsphere:allowUnverifiedSsl": "true"})
    assert "dask-tkg:acknowledgeUnverifiedTls" in str(refused.error), refused.traceback
    graph = run_program("reference", config={"vsphere:allowUnverifiedSsl": "true", "acknowledgeUnverifiedTls": True})
    assert graph.error is None, graph.traceback
    [warning] = [w for w in graph.warnings if w.startswith("vsphere:allowUnverifiedSsl is true:")]
    assert "vCenter's certificate goes unchecked for the vSphere provider" in warning
    assert "and for the program's own vCenter sessions (set vcenterCaPem)" in warning
    assert not [w for w in run_program("reference").warnings if "allowUnverifiedSsl" in w]


def test_nothing_of_the_vsphere_layer_is_built_before_the_privilege_check():
    for stack, config in (("reference", {}), ("reference", {"vsphereVersion": 8, "supervisorId": "supervisor-1",
                                                            "clusterApi": "run.tanzu.vmware.com/v1alpha3",
                                                            "tkr": "v1.21.6---vmware.1-tkg.1"})):
        graph = run_program(stack, config=config)
        assert graph.error is None, graph.traceback
        [check] = [r for r in graph.resources if r.type == "pulumi-python:dynamic/vsphere:VCenterPrivileges"]
        built = [r for r in graph.resources if r.type.startswith(("vsphere:index", "pulumi-python:dynamic/vsphere:"))
                 and r is not check and not r.raw.get("read")]
        assert len(built) >= 5
        for resource in built:
            assert graph.depends_on(resource, check), resource.name
        needs = check.inputs["needs"]
        assert needs["cluster"] == {"Namespaces.Configure": ["Supervisor namespace"],
                                    "Host.Config.Storage": ["vSAN file share"]}
        # the content library only on vSphere 7, where the program subscribes one
        assert ("datastore" in needs) == (config.get("vsphereVersion", 7) == 7)
        assert check.inputs["at_preview"] is True


def test_the_current_stack_checks_the_hosts_vgpu_manager_and_the_papers_does_not():
    """The hosts' vGPU Manager is read at preview for each esxiHosts entry against vgpuDriverVersion
    (components/vsphere/providers/vgpu_manager.py; tests/vcenter/test_vgpu_manager.py runs it on the
    simulator); the VM classes wait for it. The paper's vSphere 7 stack declares no such check."""
    graph = run_program("dev")
    [check] = graph.of_type("VgpuManagerCheck")
    assert check.inputs["hosts"] == ["lab-esxi-01.lab.example", "lab-esxi-02.lab.example"]
    assert check.inputs["guest_driver"] == "580.159.03"
    [classes] = list(graph.of_type("VmClasses"))
    assert graph.depends_on(classes, check)
    assert run_program("reference").of_type("VgpuManagerCheck") == []
