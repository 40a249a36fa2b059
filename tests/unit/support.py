"""The sites and providers the settings tests load, and the builders' inputs they share.

``SITE`` is the paper's platform on a two-host site; ``ONE_HOST_SITE`` the vSphere layer's
tests' single host; ``TODAY_SITE`` that host on today's platform (Pulumi.yaml's defaults);
``CURRENT`` a vSphere 8 U3 Cluster API cluster on a VKr as VKS 3.3 lists it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from components.dask.values import DaskValuesInputs
from components.settings import DictSource, SettingsError, load

# The paper's platform: what Pulumi.reference.yaml sets over Pulumi.yaml's defaults (checked in
# tests/unit/test_settings.py). The tests of the paper's stack start from it.
PAPER_PLATFORM = {
    "vsphereVersion": 7,
    "clusterApi": "run.tanzu.vmware.com/v1alpha2",
    "tkr": "v1.20.8---vmware.1-tkg.2",
    # the paper's v1.9.1 from NVIDIA's public repository, whose archive is pinned (NVAIE 1.1's is not)
    "gpuOperatorChartRepo": "https://nvidia.github.io/gpu-operator/stable",
    "gpuOperatorVersion": "v1.9.1",
    "vgpuDriverVersion": "470.63.01",
    "daskBackend": "helm",
    "daskImage": "nvcr.io/nvidia/rapidsai/rapidsai:21.10-cuda11.2-runtime-ubuntu20.04",
    "daskImageDaskVersion": "2021.09.1",
    "extraPipPackages": "",
}
SITE = {
    **PAPER_PLATFORM,
    "datacenter": "DC0",
    "computeCluster": "DC0_C0",
    "esxiHosts": ["esxi-01", "esxi-02"],
    "supervisorServer": "192.168.105.2",
    "fileShareClients": ["ips=10.20.30.0/24,permissions=READ_WRITE,allowRoot=true"],  # the node network
    "ngcApiKey": "ngc-key",
    "vgpuLicenseToken": "token",
    "licenseTokenInConfigMap": True,
}
ONE_HOST_SITE = {**SITE, "esxiHosts": ["esxi-01"]}
TODAY_SITE = {k: v for k, v in ONE_HOST_SITE.items() if k not in PAPER_PLATFORM}
PROVIDER = {"vsphere:vsphereServer": "vc.example", "vsphere:user": "administrator@vsphere.local",
            "vsphere:password": "secret-pw"}
# Every key vsphere.Supervisor needs (supervisorMode=create), searchDomains given per case.
CREATE = ["managementNetwork=network-1", "managementStartIp=10.0.0.10", "managementSubnetMask=255.255.255.0",
          "managementGateway=10.0.0.1", "masterDns=10.0.0.2", "workerDns=10.0.0.2", "masterNtp=10.0.0.3",
          "egressCidr=10.10.0.0/24", "ingressCidr=10.20.0.0/24", "podCidr=10.30.0.0/20",
          "serviceCidr=10.40.0.0/24", "edgeCluster=edge-1", "dvsUuid=50 2a"]
VKR = "v1.32.3---vmware.1-fips-vkr.2"  # a VKr name as VKS 3.3 lists it (mirror/reference-vks)
CURRENT = {"vsphereVersion": 8, "supervisorId": "domain-c8", "clusterApi": "cluster.x-k8s.io/v1beta1", "tkr": VKR}


def settings(**overrides):
    """The paper's platform on ``SITE``, with ``overrides``."""
    return load(DictSource({**SITE, **overrides}, PROVIDER))


def problems(provider=PROVIDER, **overrides) -> SettingsError:
    """The error ``SITE`` with ``overrides`` (a None drops the key) fails with."""
    values = {**SITE, **overrides}
    values = {k: v for k, v in values.items() if v is not None}
    with pytest.raises(SettingsError) as info:
        load(DictSource(values, provider))
    return info.value


def current_problems(**overrides) -> SettingsError:
    """The error today's platform (``TODAY_SITE`` and ``CURRENT``) with ``overrides`` fails with."""
    values = {k: v for k, v in {**TODAY_SITE, **CURRENT, **overrides}.items() if v is not None}
    with pytest.raises(SettingsError) as info:
        load(DictSource(values, PROVIDER))
    return info.value


def load_current(**overrides):
    """Today's platform on one host as a Cluster API cluster (``CURRENT``), with ``overrides``."""
    return load(DictSource({**TODAY_SITE, **CURRENT, **overrides}, PROVIDER))


def values_inputs(s, **overrides) -> DaskValuesInputs:
    """The Dask chart's values inputs for settings ``s``, as the release passes them, with ``overrides``."""
    base = DaskValuesInputs(
        dask=s.dask, namespace="rapidsai", release="dask", scheduler_selector={"r": "cpu"},
        jupyter_selector={"r": "cpu"}, worker_selector={"r": "gpu"}, dataset_claim="data",
        pip_cache_claim="pip", dataset_mount="/ml-share", jupyter_password_hash="argon2:x", tls_secret="dask-tls")
    return replace(base, **overrides)
