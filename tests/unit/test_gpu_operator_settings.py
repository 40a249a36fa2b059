"""The GPU operator's settings on today's platform: a release whose objects use APIs the
cluster's Kubernetes no longer serves fails at preview naming both settings, and the driver
image is named from the NVAIE release as NVIDIA's install script names it."""
from __future__ import annotations

import pytest

from components.addons.values import gpu_operator_values
from components.settings import DictSource, SettingsError, load
from tests.unit.support import PROVIDER, TODAY_SITE

TODAY = {**TODAY_SITE, "supervisorId": "domain-c8"}


def load_today(**overrides):
    # the image's CUDA is judged: the image way (a prepared environment brings its own CUDA
    # libraries: tests/program/test_worker_environment.py)
    return load(DictSource({**TODAY, "workerEnvironment": "image", **overrides}, PROVIDER))


def refused(**overrides) -> SettingsError:
    with pytest.raises(SettingsError) as info:
        load_today(**overrides)
    return info.value


def test_the_papers_gpu_operator_is_refused_on_a_current_vkr():
    error = refused(gpuOperatorVersion="v1.9.1")
    [problem] = error.problems
    assert problem.key == "gpuOperatorVersion" and "dask-tkg:gpuOperatorVersion" in str(error)
    assert ("GPU operator v1.9.1 uses policy/v1beta1 PodSecurityPolicy and node.k8s.io/v1beta1 RuntimeClass,"
            " which Kubernetes 1.33 (tkr v1.33.6---vmware.1-fips-vkr.2) no longer serves") in problem.message
    assert "set gpuOperatorVersion v26.7.0, or a tkr before 1.25" in problem.message


def test_the_papers_gpu_operator_still_loads_on_its_own_tkr():
    s = load_today(gpuOperatorVersion="v1.9.1", tkr="v1.21.6---vmware.1-tkg.1",
                   clusterApi="run.tanzu.vmware.com/v1alpha3")
    assert s.gpu_operator.version == "v1.9.1"


def test_the_nvaie_release_names_the_driver_image():
    assert load_today().gpu_operator.driver_image == "vgpu-guest-driver"
    spec = load_today(nvaieVersion="5.0").gpu_operator
    assert spec.driver_image == "vgpu-guest-driver-5-0"
    values = gpu_operator_values(spec, enforces_psp=False)
    assert values["driver"]["image"] == "vgpu-guest-driver-5-0"
    assert values["driver"]["licensingConfig"] == {"secretName": "licensing-config", "nlsEnabled": True}
    assert "operator" not in values  # v26.7.0's values.yaml has no operator.defaultRuntime


@pytest.mark.parametrize("version", ["5", "5.0.1", "v5.0", "five"])
def test_a_bad_nvaie_release_names_the_key(version):
    error = refused(nvaieVersion=version)
    [problem] = error.problems
    assert problem.key == "nvaieVersion" and "dask-tkg:nvaieVersion" in str(error)
    assert "must be an NVIDIA AI Enterprise release such as 5.0 (major.minor), or empty" in problem.message


def test_a_cuda_13_image_on_the_r535_driver_is_refused():
    """RAPIDS publishes cuda13 images too, and PyPI's newer torch is CUDA 13; the R535 driver
    of vGPU 16 (the earlier default, NVIDIA's install script's) runs neither."""
    error = refused(daskImage="rapidsai/notebooks:26.10-cuda13-py3.11", vgpuDriverVersion="535.154.05")
    [problem] = error.problems
    assert problem.key == "vgpuDriverVersion" and "dask-tkg:vgpuDriverVersion" in str(error)
    assert ("535.154.05 cannot run daskImage rapidsai/notebooks:26.10-cuda13-py3.11 (RAPIDS 26.10 on CUDA 13"
            " needs a driver >= 580)") in problem.message


def test_a_driver_below_rapids_floor_is_refused_though_cuda_runs_on_it():
    """CUDA 12's own floor is 525.60.13, but RAPIDS 26.10 states 535 for CUDA 12: a 530 driver
    passes CUDA's floor and fails RAPIDS' (support_matrix.RAPIDS_DRIVER_FLOOR)."""
    error = refused(daskImage="rapidsai/notebooks:26.10-cuda12-py3.11", vgpuDriverVersion="530.41.03")
    [problem] = error.problems
    assert problem.key == "vgpuDriverVersion" and "dask-tkg:vgpuDriverVersion" in str(error)
    assert ("530.41.03 cannot run daskImage rapidsai/notebooks:26.10-cuda12-py3.11 (RAPIDS 26.10 on CUDA 12"
            " needs a driver >= 535)") in problem.message


@pytest.mark.parametrize("image, driver", [
    ("rapidsai/notebooks:26.10-cuda12-py3.11", "535.154.05"),  # RAPIDS 26.10's CUDA 12 floor is 535
    ("rapidsai/notebooks:26.10-cuda13-py3.11", "580.159.03"),
    ("nvcr.io/nvidia/rapidsai/rapidsai:21.10-cuda11.2-runtime-ubuntu20.04", "470.63.01"),  # the paper's pair
    ("registry.example/dask-tkg/dask-runtime:1.0", "470.63.01"),  # no CUDA in the tag: not judged
])
def test_a_driver_that_runs_the_images_cuda_loads(image, driver):
    assert load_today(daskImage=image, vgpuDriverVersion=driver, daskImageDaskVersion="2026.7.1").gpu_operator


@pytest.mark.parametrize("driver", ["580.65.06", "580.126.09"])  # vGPU 19.0 and 19.4: the bulletin's range
def test_a_guest_driver_with_a_known_vulnerability_is_refused_naming_the_bulletin_and_the_fix(driver):
    error = refused(vgpuDriverVersion=driver)
    assert "dask-tkg:vgpuDriverVersion" in str(error)
    [problem] = [p for p in error.problems if p.key == "vgpuDriverVersion"]
    assert (f"{driver} is affected by NVIDIA security bulletin 5821 (May 2026): CVE-2026-24187, CVSS 8.8"
            in problem.message)
    assert ("the first fixed guest driver is 580.159.03 (vGPU 19.5, with vGPU Manager 580.159.01 on the hosts)"
            in problem.message)


@pytest.mark.parametrize("driver", ["580.159.03", "580.173.02", "595.91.07", "470.63.01"])
def test_a_fixed_driver_or_a_branch_without_a_bulletin_passes_the_floor(driver):
    from components.facts.support_matrix import driver_bulletin

    assert driver_bulletin(driver) is None
