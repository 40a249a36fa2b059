"""The settings, typed: frozen dataclasses built once by ``components.settings.load``.

Secret values (passwords, keys, tokens) are held as ``pulumi.Input[str]`` (an Output
marked secret when read from Pulumi config) and never as plain fields of a repr.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from components.artifacts.store import Artifact
from workloads.contract import Backend
from workloads.runs.datasets import Download

# The label every worker pool carries; Dask pods select nodes by it (not by node names,
# which the paper's scripts grep for).
POOL_ROLE_LABEL = "dask-tkg.io/pool-role"
POOL_ROLES = ("gpu", "cpu", "scheduler", "jupyter")

@dataclass(frozen=True)
class VmClass:
    name: str
    cpus: int
    memory_mb: int
    cpu_reservation: int = 0
    memory_reservation: int = 0
    vgpu_profile: str | None = None
    predefined: bool = False

    @property
    def has_gpu(self) -> bool:
        return self.vgpu_profile is not None


@dataclass(frozen=True)
class StoragePolicy:
    """A vSAN storage policy: SPBM capability id (namespace VSAN) -> value."""

    name: str
    rules: Mapping[str, Any]
    description: str = ""


@dataclass(frozen=True)
class AccessEntry:
    role: str
    subject_type: str
    subject: str
    domain: str


@dataclass(frozen=True)
class NetPermission:
    ips: str
    permissions: str
    allow_root: bool


@dataclass(frozen=True)
class Volume:
    name: str
    mount_path: str
    capacity: str


@dataclass(frozen=True)
class NodePool:
    name: str
    role: str
    replicas: int
    vm_class: str
    storage_class: str

    @property
    def labels(self) -> Mapping[str, str]:
        return {POOL_ROLE_LABEL: self.role}


@dataclass(frozen=True)
class VSphereSite:
    version: int
    server: str
    user: str
    password: Any = field(repr=False)
    insecure: bool
    datacenter: str
    compute_cluster: str
    esxi_hosts: tuple[str, ...]
    ca_pem: str  # CA of vCenter's certificate, for the program's own sessions (vcenterCaPem)
    privilege_check: bool  # vcenterPrivilegeCheck: the account's privileges checked at preview


@dataclass(frozen=True)
class SupervisorSpec:
    mode: str  # existing | create
    id: str
    server: str
    create_spec: Mapping[str, str]
    kubeconfig: Any = field(repr=False)  # secret: supervisor admin kubeconfig
    ca_pem: str  # CA of the Supervisor's API certificate (instead of allowUnverifiedSsl)
    set_tkr_library: bool  # existing mode: point the Supervisor at contentLibraryName


@dataclass(frozen=True)
class ContentLibrarySpec:
    name: str
    url: str
    datastore: str
    on_demand: bool
    existing: bool  # use the library called ``name`` as it is (no subscription made)


@dataclass(frozen=True)
class NamespaceSpec:
    name: str
    access: tuple[AccessEntry, ...]
    storage_limits: Mapping[str, str]  # policy name -> quantity


@dataclass(frozen=True)
class FileShareSpec:
    mode: str  # vsan | existing
    name: str
    size_gib: int
    policy: str
    clients: tuple[NetPermission, ...]
    nfs_server: str
    nfs_path: str
    domain: str  # vSAN file service domain; empty: the cluster's only one
    nfs_address: str  # fqdn (the access point's host) | ip (runtime.address)


TKC_V1ALPHA2 = "run.tanzu.vmware.com/v1alpha2"  # vSphere 7U3, the paper's: the only API vSphere 7 serves
TKC_API_VERSIONS = (TKC_V1ALPHA2, "run.tanzu.vmware.com/v1alpha3")
CLUSTER_API = "cluster.x-k8s.io/v1beta1"  # a Cluster on a ClusterClass (VKS, vSphere 8 U3 / VCF 9)
CLUSTER_APIS = (*TKC_API_VERSIONS, CLUSTER_API)


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    api_version: str
    tkr: str
    kubernetes_version: tuple[int, int, int]
    control_plane: NodePool
    node_pools: tuple[NodePool, ...]
    volumes: tuple[Volume, ...]
    cni: str
    pod_cidr: str
    service_cidr: str
    ready_timeout_minutes: int
    # cluster.x-k8s.io/v1beta1 only: the VMware ClusterClass, where it is published, and the
    # cluster-wide Pod Security enforce level ("": the class's own default)
    cluster_class: str
    class_namespace: str
    pod_security_default: str
    # cluster.x-k8s.io/v1beta1 only: how long `pulumi up` waits for the GPU pools' machines
    gpu_pools_ready_timeout_minutes: int

    def pools(self, role: str) -> tuple[NodePool, ...]:
        return tuple(p for p in self.node_pools if p.role == role)

    @property
    def enforces_psp(self) -> bool:
        """PodSecurityPolicy is enforced by TKG up to Kubernetes 1.24 (removed in 1.25)."""
        return self.kubernetes_version < (1, 25, 0)


@dataclass(frozen=True)
class GpuOperatorSpec:
    chart_repo: str
    chart: str
    version: str
    driver_repository: str
    driver_image: str
    driver_version: str
    feature_type: int
    ngc_registry: str
    token_in_configmap: bool
    metrics: bool  # gpuMetrics: the cluster's GPU recording rules and dashboard (addons/gpu_metrics)
    ngc_api_key: Any = field(repr=False)
    license_token: Any = field(repr=False)
    chart_pin: Artifact | None = None  # the archive pinned for chart_repo/chart/version (None: refused)

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.version.lstrip("v").split(".")[:3])


@dataclass(frozen=True)
class StorageSpec:
    provisioner: str  # nfs-subdir | vsphere-csi
    storage_class: str
    nfs_chart_version: str
    namespace: str
    dataset_size: str
    pip_cache_size: str
    dataset_mount: str
    nfs_chart_pin: Artifact | None = None  # the nfs-subdir-external-provisioner archive pinned for its version


@dataclass(frozen=True)
class NamedFile:
    """A file the data Job fetches that no benchmark's ``dataset.json`` declares (``dataFiles``):
    a site's own, for any benchmark."""

    file: str  # where the Job stores it under the dataset root
    url: str


@dataclass(frozen=True)
class FileDigest:
    """A site's digest of a file the data Job downloads (``dataChecksums``)."""

    file: str  # where the Job stores it under the dataset root (workloads/prepare.py's layout)
    sha256: str
    size: int | None = None


@dataclass(frozen=True)
class DataSpec:
    """The data Job's downloads: what each benchmark folder's ``dataset.json`` declares
    (gathered through the registry, ``workloads/runs/datasets.py``), the values of the
    settings those declarations name, the site's own files and digests."""

    enabled: bool
    image: str
    downloads: tuple[Download, ...]  # the benchmarks' declared files, registry order
    values: Mapping[str, Any]  # {setting: value} of the settings they name (months expanded YYYY-MM)
    checksums: tuple[FileDigest, ...]  # the site's, over the committed workloads/checksums.json
    files: tuple[NamedFile, ...]  # the site's files for any benchmark, fetched as `prepare --file DEST=URL`

    def value(self, setting: str) -> Any:
        """One declared setting's value (``modelWeightsUrl``, ``taxiMonths``)."""
        return self.values[setting]


@dataclass(frozen=True)
class PodResources:
    cpu: str
    memory: str
    service_type: str


@dataclass(frozen=True)
class WorkerSpec:
    replicas: int
    cpu: int
    memory: str
    gpus: int
    threads: int  # resolved: never 0
    tcmalloc: bool


@dataclass(frozen=True)
class JupyterSpec:
    enabled: bool
    gpu: bool
    cpu: str
    memory: str
    service_type: str


@dataclass(frozen=True)
class OperatorSpec:
    """``daskBackend=operator``: the Dask Kubernetes operator runs the cluster."""

    chart_version: str
    namespace: str
    autoscale: bool
    min_workers: int
    max_workers: int  # resolved: never 0
    cpu_workers: int
    cpu_worker_cpu: int
    cpu_worker_memory: str
    image_digest: str  # sha256:<64 hex> of the controller's image at the chart's tag; "" = the tag alone
    chart_pin: Artifact | None = None  # the dask-kubernetes-operator archive pinned for chart_version


class WorkerEnvironment(StrEnum):
    """``workerEnvironment``: where the Dask pods' packages come from."""

    PREPARED = "prepared"  # the locked environment on the shared claim (operator backend only)
    IMAGE = "image"  # the image as it is


@dataclass(frozen=True)
class DaskSpec:
    chart_version: str
    image: str
    dask_version: str
    extra_pip_packages: str
    scheduler: PodResources
    workers: WorkerSpec
    jupyter: JupyterSpec
    tls: bool
    lb_source_ranges: tuple[str, ...]
    allow_public_lb: bool
    backend: Backend
    operator: OperatorSpec | None = None  # set when the backend is the operator
    # Where the pods' packages come from (components/kube/prepared_env.py for the prepared one)
    environment: WorkerEnvironment = WorkerEnvironment.IMAGE
    package_index_url: str = "https://pypi.org/simple"
    chart_pin: Artifact | None = None  # the dask chart's archive pinned for chart_version

    @property
    def on_operator(self) -> bool:
        """The Dask operator runs the pods (DaskCluster, worker groups, autoscaler)."""
        return self.backend == Backend.OPERATOR

    @property
    def prepared(self) -> bool:
        """The pods run the prepared environment from the shared claim."""
        return self.environment == WorkerEnvironment.PREPARED


@dataclass(frozen=True)
class TeamMember:
    """A person of ``users`` (or an SSO group of people): their own namespace in the workload
    cluster, where their Dask clusters run under their own identity (components/dask/team/team.py)."""

    name: str  # the vSphere SSO identity, <user>@<domain> (a group's <group>@<domain>)
    kind: str  # User | Group: how the RoleBinding names the subject
    gpus: int  # the namespace's GPU quota (requests.nvidia.com/gpu)
    idle_timeout: int  # seconds an idle cluster of theirs lives (the DaskCluster's idleTimeout); 0 = ever
    namespace: str  # dask-<the local part, as a DNS label> (components/settings/team.py)
    max_lifetime: int = 0  # seconds any cluster of theirs lives, idle or not (the team's reclaimer); 0 = ever


@dataclass(frozen=True)
class Settings:
    project: str
    vsphere: VSphereSite
    supervisor: SupervisorSpec
    vm_classes: tuple[VmClass, ...]  # custom first, then the pre-defined ones
    storage_policies: tuple[StoragePolicy, ...]
    content_library: ContentLibrarySpec
    namespace: NamespaceSpec
    file_share: FileShareSpec
    cluster: ClusterSpec
    gpu_operator: GpuOperatorSpec
    storage: StorageSpec
    data: DataSpec
    dask: DaskSpec
    team: tuple[TeamMember, ...] = ()  # users: the people with namespaces of their own

    @property
    def custom_vm_classes(self) -> tuple[VmClass, ...]:
        return tuple(c for c in self.vm_classes if not c.predefined)

    def vm_class(self, name: str) -> VmClass:
        return next(c for c in self.vm_classes if c.name == name)

    @property
    def gpu_nodes(self) -> int:
        return sum(p.replicas for p in self.cluster.pools("gpu"))
