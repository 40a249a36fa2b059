"""Where upstream software goes on the network, as data with its source: the registries each
pinned chart's images come from, the hosts a registry or index sends clients to, the licence
service, the driver container's package archive, Pulumi's plugin downloads.

``network_requirements`` joins these with what the stack's settings name (its own images, data
URLs, package index, vCenter, the Supervisor). The chart rows are what ``helm template`` of the
pinned archive renders with the program's values; ``tests/render/test_chart_registries.py``
renders them with the real Helm engine and fails on a row that no longer says it.
"""
from __future__ import annotations

# (chart, version) -> the registries of the images the release runs, other than those the
# settings name (the vGPU guest driver's vgpuDriverRepository, the dask chart's daskImage).
# gpu-operator: the operator, every operand of its ClusterPolicy (nvcr.io/nvidia/...) and its
# node-feature-discovery subchart; the operands are pulled when the operator starts them.
CHART_REGISTRIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("gpu-operator", "v26.7.0"): ("nvcr.io", "registry.k8s.io"),  # NFD v0.19.0 from registry.k8s.io/nfd
    ("gpu-operator", "v1.9.1"): ("nvcr.io", "k8s.gcr.io"),  # NFD v0.8.2 from k8s.gcr.io/nfd (frozen registry)
    ("nfs-subdir-external-provisioner", "4.0.18"): ("registry.k8s.io",),  # sig-storage/...:v4.0.2
    ("dask-kubernetes-operator", "2026.3.0"): ("ghcr.io",),  # ghcr.io/dask/dask-kubernetes-operator
    ("dask", "2024.1.1"): (),  # scheduler, workers and Jupyter run daskImage
}

# An image named without a registry is Docker Hub's. Docker's "Allowlist for Docker Desktop"
# (docs.docker.com/desktop/setup/allow-list/) lists the hosts a pull uses: authentication,
# the registry API, and the CDN the layers are served from.
DOCKER_HUB = ("registry-1.docker.io", "auth.docker.io", "production.cloudflare.docker.com")

# PyPI's simple pages (PEP 503) link every file at its file host, files.pythonhosted.org, where
# pip downloads it from.
PYPI_HOST = "pypi.org"
PYPI_FILES = "files.pythonhosted.org"

# NVIDIA License System: "a licensed client leases a software license served over the network
# from an NVIDIA License System service instance" (NLS User Guide, docs.nvidia.com/license-system/
# latest/nvidia-license-system-user-guide/, 1.1). A CLS instance is NVIDIA's, at this host over
# HTTPS; a DLS instance is the site's appliance, named in the client configuration token.
CLS_HOST = "api.cls.licensing.nvidia.com"

# "The driver container needs to download several OS packages prior to driver installation"
# (NVIDIA GPU Operator docs, "Install NVIDIA GPU Operator in Air-Gapped Environments"); on the
# Ubuntu GPU nodes it uses the Ubuntu image's default apt sources, plain HTTP.
UBUNTU_ARCHIVES = ("archive.ubuntu.com", "security.ubuntu.com")

# Pulumi downloads a missing provider plugin (vsphere, kubernetes, tls, random: the SDKs
# requirements.txt pins) from GitHub's releases of pulumi/pulumi-<name>, then falls back to
# get.pulumi.com (pulumi/pulumi sdk/go/common/workspace/plugins.go,
# fallbackSource, v3.260); GitHub redirects a release asset's download to its asset hosts.
GITHUB_ASSETS = ("objects.githubusercontent.com", "release-assets.githubusercontent.com")
PLUGIN_HOSTS = ("api.github.com", "github.com", *GITHUB_ASSETS, "get.pulumi.com")

# Pulumi Cloud's API, when it is the state backend (`pulumi login` with no URL).
PULUMI_CLOUD = "api.pulumi.com"

# The Supervisor: `kubectl vsphere login` posts to https://<supervisor>/wcp/login (443) and the
# Kubernetes API listens on 6443 (components/cluster/supervisor_access.py); a workload cluster's
# API server listens on 6443 at the control-plane address the Supervisor gives it.
SUPERVISOR_PORTS = (443, 6443)
API_SERVER_PORT = 6443
VCENTER_PORT = 443
NFS_PORT = 2049  # NFS 4.1 (the provisioner's mountOptions), one TCP port
