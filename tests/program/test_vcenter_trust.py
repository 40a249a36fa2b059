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


def test_allow_unverified_ssl_warns_at_preview():
    # (the harness gives a supervisorKubeconfig: the Supervisor login's part is tests/unit/test_vcenter_trust.py's)
    graph = run_program("reference", config={"vsphere:allowUnverifiedSsl": "true"})
    assert graph.error is None, graph.traceback
    [warning] = [w for w in graph.warnings if w.startswith("vsphere:allowUnverifiedSsl is true:")]
    assert "vCenter's certificate goes unchecked for the vSphere provider" in warning
    assert "and for the program's own vCenter sessions (set vcenterCaPem)" in warning
    assert not [w for w in run_program("reference").warnings if "allowUnverifiedSsl" in w]
