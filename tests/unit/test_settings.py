"""Settings validation: the defaults are today's platform, the paper's platform is a handful of
settings (those of Pulumi.reference.yaml), and every bad value names its key."""
from __future__ import annotations

import pytest

from components.settings import DictSource, load
from components.settings.schema import project
from components.settings.vsan import RAID1, RAID56
from tests.unit.support import PAPER_PLATFORM, PROVIDER, SITE, problems, settings


def test_the_paper_platform_is_the_reference_stacks():
    """Pulumi.reference.yaml and Pulumi.reference-dev.yaml set every paper value that differs
    from Pulumi.yaml's defaults (the paper's extraPipPackages is its torch 1.10 line)."""
    from pathlib import Path

    import yaml

    for name in ("reference", "reference-dev"):
        config = yaml.safe_load((Path(__file__).resolve().parents[2] / f"Pulumi.{name}.yaml").read_text())["config"]
        for key, value in PAPER_PLATFORM.items():
            if key == "extraPipPackages" and name == "reference":
                continue
            assert config.get(f"dask-tkg:{key}") == value, (name, key)


def test_defaults_are_todays_platform():
    s = load(DictSource({k: v for k, v in SITE.items() if k not in PAPER_PLATFORM} | {"supervisorId": "domain-c8"},
                        PROVIDER))
    assert (s.vsphere.version, s.cluster.api_version) == (8, "cluster.x-k8s.io/v1beta1")
    assert s.cluster.kubernetes_version[:2] == (1, 33) and s.cluster.cluster_class == "builtin-generic-v3.4.0"
    assert (s.gpu_operator.version, s.gpu_operator.driver_version) == ("v26.7.0", "580.159.03")
    assert (s.dask.backend, s.dask.operator.chart_version) == ("operator", "2026.3.0")
    assert (s.dask.image, s.dask.dask_version) == (
        "python:3.11.15-slim-trixie@sha256:90744cff8f32887f075c47d747a173ff333e9e98801667af93c357fa9f5e28ff",
        "2026.7.1")
    assert (s.dask.environment, s.dask.extra_pip_packages) == ("prepared", "")


def test_defaults_are_the_papers_topology():
    s = settings()
    assert s.cluster.api_version == "run.tanzu.vmware.com/v1alpha2"
    assert s.cluster.tkr == "v1.20.8---vmware.1-tkg.2" and s.cluster.kubernetes_version == (1, 20, 8)
    assert (s.cluster.control_plane.replicas, s.cluster.control_plane.vm_class) == (3, "best-effort-medium")
    gpu = s.cluster.pools("gpu")
    assert [(p.replicas, p.vm_class, p.storage_class) for p in gpu] == [(8, "16cpu-64gram-ts-20c-vmxnet3",
                                                                         "vsan-r1-sw8")]
    assert sum(p.replicas for p in s.cluster.pools("cpu")) == 2
    assert [(v.name, v.mount_path, v.capacity) for v in s.cluster.volumes] == [
        ("containerd", "/var/lib/containerd", "100Gi"), ("kubelet", "/var/lib/kubelet", "50Gi")]
    vgpu = s.vm_class("16cpu-64gram-ts-20c-vmxnet3")
    assert (vgpu.cpus, vgpu.memory_mb, vgpu.memory_reservation, vgpu.vgpu_profile) == (16, 65536, 100, "grid_a100-20c")
    policies = {p.name: dict(p.rules) for p in s.storage_policies}
    assert policies == {
        "vsan-r5": {"hostFailuresToTolerate": 1, "replicaPreference": RAID56},
        "vsan-r1-sw8": {"hostFailuresToTolerate": 1, "replicaPreference": RAID1, "stripeWidth": 8},
    }
    assert s.dask.workers.replicas == 8 and s.dask.workers.cpu == 6 and s.dask.workers.memory == "48Gi"
    assert s.dask.workers.threads == 6  # 0 = the worker's cores
    assert s.file_share.size_gib == 2048 and s.file_share.policy == "vsan-r1-sw8"
    assert s.storage.dataset_size == "500Gi" and s.storage.pip_cache_size == "200Gi"
    assert len(s.data.value("taxiMonths")) == 36 and s.data.value("taxiMonths")[0] == "2017-01"


def test_topology_b_gives_jupyter_a_gpu_and_one_worker_less():
    s = settings(jupyterGpu=True)
    assert s.dask.workers.replicas == 7


def test_every_declared_setting_has_type_and_description():
    _, decls = project()
    assert len(decls) > 60
    for decl in decls.values():
        assert decl.type in ("string", "integer", "boolean", "array"), decl.key
        assert decl.description, decl.key


def test_short_raid_names_become_spbm_strings():
    s = settings(storagePolicies=["name=vsan-r5,hostFailuresToTolerate=1,replicaPreference=RAID-5",
                                  "name=vsan-r1-sw8,replicaPreference=RAID-1,stripeWidth=8"])
    assert s.storage_policies[0].rules["replicaPreference"] == RAID56


@pytest.mark.parametrize(
    "overrides, key, words",
    [
        ({"nodePools": [
            "name=gpu-worker,role=gpu,replicas=-1,vmClass=16cpu-64gram-ts-20c-vmxnet3,storageClass=vsan-r1-sw8",
            "name=cpu,role=cpu,replicas=2,vmClass=best-effort-xlarge,storageClass=vsan-r5"]},
         "nodePools[0].replicas", ">= 0"),
        ({"gpuWorkers": -2}, "gpuWorkers", ">= 0"),
        ({"vmClasses": [
            "name=16cpu-64gram-ts-20c-vmxnet3,cpus=16,memoryMb=65536,memoryReservation=50,vgpuProfile=grid_a100-20c"]},
         "vmClasses[0].memoryReservation", "100%"),
        ({"nodePools": [
            "name=GPU_Workers,role=gpu,replicas=8,vmClass=16cpu-64gram-ts-20c-vmxnet3,storageClass=vsan-r1-sw8",
            "name=cpu,role=cpu,replicas=2,vmClass=best-effort-xlarge,storageClass=vsan-r5"]},
         "nodePools[0].name", "RFC 1123"),
        ({"gpuWorkers": 9}, "gpuWorkers", "need 9 GPU nodes but the role=gpu pools have 8"),
        ({"clusterApi": "run.tanzu.vmware.com/v1beta1"}, "clusterApi", "must be one of"),
        ({"clusterApi": "run.tanzu.vmware.com/v1alpha3"}, "clusterApi", "needs vsphereVersion 8"),
        ({"vsphereVersion": 6}, "vsphereVersion", "must be one of 7, 8"),
        ({"controlPlaneReplicas": 2}, "controlPlaneReplicas", "must be one of 1, 3"),
        ({"workerMemory": "48 gigs"}, "workerMemory", "Kubernetes quantity"),
        ({"workerMemory": "80Gi"}, "workerMemory", "exceeds VM class '16cpu-64gram-ts-20c-vmxnet3'"),
        ({"workerCpu": 32}, "workerCpu", "exceed VM class"),
        ({"jupyterGpu": True, "gpuWorkers": 8}, "gpuWorkers", "+ 1 for Jupyter"),
        ({"datasetPvcSize": "2000Gi"}, "datasetPvcSize", "exceed the file share"),
        ({"schedulerServiceType": "LoadBalancer"}, "schedulerServiceType", "loadBalancerSourceRanges"),
        ({"schedulerServiceType": "Public"}, "schedulerServiceType", "must be one of ClusterIP"),
        ({"daskImage": "rapidsai/rapidsai:latest"}, "daskImage", "pinned"),
        ({"daskImage": "rapidsai/rapidsai"}, "daskImage", "tag"),
        ({"tkr": "1.20.8"}, "tkr", "Tanzu Kubernetes release"),
        ({"tkr": "v1.19.7---vmware.1-tkg.1"}, "tkr", "does not support vGPU"),
        ({"podCidr": "10.96.0.0/16"}, "podCidr", "overlaps serviceCidr"),
        ({"podCidr": "10.1.2.3/16"}, "podCidr", "CIDR"),
        ({"storagePolicies": ["name=vsan-r5,hostFailuresToTolerate=1,replicaPreference=RAID-7"]},
         "storagePolicies[0].replicaPreference", "must be one of"),
        ({"storagePolicies": ["name=vsan-r5,hostFailuresToTolerate=3,replicaPreference=RAID-5/6",
                              "name=vsan-r1-sw8,stripeWidth=8"]},
         "storagePolicies[0]", "erasure coding"),
        ({"storagePolicies": ["name=vsan-r5,stripeWidth=20", "name=vsan-r1-sw8"]}, "storagePolicies[0].stripeWidth",
         "<= 12"),
        ({"storagePolicies": ["name=vsan-r5,colour=blue", "name=vsan-r1-sw8"]}, "storagePolicies[0].colour",
         "unknown field"),
        ({"controlPlaneStorageClass": "gold"}, "controlPlaneStorageClass", "not one of storagePolicies"),
        ({"controlPlaneVmClass": "huge"}, "controlPlaneVmClass", "not offered to the namespace"),
        ({"nodePools": ["name=gpu-worker,role=gpu,replicas=8,vmClass=best-effort-xlarge,storageClass=vsan-r1-sw8",
                        "name=cpu,role=cpu,replicas=2,vmClass=best-effort-xlarge,storageClass=vsan-r5"]},
         "nodePools[0].vmClass", "has no vGPU profile"),
        ({"nodePools": [
            "name=gpu-worker,role=gpu,replicas=8,vmClass=16cpu-64gram-ts-20c-vmxnet3,storageClass=vsan-r1-sw8"]},
         "nodePools", "the scheduler needs a non-GPU node"),
        ({"nodePools": ["name=cpu,role=cpu,replicas=2,vmClass=best-effort-xlarge,storageClass=vsan-r5"]},
         "nodePools", "no pool has role=gpu"),
        ({"nodePools": [
            "name=gpu-worker,role=gpu,replicas=1,vmClass=16cpu-64gram-ts-20c-vmxnet3,storageClass=vsan-r1-sw8",
            "name=cpu,role=cpu,replicas=2,vmClass=best-effort-xlarge,storageClass=vsan-r5"],
          "jupyterGpu": True}, "gpuWorkers", "no GPU node is left for workers"),
        ({"schedulerMemory": "64Gi"}, "schedulerMemory", "exceeds VM class 'best-effort-xlarge'"),
        ({"predefinedVmClasses": ["best-effort-medium", "best-effort-huge"]}, "predefinedVmClasses[1]",
         "not a pre-defined"),
        ({"fileShareMode": "existing"}, "nfsServer", "required with fileShareMode=existing"),
        ({"fileShareMode": "nas"}, "fileShareMode", "must be one of vsan, existing"),
        ({"fileSharePolicy": "gold"}, "fileSharePolicy", "not one of storagePolicies"),
        ({"namespaceStorageLimits": ["vsan-r5=lots"]}, "namespaceStorageLimits[0]", "quantity"),
        ({"namespaceStorageLimits": ["gold=1Ti"]}, "namespaceStorageLimits", "not one of storagePolicies"),
        ({"namespaceAccess": ["role=ADMIN,subject=devs"]}, "namespaceAccess[0].role", "OWNER, EDIT, VIEW"),
        ({"taxiMonths": ["2019-13"]}, "taxiMonths", "YYYY-MM"),
        ({"taxiUrlTemplate": "https://example.org/yellow.csv"}, "taxiUrlTemplate", "{month}"),
        ({"loadBalancerSourceRanges": ["10.0.0.0/33"]}, "loadBalancerSourceRanges[0]", "CIDR"),
        ({"esxiHosts": []}, "esxiHosts", "vGPU profiles"),
        ({"ngcApiKey": None}, "ngcApiKey", "required for GPU nodes"),
        ({"datacenter": None}, "datacenter", "is required"),
        ({"clusterReadyTimeoutMinutes": 0}, "clusterReadyTimeoutMinutes", ">= 1"),
        ({"jupyterEnabled": "yes"}, "jupyterEnabled", "true or false"),
        ({"supervisorMode": "create"}, "supervisorCreateSpec", "needs managementNetwork"),
        ({"vsphereVersion": 8}, "supervisorId", "required on vSphere 8"),
        ({"licenseTokenInConfigMap": False}, "licenseTokenInConfigMap", "only from a ConfigMap"),
    ],
)
def test_invalid_setting_names_the_key(overrides, key, words):
    error = problems(**overrides)
    matching = [str(p) for p in error.problems if p.key == key]
    assert matching, f"no problem for {key}: {error}"
    assert any(words in m for m in matching), matching
    assert f"dask-tkg:{key}" in str(error)


def test_missing_vcenter_password_names_the_provider_key():
    error = problems(provider={k: v for k, v in PROVIDER.items() if k != "vsphere:password"})
    assert "vsphere:password" in str(error) and "dask-tkg:vsphere:password" not in str(error)


def test_all_problems_reported_at_once():
    error = problems(gpuWorkers=-1, cni="flannel", workerMemory="lots")
    assert {p.key for p in error.problems} >= {"gpuWorkers", "cni", "workerMemory"}


def test_secret_values_never_appear_in_errors():
    error = problems(provider={**PROVIDER, "vsphere:password": "hunter2-pw"}, gpuWorkers=99)
    assert "hunter2-pw" not in str(error) and "ngc-key" not in str(error)
    assert "hunter2-pw" not in repr(settings().vsphere)


def test_script_pools_are_expressible():
    s = settings(nodePools=[
        "name=gpu-worker,role=gpu,replicas=7,vmClass=16cpu-64gram-ts-20c-vmxnet3,storageClass=vsan-r1-sw8",
        "name=scheduler,role=scheduler,replicas=1,vmClass=best-effort-2xlarge,storageClass=vsan-r5",
        "name=jupyter,role=jupyter,replicas=1,vmClass=best-effort-2xlarge,storageClass=vsan-r5",
    ])
    assert [p.name for p in s.cluster.node_pools] == ["gpu-worker", "scheduler", "jupyter"]
    assert s.dask.workers.replicas == 7
