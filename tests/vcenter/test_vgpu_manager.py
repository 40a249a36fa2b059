"""The hosts' NVIDIA vGPU Manager against the guest driver, read at preview from the vCenter
simulator: each host's installed software packages (HostImageConfigManager.FetchSoftwarePackages,
served by scripts/vcsim/software.go as vCenter serves them), the vGPU Manager VIB among them, and
NVIDIA's pairing rule and security floor (components/facts/support_matrix.py)."""
from __future__ import annotations

import pytest

from components.vsphere.providers.vgpu_manager import VgpuManagerProvider
from tests.vcenter.simulator import VGPU_19_5_MANAGER, running_vcsim

HOSTS = ["DC0_C0_H0", "DC0_C0_H1"]  # vcsim's VPX model: datacenter DC0, cluster DC0_C0
VGPU_19_0_MANAGER = {**VGPU_19_5_MANAGER, "version": "580.65.05-1OEM.800.1.0.20613240"}
OTHER_VIB = {"name": "vmware-esx-esxcli-nvme-plugin", "version": "1.2.0.52-1vmw.800.1.0.20613240",
             "vendor": "VMware", "summary": "esxcli NVMe plugin"}


def failures(simulator, guest: str, hosts=None) -> list[str]:
    props = simulator.props(datacenter="DC0", hosts=list(hosts or HOSTS), guest_driver=guest)
    result = VgpuManagerProvider().check({}, props)
    return [f"{f.property}: {f.reason}" for f in result.failures]


def test_the_defaults_pair_with_vgpu_19_5_hosts(vcsim):
    assert failures(vcsim, "580.159.03") == []


def test_a_guest_driver_of_another_release_than_the_hosts_is_refused_naming_both(vcsim):
    [failure] = failures(vcsim, "580.126.09")
    assert failure.startswith("vgpuDriverVersion: vgpuDriverVersion 580.126.09 does not pair with the vGPU Manager"
                              " 580.159.01 on host 'DC0_C0_H0'")
    assert "vGPU 19.5 pairs it with guest driver 580.159.03" in failure and "'DC0_C0_H1'" in failure


def test_a_guest_driver_of_a_newer_branch_than_the_hosts_is_refused(vcsim):
    [failure] = failures(vcsim, "595.91.07")
    assert ("595.91.07 (R595) is of a newer branch than the vGPU Manager 580.159.01 (R580) on host 'DC0_C0_H0'"
            in failure)


def test_unknown_host_is_named(vcsim):
    [failure] = failures(vcsim, "580.159.03", hosts=["esxi-99"])
    assert "no ESXi host 'esxi-99' in datacenter 'DC0' (esxiHosts)" in failure


@pytest.fixture(scope="module")
def mixed_hosts(tmp_path_factory):
    """H0 on vGPU 19.0's Manager (below bulletin 5821's floor), H1 without any vGPU Manager."""
    packages = {"DC0_C0_H0": [VGPU_19_0_MANAGER, OTHER_VIB], "DC0_C0_H1": [OTHER_VIB], "*": [VGPU_19_5_MANAGER]}
    with running_vcsim(tmp_path_factory.mktemp("vcsim-mixed"), packages) as simulator:
        yield simulator


def test_a_manager_below_the_security_floor_and_a_host_without_one_are_refused(mixed_hosts):
    [failure] = failures(mixed_hosts, "580.159.03")
    assert failure.startswith("vgpuDriverVersion: ")
    assert ("host 'DC0_C0_H0' runs vGPU Manager 580.65.05, affected by NVIDIA security bulletin 5821 (May 2026):"
            " CVE-2026-24187, CVSS 8.8: move the hosts to vGPU 19.5 or later (vGPU Manager 580.159.01)") in failure
    assert ("host 'DC0_C0_H1' has no NVIDIA vGPU Manager VIB (NVD-*_ESXi_*_Driver): no vGPU VM can start there"
            in failure)


def test_the_other_hosts_still_pass(mixed_hosts):
    assert failures(mixed_hosts, "580.159.03", hosts=["DC0_C0_H2"]) == []
