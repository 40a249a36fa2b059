"""Cross-field rules: settings that are each valid but do not fit together.

Every rule returns problems that name the key(s) involved and what would fit, so a bad
combination fails at ``pulumi preview``, not partway through a cluster build.
"""
from __future__ import annotations

import ipaddress
import re

import components.facts.addon_facts as addon_facts
import components.facts.support_matrix as support_matrix
import components.settings.schema as schema
import components.settings.values as values
from components.settings.class_variables import class_variable_problems
from components.settings.downloads import download_checks
from components.settings.errors import Problem
from components.settings.exposure import download_problems, exposure_problems
from components.settings.file_share_clients import client_problems
from components.settings.model import CLUSTER_API, TKC_V1ALPHA2, Settings
from components.settings.operator import operator_checks
from components.settings.placement import co_placement_problems, placement_problems
from components.settings.soundness import judged
from components.settings.vsan import rule_problems
from components.settings.worker_environment import pods_cuda, worker_environment_checks

# vGPU in TKGS guest clusters arrived with TKR v1.20.8---vmware.1-tkg.2.
MIN_VGPU_KUBERNETES = (1, 20, 8)
# TKC v1alpha3 (vSphere 8) takes TKRs from Kubernetes 1.21: vSphere 8 lists the 1.20 TKRs as
# COMPATIBLE False for it (`kubectl get tkr`), and a cluster on one never becomes ready.
MIN_V1ALPHA3_KUBERNETES = (1, 21, 0)
SUPERVISOR_CREATE_KEYS = ("managementNetwork", "managementStartIp", "managementSubnetMask", "managementGateway",
                          "masterDns", "workerDns", "masterNtp", "egressCidr", "ingressCidr", "podCidr",
                          "serviceCidr", "edgeCluster", "dvsUuid", "searchDomains")
_DNS_LABEL = r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
_DNS_NAME = re.compile(rf"^(?=.{{1,253}}$){_DNS_LABEL}(\.{_DNS_LABEL})*$")


def cross_checks(s: Settings) -> list[Problem]:
    """Every rule that reads only sound parts of ``s`` (``soundness``: a part holding a refused
    setting is judged once that setting is fixed)."""
    problems, waiting = judged(CROSS_RULES, s)
    if not problems and not waiting:  # sums over pools need each pod and pool to be sound on its own
        problems.extend(judged((co_placement_problems,), s)[0])
    return problems


def _vcenter(s: Settings) -> list[Problem]:
    out = []
    if not s.vsphere.server:
        out.append(Problem("vsphere:vsphereServer", "is required: the vCenter address"))
    if not s.vsphere.user:
        out.append(Problem("vsphere:user", "is required: the vCenter user"))
    return out


def _supervisor(s: Settings) -> list[Problem]:
    out = []
    if s.vsphere.version >= 8 and s.supervisor.mode == "existing" and not s.supervisor.id:
        out.append(Problem("supervisorId", f"is required on vSphere {s.vsphere.version} with supervisorMode=existing"))
    if s.supervisor.mode == "create" and s.vsphere.version >= 8:
        out.append(Problem("supervisorMode", "create is supported on vSphere 7 (vsphere.Supervisor, NSX); on vSphere 8"
                                             " enable the Supervisor first and give supervisorId"))
    elif s.supervisor.mode == "create":
        missing = [k for k in SUPERVISOR_CREATE_KEYS if k not in s.supervisor.create_spec]
        if missing:
            out.append(Problem("supervisorCreateSpec", f"supervisorMode=create needs {', '.join(missing)}"))
        else:
            out.extend(_search_domains(s.supervisor.create_spec["searchDomains"]))
    if not s.supervisor.server and s.supervisor.kubeconfig is None:
        out.append(Problem("supervisorServer",
                           "is required (the Supervisor's API address) unless supervisorKubeconfig is set"))
    return out


def _cluster_api(s: Settings) -> list[Problem]:
    out = []
    if s.cluster.api_version != TKC_V1ALPHA2 and s.vsphere.version < 8:
        out.append(Problem("clusterApi", f"{s.cluster.api_version} needs vsphereVersion 8 or 9;"
                                         " vSphere 7 serves run.tanzu.vmware.com/v1alpha2"))
    if s.cluster.api_version != TKC_V1ALPHA2 and s.cluster.kubernetes_version < MIN_V1ALPHA3_KUBERNETES:
        out.append(Problem("tkr", f"{s.cluster.tkr} is not compatible with clusterApi"
                                  f" {s.cluster.api_version}: vSphere 8 marks the TKRs before Kubernetes 1.21"
                                  " COMPATIBLE False for v1alpha3 and the cluster never becomes ready; use a"
                                  " v1.21+ TKR or clusterApi run.tanzu.vmware.com/v1alpha2"))
    return out


def _tkr_library(s: Settings) -> list[Problem]:
    out = []
    if s.supervisor.set_tkr_library and s.supervisor.mode != "existing":
        out.append(Problem("supervisorSetTkrLibrary", "applies to supervisorMode=existing; with create the"
                                                      " Supervisor is enabled with contentLibraryName"))
    return out


def _search_domains(text: str) -> list[Problem]:
    """vsphere.Supervisor's search_domains: exactly one non-empty DNS domain
    (terraform-provider-vsphere resource_vsphere_supervisor.go: MinItems 1, MaxItems 1,
    StringIsNotEmpty)."""
    domains = [d.strip() for d in text.split(",")]
    if len(domains) != 1 or not domains[0]:
        return [Problem("supervisorCreateSpec", f"searchDomains must be exactly one DNS domain"
                                                f" (e.g. corp.example.com), got {text!r}")]
    if not _DNS_NAME.match(domains[0]):
        return [Problem("supervisorCreateSpec", f"searchDomains {domains[0]!r} is not a DNS domain name")]
    return []


def _vm_classes(s: Settings) -> list[Problem]:
    out = []
    seen: set[str] = set()
    for i, c in enumerate(s.custom_vm_classes):
        if c.name in seen:
            out.append(Problem(f"vmClasses[{i}].name", f"{c.name!r} is declared twice"))
        seen.add(c.name)
        if c.has_gpu and c.memory_reservation != 100:
            out.append(Problem(f"vmClasses[{i}].memoryReservation",
                               f"VM class {c.name!r} has a vGPU ({c.vgpu_profile}) and must reserve 100% of"
                               f" its memory, got {c.memory_reservation}"))
    names = [c.name for c in s.custom_vm_classes]
    for name in {c.name for c in s.vm_classes if c.predefined} & set(names):
        out.append(Problem("vmClasses", f"{name!r} is a pre-defined class; give the custom class another name"))
    if any(c.has_gpu for c in s.vm_classes) and not s.vsphere.esxi_hosts:
        out.append(Problem("esxiHosts", "list the ESXi hosts that must offer the vGPU profiles"
                                        " the VM classes name (checked at preview)"))
    return out


def _storage(s: Settings) -> list[Problem]:
    out = []
    names = [p.name for p in s.storage_policies]
    for i, policy in enumerate(s.storage_policies):
        if names.index(policy.name) != i:
            out.append(Problem(f"storagePolicies[{i}].name", f"{policy.name!r} is declared twice"))
        for message in rule_problems(dict(policy.rules)):
            out.append(Problem(f"storagePolicies[{i}]", f"{policy.name}: {message}"))
    for limited in s.namespace.storage_limits:
        if limited not in names:
            out.append(Problem("namespaceStorageLimits",
                               f"{limited!r} is not one of storagePolicies ({', '.join(names)})"))
    return out


def _pools(s: Settings) -> list[Problem]:
    out = []
    known_classes = {c.name for c in s.vm_classes}
    policies = {p.name for p in s.storage_policies}
    cp = s.cluster.control_plane
    if cp.vm_class not in known_classes:
        out.append(Problem("controlPlaneVmClass", f"{cp.vm_class!r} is not offered to the namespace"
                                                  " (vmClasses + predefinedVmClasses:"
                                                  f" {', '.join(sorted(known_classes))})"))
    elif s.vm_class(cp.vm_class).has_gpu:
        out.append(Problem("controlPlaneVmClass", f"{cp.vm_class!r} has a vGPU; control-plane nodes don't use one"))
    if cp.storage_class not in policies:
        out.append(Problem("controlPlaneStorageClass", f"{cp.storage_class!r} is not one of storagePolicies"
                                                       f" ({', '.join(sorted(policies))})"))
    seen: set[str] = set()
    for i, pool in enumerate(s.cluster.node_pools):
        key = f"nodePools[{i}]"
        if pool.name in seen:
            out.append(Problem(f"{key}.name", f"{pool.name!r} is used by two pools"))
        seen.add(pool.name)
        if pool.storage_class not in policies:
            out.append(Problem(f"{key}.storageClass", f"{pool.storage_class!r} is not one of storagePolicies"
                                                      f" ({', '.join(sorted(policies))})"))
        if pool.vm_class not in known_classes:
            out.append(Problem(f"{key}.vmClass", f"{pool.vm_class!r} is not offered to the namespace"
                                                 f" ({', '.join(sorted(known_classes))})"))
            continue
        gpu_class = s.vm_class(pool.vm_class).has_gpu
        if pool.role == "gpu" and not gpu_class:
            out.append(Problem(f"{key}.vmClass", f"pool {pool.name!r} has role=gpu but VM class"
                                                 f" {pool.vm_class!r} has no vGPU profile"))
        if pool.role in ("cpu", "scheduler") and gpu_class:
            out.append(Problem(f"{key}.vmClass", f"pool {pool.name!r} has role={pool.role} but VM class"
                                                 f" {pool.vm_class!r} carries a vGPU nothing would use"))
        if pool.role == "jupyter" and gpu_class and not s.dask.jupyter.gpu:
            out.append(Problem(f"{key}.vmClass", f"pool {pool.name!r} gives Jupyter a vGPU but jupyterGpu is false"))
    if s.gpu_nodes and s.cluster.kubernetes_version < MIN_VGPU_KUBERNETES:
        out.append(Problem("tkr", f"{s.cluster.tkr} does not support vGPU node pools; use v1.20.8---vmware.1-tkg.2"
                                  " or newer"))
    return out


def _gpu_capacity(s: Settings) -> list[Problem]:
    out = []
    gpu_nodes = s.gpu_nodes
    workers = s.dask.workers
    jupyter_on_gpu_node = (s.dask.jupyter.enabled and s.dask.jupyter.gpu
                           and not any(p.role == "jupyter" for p in s.cluster.node_pools))
    if gpu_nodes == 0:
        out.append(Problem("nodePools", "no pool has role=gpu: the Dask workers need GPU nodes"))
        return out
    if workers.replicas == 0:
        out.append(Problem("gpuWorkers", f"no GPU node is left for workers: {gpu_nodes} GPU node(s) and"
                                         " Jupyter takes one (jupyterGpu=true)"))
    wanted = workers.replicas * workers.gpus + (1 if jupyter_on_gpu_node else 0)
    if wanted > gpu_nodes:
        extra = " + 1 for Jupyter (jupyterGpu=true)" if jupyter_on_gpu_node else ""
        fix = (f"; set gpuWorkers to {gpu_nodes - 1}, or to 0 to follow the GPU nodes (all but Jupyter's)"
               if jupyter_on_gpu_node else "")
        out.append(Problem("gpuWorkers", f"{workers.replicas} GPU worker(s){extra} need {wanted} GPU nodes but the"
                                         f" role=gpu pools have {gpu_nodes}; Kubernetes does not share a GPU"
                                         f" between pods{fix}"))
    gpu_class = s.vm_class(s.cluster.pools("gpu")[0].vm_class)
    if workers.cpu > gpu_class.cpus:
        out.append(Problem("workerCpu", f"{workers.cpu} CPUs per worker exceed VM class {gpu_class.name!r}"
                                        f" ({gpu_class.cpus} vCPU)"))
    if values.quantity_bytes(workers.memory) > gpu_class.memory_mb * 2**20:
        out.append(Problem("workerMemory", f"{workers.memory} per worker exceeds VM class {gpu_class.name!r}"
                                           f" ({gpu_class.memory_mb} MiB)"))
    return out


def _gpu_driver(s: Settings) -> list[Problem]:
    """The driver tag the GPU operator will really pull (``addon_facts.py``)."""
    op = s.gpu_operator
    known = addon_facts.gpu_operator_facts(op.version)
    suffix = addon_facts.os_suffix(op.driver_version)
    if not s.gpu_nodes or known is None or not known.appends_os_tag or suffix is None:
        return []
    pulled = addon_facts.resolved_driver_image(known, op.driver_repository, op.driver_image, op.driver_version)
    return [Problem("vgpuDriverVersion", f"GPU operator {op.version} appends -<os><version> from the node's labels"
                                         f" to the driver version, so {op.driver_version!r} pulls {pulled!r}:"
                                         f" give {op.driver_version.removesuffix(suffix)!r}")]


def _driver_without_known_vulnerability(s: Settings) -> list[Problem]:
    """A guest driver below its branch's security floor (``support_matrix.DRIVER_BULLETINS``,
    each with its bulletin) is refused: the first fixed guest driver and vGPU Manager are named,
    since the hosts' manager decides the guest driver."""
    driver = s.gpu_operator.driver_version
    bulletin = support_matrix.driver_bulletin(driver) if s.gpu_nodes else None
    if bulletin is None:
        return []
    return [Problem("vgpuDriverVersion", f"{driver} is affected by {bulletin.bulletin} ({bulletin.affected}):"
                                         f" the first fixed guest driver is {bulletin.fixed_guest} (vGPU"
                                         f" {bulletin.fixed_vgpu}, with vGPU Manager {bulletin.fixed_manager} on the"
                                         f" hosts). Upgrade the hosts' vGPU Manager to vGPU {bulletin.fixed_vgpu} or"
                                         f" later and set vgpuDriverVersion to its guest driver ({bulletin.source})")]


def _gpu_operator_apis(s: Settings) -> list[Problem]:
    """A GPU operator whose objects use APIs the cluster's Kubernetes no longer serves never
    installs there (``addon_facts.py``: ``removed_apis``, with its source)."""
    op, cluster = s.gpu_operator, s.cluster
    known = addon_facts.gpu_operator_facts(op.version)
    if not s.gpu_nodes or known is None or not addon_facts.uses_removed_apis(known, cluster.kubernetes_version):
        return []
    major, minor, _ = cluster.kubernetes_version
    return [Problem("gpuOperatorVersion", f"GPU operator {op.version} uses {' and '.join(known.removed_apis)},"
                                          f" which Kubernetes {major}.{minor} (tkr {cluster.tkr}) no longer serves:"
                                          f" set gpuOperatorVersion {schema.default('gpuOperatorVersion')}, or"
                                          " a tkr before"
                                          f" 1.{addon_facts.APIS_REMOVED_IN[1]}")]


def _driver_runs_the_images_cuda(s: Settings) -> list[Problem]:
    """The guest driver must run the CUDA libraries the Dask pods load (the prepared
    environment's, else the image's), or every GPU worker fails at its first CUDA call: RAPIDS'
    own floor for their release and CUDA major where it is known
    (``support_matrix.RAPIDS_DRIVER_FLOOR``), else CUDA's minor-version floor (``addon_facts.py``:
    ``MIN_DRIVER_FOR_CUDA``), each with its source."""
    rapids, cuda, what = pods_cuda(s)
    driver = addon_facts.driver_version_tuple(s.gpu_operator.driver_version)
    floor = support_matrix.rapids_driver_floor(rapids, cuda)
    needed = floor or (addon_facts.MIN_DRIVER_FOR_CUDA.get(cuda) if cuda is not None else None)
    if not s.gpu_nodes or driver is None or needed is None or driver >= needed:
        return []
    who = f"RAPIDS {rapids} on CUDA {cuda}" if floor else f"CUDA {cuda}"
    return [Problem("vgpuDriverVersion", f"{s.gpu_operator.driver_version} cannot run {what} ({who} needs a"
                                         f" driver >= {addon_facts.driver_version_text(needed)}): use your"
                                         " hosts' vGPU release with a newer guest"
                                         " driver, or CUDA libraries built for an older CUDA")]


def _cni_applied(s: Settings) -> list[Problem]:
    """A Cluster API Cluster carries no CNI: the Cluster this program declares has no field for
    it (``components/cluster/manifests.py``), so VKS installs its default, Antrea, whatever
    ``cni`` says; only a TanzuKubernetesCluster sets ``settings.network.cni``."""
    if s.cluster.api_version != CLUSTER_API or s.cluster.cni == "antrea":
        return []
    return [Problem("cni", f"{s.cluster.cni} is not applied with clusterApi {CLUSTER_API}: the Cluster carries no"
                           " CNI and VKS installs its default, Antrea; leave cni at antrea, or use clusterApi"
                           " run.tanzu.vmware.com/v1alpha3, whose TanzuKubernetesCluster sets it")]


def _file_share(s: Settings) -> list[Problem]:
    out = []
    fs = s.file_share
    if fs.mode == "vsan":
        if fs.policy not in {p.name for p in s.storage_policies}:
            out.append(Problem("fileSharePolicy", f"{fs.policy!r} is not one of storagePolicies"))
        wanted = values.quantity_bytes(s.storage.dataset_size) + values.quantity_bytes(s.storage.pip_cache_size)
        if wanted > fs.size_gib * 2**30:
            out.append(Problem("datasetPvcSize", f"datasetPvcSize {s.storage.dataset_size} + pipCachePvcSize"
                                                 f" {s.storage.pip_cache_size} exceed the file share"
                                                 f" (fileShareSizeGib {fs.size_gib})"))
    else:
        for key, value in (("nfsServer", fs.nfs_server), ("nfsPath", fs.nfs_path)):
            if not value:
                out.append(Problem(key, "is required with fileShareMode=existing"))
        if s.storage.provisioner == "vsphere-csi":
            out.append(Problem("rwxProvisioner", "vsphere-csi file volumes need vSAN file service"
                                                 " (fileShareMode=vsan); use nfs-subdir with an existing export"))
        if fs.nfs_path and not fs.nfs_path.startswith("/"):
            out.append(Problem("nfsPath", "must be an absolute export path"))
    return out


def _network(s: Settings) -> list[Problem]:
    out = []
    pods = ipaddress.ip_network(s.cluster.pod_cidr)
    services = ipaddress.ip_network(s.cluster.service_cidr)
    if pods.overlaps(services):
        out.append(Problem("podCidr", f"{pods} overlaps serviceCidr {services}"))
    return out + exposure_problems(s) + download_problems(s)


def _vcenter_password(s: Settings) -> list[Problem]:
    if s.vsphere.password is None:
        return [Problem("vsphere:password", "is required (set it with `pulumi config set --secret vsphere:password`)")]
    return []


def _gpu_secrets(s: Settings) -> list[Problem]:
    out = []
    if s.gpu_nodes:
        for key, value in (("ngcApiKey", s.gpu_operator.ngc_api_key),
                           ("vgpuLicenseToken", s.gpu_operator.license_token)):
            if value is None:
                out.append(Problem(key, f"is required for GPU nodes (set it with `pulumi config set --secret {key}`)"))
        if s.gpu_operator.version_tuple < (25, 10, 0) and not s.gpu_operator.token_in_configmap:
            out.append(Problem("licenseTokenInConfigMap", f"gpuOperatorVersion {s.gpu_operator.version} reads the vGPU"
                                                          " licence token only from a ConfigMap: set"
                                                          " licenseTokenInConfigMap=true to accept that, or use a"
                                                          " GPU operator >= 25.10 (Secret)"))
    return out


def _class_variables(s: Settings) -> list[Problem]:
    """Every variable the Cluster sets, checked against its ClusterClass's generation: the
    Supervisor's 1.2x API server would otherwise accept or prune what the class refuses."""
    if s.cluster.cluster_class is None:  # already a problem of clusterClass
        return []
    return [Problem(key, problem) for key, problem in class_variable_problems(s.cluster)]


# in the order their problems are reported
CROSS_RULES = (_vcenter, _supervisor, _cluster_api, _tkr_library, _vm_classes, _storage, _pools, _gpu_capacity,
               placement_problems, _file_share, client_problems, _network, _vcenter_password, _gpu_secrets,
               _gpu_driver, _driver_without_known_vulnerability, _gpu_operator_apis, _driver_runs_the_images_cuda,
               _cni_applied, operator_checks, _class_variables, worker_environment_checks, download_checks)
