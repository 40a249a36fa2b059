"""What the GPU operator and the NFS provisioner really do with the values, written down as
data with the version and the source each fact was read from. The values builder, the
settings checks and the render tests read them; a chart version with no fact here makes
the tests name the fact to re-check."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuOperatorFacts:
    versions: str  # the release line the facts were read for, e.g. "v1.9."
    source: str
    # resolveDriverTag: "<repository>/<image>:<version>" + "-<ID><VERSION_ID>" from the node's
    # NFD labels (feature.node.kubernetes.io/system-os_release.*), unless the version is a digest.
    appends_os_tag: bool
    # The licensing ConfigMap always gives gridd.conf; client_configuration_token.tok is mounted
    # only when driver.licensingConfig.nlsEnabled is true (default false).
    token_only_with_nls: bool
    licensing_source: str
    # Where the licensing files come from: a ConfigMap (``configMapName``) before 25.10, a
    # Secret (``secretName``) from 25.10 (``configMapName`` still read, deprecated).
    licensing_in_secret: bool = False
    # The chart's values.yaml has ``operator.defaultRuntime`` (v1.9: docker, containerd or
    # crio); later charts detect the runtime and dropped the key.
    has_default_runtime: bool = False
    # APIs the release's objects use that Kubernetes 1.25 no longer serves.
    removed_apis: tuple[str, ...] = ()
    removed_apis_source: str = ""
    # GPUs reach containers through CDI (the device plugin's allocation as CDI annotations and CRI
    # fields; ``nvidia`` is not the default runtime), and the toolkit takes
    # ``ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED``: an unprivileged container's
    # ``NVIDIA_VISIBLE_DEVICES`` can then be refused without taking the allocated GPUs away.
    devices_through_cdi: bool = False
    devices_source: str = ""

    def covers(self, version: str) -> bool:
        return ("v" + version.lstrip("v")).startswith(self.versions)


GPU_OPERATOR: tuple[GpuOperatorFacts, ...] = (
    GpuOperatorFacts(
        versions="v1.9.",
        source="NVIDIA/gpu-operator v1.9.1 controllers/object_controls.go: resolveDriverTag, kernelFullVersion",
        appends_os_tag=True,
        token_only_with_nls=True,
        licensing_source=("NVIDIA/gpu-operator v1.9.1 controllers/object_controls.go (TransformDriver, the"
                          " licensing-config volume) and api/v1/clusterpolicy_types.go (IsNLSEnabled)"),
        has_default_runtime=True,  # v1.9.1 deployments/gpu-operator/values.yaml: operator.defaultRuntime
        removed_apis=("policy/v1beta1 PodSecurityPolicy", "node.k8s.io/v1beta1 RuntimeClass"),
        removed_apis_source=("NVIDIA/gpu-operator v1.9.1 deployments/gpu-operator/templates/podsecuritypolicy.yaml"
                             " and assets/pre-requisites/ (the RuntimeClass the operator creates)"),
    ),
    GpuOperatorFacts(
        versions="v26.7.",
        source=("NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go: resolveDriverTag (appends"
                " -<gpuNodeOSTag> unless the image is a digest)"),
        appends_os_tag=True,
        token_only_with_nls=True,  # api/nvidia/v1/clusterpolicy_types.go IsNLSEnabled: nil -> false
        licensing_source=("NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go applyLicensingConfig"
                          " (the Secret when secretName is set, else the ConfigMap; the token only with NLS);"
                          " the chart's values.yaml sets driver.licensingConfig.nlsEnabled: true"),
        licensing_in_secret=True,
        # assets/pre-requisites/0200_runtime_class.yaml ...: node.k8s.io/v1; the chart has no
        # PodSecurityPolicy template (values.yaml has psa.enabled instead of psp).
        removed_apis=(),
        removed_apis_source="NVIDIA/gpu-operator v26.7.0 assets/pre-requisites/, deployments/gpu-operator/templates/",
        devices_through_cdi=True,
        devices_source=("NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go transformToolkitCtrForCDI"
                        " (NVIDIA_RUNTIME_SET_AS_DEFAULT=false, the runtime in cdi mode) and"
                        " transformDevicePluginCtrForCDI (DEVICE_LIST_STRATEGY=cdi-annotations,cdi-cri), the chart's"
                        " cdi.enabled: true and toolkit v1.20.0; NVIDIA/nvidia-container-toolkit v1.20.0"
                        " cmd/nvidia-ctk-installer/toolkit/toolkit.go (ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_"
                        "UNPRIVILEGED sets accept-nvidia-visible-devices-envvar-when-unprivileged, default true in"
                        " api/config/v1/toml.go); the operator's own GPU containers that set the variable are"
                        " privileged (assets/state-*/)"),
    ),
)

# The first Kubernetes release without the APIs a ``removed_apis`` entry names
# (kubernetes.io "Deprecated API Migration Guide", v1.25: policy/v1beta1 PodSecurityPolicy and
# node.k8s.io/v1beta1 RuntimeClass no longer served).
APIS_REMOVED_IN = (1, 25)

# The node OS a TKGS vGPU node runs: the Ubuntu TKR v1.20.8---vmware.1-tkg.2 (VMware's vGPU
# documentation for TKGS asks for the Ubuntu edition), so NFD labels it ubuntu / 20.04.
NODE_OS_TAG = "ubuntu20.04"
# A current Ubuntu VKr node: NFD labels it ubuntu / 22.04; the NVAIE guest-driver tags are
# <driver>-ubuntu22.04 (NVIDIA's NVAIE GPU-operator documentation).
VKR_NODE_OS_TAG = "ubuntu22.04"
NODE_OS_TAGS = {(1, 20): NODE_OS_TAG, (1, 21): NODE_OS_TAG, (1, 32): VKR_NODE_OS_TAG,  # minor -> Ubuntu node
                (1, 33): VKR_NODE_OS_TAG}  # GPU operator v26.7.0 is validated on VKS with Ubuntu 22.04 (support_matrix)


def node_os_tag(kubernetes: tuple[int, ...]) -> str | None:
    """The ``<os><version>`` NFD reports on a GPU node of this Kubernetes release, where known."""
    if len(kubernetes) < 2:
        return None
    return NODE_OS_TAGS.get((kubernetes[0], kubernetes[1]))
_OS_SUFFIX = re.compile(r"-(ubuntu|rhel|rhcos|centos)\d+(\.\d+)?$")


def gpu_operator_facts(version: str) -> GpuOperatorFacts | None:
    return next((facts for facts in GPU_OPERATOR if facts.covers(version)), None)


# The oldest driver that runs a CUDA major's applications, with CUDA's minor-version
# compatibility (NVIDIA CUDA Toolkit release notes, "CUDA Toolkit and Minimum Required Driver
# Version for CUDA Minor Version Compatibility": 11.x >= 450.80.02, 12.x >= 525.60.13,
# 13.x >= 580.65.06).
MIN_DRIVER_FOR_CUDA = {11: (450, 80, 2), 12: (525, 60, 13), 13: (580, 65, 6)}


def driver_version_tuple(version: str) -> tuple[int, ...] | None:
    """``535.154.05`` -> (535, 154, 5); None for a digest or another form."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    return tuple(int(g or 0) for g in match.groups()) if match else None


def driver_version_text(version: tuple[int, ...]) -> str:
    """(450, 80, 2) -> ``450.80.02`` (NVIDIA's form), (535, 0, 0) -> ``535`` (a branch floor)."""
    if version[1:] == (0, 0):
        return str(version[0])
    return ".".join(f"{n:02d}" if i == 2 else str(n) for i, n in enumerate(version))


def driver_branch(version: str) -> int | None:
    """``580.65.06`` -> 580: the driver branch (R580), the unit NVIDIA supports drivers by."""
    major = version.split(".")[0]
    return int(major) if major.isdigit() else None


def nvaie_driver_image(image: str, nvaie_version: str) -> str:
    """The guest-driver image name for an NVAIE release, as NVIDIA's install script names it
    (gpu-operator v26.7.0 ``scripts/gpu-operator-nvaie.sh``: ``VGPU_DRIVER_NAME-<NVAIE_VERSION,
    dots to dashes>``, the name alone when no release is given): ``5.0`` -> ``vgpu-guest-driver-5-0``."""
    return f"{image}-{nvaie_version.replace('.', '-')}" if nvaie_version else image


def uses_removed_apis(facts: GpuOperatorFacts | None, kubernetes: tuple[int, ...]) -> bool:
    """Whether the release's objects need APIs that ``kubernetes`` no longer serves."""
    return bool(facts and facts.removed_apis and tuple(kubernetes[:2]) >= APIS_REMOVED_IN)


def os_suffix(driver_version: str) -> str | None:
    """The ``-<os><version>`` end of a driver tag (``470.63.01-ubuntu20.04`` -> ``-ubuntu20.04``)."""
    match = _OS_SUFFIX.search(driver_version)
    return match.group(0) if match else None


def resolved_driver_image(facts: GpuOperatorFacts, repository: str, image: str, version: str,
                          os_tag: str = NODE_OS_TAG) -> str:
    """The driver image the operator pulls on a node of ``os_tag``."""
    path = f"{repository}/{image}@{version}" if version.startswith("sha256:") else f"{repository}/{image}:{version}"
    if facts.appends_os_tag and "sha256:" not in path:
        path = f"{path}-{os_tag}"
    return path


def licensing_files(facts: GpuOperatorFacts, licensing: dict[str, Any]) -> set[str]:
    """The files of the licensing ConfigMap (or Secret) the driver container gets for ``licensingConfig``."""
    source = licensing.get("configMapName") or (facts.licensing_in_secret and licensing.get("secretName"))
    if not source:
        return set()
    files = {"gridd.conf"}
    if licensing.get("nlsEnabled") or not facts.token_only_with_nls:
        files.add("client_configuration_token.tok")
    return files


@dataclass(frozen=True)
class Fact:
    what: str
    source: str


# k8s.gcr.io is frozen (no new images since 3 April 2023) and being phased out; the images
# moved to registry.k8s.io, which the 4.0.18 chart's values.yaml already uses.
NFS_IMAGE_REGISTRY = Fact("registry.k8s.io", "kubernetes.io blog 2023-02-06 'k8s.gcr.io Image Registry Will Be"
                                             " Frozen From the 3rd of April 2023'; chart 4.0.18 values.yaml image")
# nfs-subdir-external-provisioner v4.0.2 implements Provision/Delete only (no resizer, no CSI):
# a claim's resize is accepted by the API and then never happens.
NFS_NO_EXPANSION = Fact("no volume expansion",
                        "kubernetes-sigs/nfs-subdir-external-provisioner v4.0.2"
                        " cmd/nfs-subdir-external-provisioner/provisioner.go (Provision, Delete)")


@dataclass(frozen=True)
class ChartSource:
    """Where a chart is published: its name in its repository's index.yaml."""

    name: str
    repo: str
    source: str


NFS_CHART = ChartSource("nfs-subdir-external-provisioner",
                        "https://kubernetes-sigs.github.io/nfs-subdir-external-provisioner/",
                        "kubernetes-sigs/nfs-subdir-external-provisioner README, 'With Helm' (helm repo add)")
