"""The current stacks' defaults are one supported whole, held against the vendors' statements
in ``components/facts/support_matrix.py`` (each with its source); and the preview's warnings
when a stack leaves that whole.

The dates are today's: a default whose branch reaches its end of support fails here on that
day, which is the point of the test."""
from __future__ import annotations

import datetime

import pytest

from components.facts import addon_facts, support_matrix
from components.settings import SettingsError
from components.settings.support import support_warnings
from components.settings.worker_environment import pods_cuda
from tests.render.stacks import stack_settings

CURRENT_STACKS = ("dev", "full")


@pytest.mark.parametrize("stack", CURRENT_STACKS)
def test_the_guest_driver_is_on_a_branch_in_support_that_the_operator_lists(stack):
    s = stack_settings(stack, {})
    branch = support_matrix.vgpu_branch(s.gpu_operator.driver_version)
    assert branch is not None, f"{s.gpu_operator.driver_version}: no vGPU branch recorded"
    assert branch.supported_on(datetime.date.today()), (branch.vgpu, branch.supported_until, branch.source)
    operator = support_matrix.operator_support(s.gpu_operator.version)
    assert operator is not None, f"no support facts for GPU operator {s.gpu_operator.version}"
    assert branch.branch in operator.branches, (branch.branch, operator.drivers, operator.source)


@pytest.mark.parametrize("stack", CURRENT_STACKS)
def test_the_vkr_is_inside_the_operators_range_and_served_with_the_class(stack):
    s = stack_settings(stack, {})
    operator = support_matrix.operator_support(s.gpu_operator.version)
    low, high = operator.vks_kubernetes
    assert low <= s.cluster.kubernetes_version[:2] <= high, (s.cluster.tkr, operator.vks_kubernetes)
    release = support_matrix.vkr(s.cluster.tkr)
    assert release is not None, f"{s.cluster.tkr}: no VKS release recorded for this VKr"
    needs = support_matrix.class_needs_vks(s.cluster.cluster_class)
    assert needs is not None and needs <= release.vks, (
        f"{s.cluster.cluster_class} needs VKS {needs}; {s.cluster.tkr} ships with VKS {release.vks}")
    assert addon_facts.node_os_tag(s.cluster.kubernetes_version) == "ubuntu22.04"  # operator.vks_os


@pytest.mark.parametrize("stack", CURRENT_STACKS)
def test_the_driver_runs_the_pods_cuda_by_rapids_floor(stack):
    s = stack_settings(stack, {})
    rapids, cuda, what = pods_cuda(s)
    floor = support_matrix.rapids_driver_floor(rapids, cuda)
    assert cuda is not None and floor is not None, f"{what}: its CUDA and RAPIDS floor are not recorded"
    assert addon_facts.driver_version_tuple(s.gpu_operator.driver_version) >= floor
    assert addon_facts.driver_version_tuple(s.gpu_operator.driver_version) >= addon_facts.MIN_DRIVER_FOR_CUDA[cuda]


def test_a_driver_below_the_prepared_environments_floor_is_refused():
    """The pods load the prepared environment's CUDA 13 libraries (RAPIDS 26.10): its floor,
    not the CPython image's (which has no CUDA), decides."""
    with pytest.raises(SettingsError) as info:
        stack_settings("dev", {"vgpuDriverVersion": "530.41.03"})
    [problem] = info.value.problems
    assert problem.key == "vgpuDriverVersion" and "dask-tkg:vgpuDriverVersion" in str(info.value)
    assert ("530.41.03 cannot run the prepared environment of worker-cu13.lock (RAPIDS 26.10 on CUDA 13 needs a"
            " driver >= 580)") in problem.message


@pytest.mark.parametrize("stack", CURRENT_STACKS)
def test_the_current_defaults_warn_of_nothing(stack):
    assert support_warnings(stack_settings(stack, {})) == []


# A site below R580 cannot run the prepared environment (CUDA 13); it runs a CUDA 12 image the paper's way
CUDA_12_IMAGE = {"workerEnvironment": "image", "daskImage": "rapidsai/notebooks:26.10-cuda12-py3.11",
                 "daskImageDaskVersion": "2026.7.1"}


def test_a_branch_below_r580_cannot_run_the_prepared_environment():
    with pytest.raises(SettingsError) as info:
        stack_settings("dev", {"vgpuDriverVersion": "535.154.05"})
    assert "cannot run the prepared environment of worker-cu13.lock (RAPIDS 26.10 on CUDA 13" in str(info.value)
    assert "dask-tkg:vgpuDriverVersion" in str(info.value)


def test_a_driver_past_its_branchs_end_warns_naming_both():
    """vGPU 16 (R535) ended in July 2026: its guest driver still deploys (it must match the
    hosts) but preview says so, with the branch to move to."""
    s = stack_settings("dev", {"vgpuDriverVersion": "535.154.05", **CUDA_12_IMAGE})
    [warning] = support_warnings(s, today=datetime.date(2026, 12, 3))
    assert warning.startswith("vgpuDriverVersion 535.154.05 is a vGPU 16 guest driver (R535), whose support"
                              " ended in 2026-07")
    assert "upgrade the hosts to a supported vGPU release, e.g. vGPU 19 (R580, supported to 2028-07)" in warning
    assert support_warnings(s, today=datetime.date(2026, 7, 31)) == []  # the last month of support


def test_a_driver_branch_the_operator_does_not_list_warns_naming_both():
    s = stack_settings("dev", {"vgpuDriverVersion": "570.172.08", **CUDA_12_IMAGE})
    [warning] = support_warnings(s, today=datetime.date(2026, 12, 3))
    assert warning.startswith("vgpuDriverVersion 570.172.08 (R570) is not on a driver branch gpuOperatorVersion"
                              " v26.7.0 lists (R610, R595, R580, R535: 610.57.04, 595.91.07, 580.173.02,"
                              " 535.309.01;")


def test_a_vkr_outside_the_operators_range_warns():
    s = stack_settings("dev", {"tkr": "v1.32.10---vmware.1-fips-vkr.2"})
    [warning] = support_warnings(s, today=datetime.date(2026, 12, 3))
    assert warning.startswith("tkr v1.32.10---vmware.1-fips-vkr.2 (Kubernetes 1.32) is outside the range"
                              " gpuOperatorVersion v26.7.0 is validated on with VKS, 1.33-1.36")


def test_the_papers_stack_is_told_its_vgpu_release_ended():
    s = stack_settings("reference", {})
    warnings = support_warnings(s, today=datetime.date(2026, 12, 3))
    assert [w for w in warnings if w.startswith("vgpuDriverVersion 470.63.01 is a vGPU 13 guest driver (R470)")]
