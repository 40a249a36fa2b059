"""Build the frozen Settings from a config source, collecting every problem.

The source is anything with ``get(key)``, ``get_secret(key)`` and ``provider(ns, key,
secret)``: ``PulumiSource`` in a Pulumi program, a plain dict in unit tests.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

import components.facts.addon_facts as addon_facts
import components.facts.cluster_classes as cluster_classes
import components.settings.checks as checks
import components.settings.downloads as downloads
import components.settings.records as records
import components.settings.values as values
from components.facts.dask_facts import nanny_environ_fact
from components.facts.vm_classes import PREDEFINED_VM_CLASS_SIZES
from components.settings.charts import chart_checks, read_chart_pins, with_chart_pins
from components.settings.errors import Problem, SettingsError
from components.settings.model import (
    CLUSTER_APIS,
    POOL_ROLES,
    AccessEntry,
    Backend,
    ClusterSpec,
    ContentLibrarySpec,
    DaskSpec,
    DataSpec,
    FileDigest,
    FileShareSpec,
    GpuOperatorSpec,
    JupyterSpec,
    NamedFile,
    NamespaceSpec,
    NetPermission,
    NodePool,
    PodResources,
    Settings,
    StoragePolicy,
    StorageSpec,
    SupervisorSpec,
    VmClass,
    Volume,
    VSphereSite,
    WorkerSpec,
)
from components.settings.operator import read_operator
from components.settings.schema import coerce, project
from components.settings.soundness import Unsound, judged
from components.settings.team import read_team, team_checks
from components.settings.vsan import VSAN_RULE_FIELDS
from components.settings.worker_environment import read_worker_environment
from workloads.runs import datasets

F = records.Field


class Source(Protocol):
    def get(self, key: str) -> Any | None: ...

    def get_secret(self, key: str) -> Any | None: ...

    def provider(self, namespace: str, key: str, secret: bool = False) -> Any | None: ...


class _Reader:
    """Typed access to declared settings: default applied, problems recorded."""

    def __init__(self, source: Source, problems: list[Problem]):
        self.project, self.decls = project()
        self.source = source
        self.problems = problems

    def __call__(self, key: str) -> Any:
        decl = self.decls[key]  # KeyError: the program reads an undeclared key (a bug)
        if decl.secret:
            return self.source.get_secret(key)
        raw = self.source.get(key)
        if raw is None:
            if not decl.has_default:
                self.problems.append(Problem(key, f"is required: {decl.description}"))
                return None
            return coerce(decl, decl.default, self.problems)
        return coerce(decl, raw, self.problems)

    def check(self, key: str, parse: Callable[[Any], Any]) -> Any:
        """Read ``key`` and run ``parse`` on it; a ValueError becomes a problem."""
        value = self(key)
        if value is None:
            return None
        try:
            return parse(value)
        except ValueError as exc:
            self.problems.append(Problem(key, f"{exc} (got {value!r})"))
            return None

    def one_of(self, key: str, *allowed: Any) -> Any:
        def parse(value: Any) -> Any:
            if value not in allowed:
                raise ValueError(f"must be one of {', '.join(map(str, allowed))}")
            return value

        return self.check(key, parse)

    def at_least(self, key: str, low: int) -> Any:
        def parse(value: int) -> int:
            if value < low:
                raise ValueError(f"must be >= {low}")
            return value

        return self.check(key, parse)

    def records(self, key: str, fields: dict[str, records.Field]) -> list[dict[str, Any]]:
        items = self(key) or ()
        parsed = (records.parse_record(key, i, item, fields, self.problems) for i, item in enumerate(items))
        return [p for p in parsed if p is not None]


# Settings renamed since a release: a stack that still sets the old key fails at preview.
RENAMED = {"tkcApiVersion": "clusterApi"}


def load(source: Source) -> Settings:
    """Read, validate and freeze every setting. Raises SettingsError listing all problems: each
    refused value, and what every rule that does not read a refused part finds (``soundness``)."""
    problems: list[Problem] = []
    r = _Reader(source, problems)
    problems.extend(Problem(old, f"is renamed {new}: set {new} instead") for old, new in RENAMED.items()
                    if source.get(old) is not None)
    _unverified_tls(r, source)
    parts, unsound = _parts(r, source)
    site_chart_pins = parts.pop("chart_pins")
    settings = with_chart_pins(Settings(project=r.project, **parts), () if "chart_pins" in unsound else site_chart_pins)
    problems.extend(checks.cross_checks(settings))
    if "chart_pins" not in unsound:
        problems.extend(judged((lambda s: chart_checks(s, site_chart_pins, already=problems),), settings)[0])
    problems.extend(judged((team_checks,), settings)[0])
    if problems:
        raise SettingsError(problems, r.project)
    return settings


def _parts(r: _Reader, source: Source) -> tuple[dict[str, Any], set[str]]:
    """Each part of the settings, read in the order the problems are reported (a part that needs
    another after it), ``Unsound`` in place of each whose reading recorded a problem (``soundness``),
    and their names."""
    parts: dict[str, Any] = {}
    unsound: set[str] = set()
    readers: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("vsphere", lambda: _vsphere(r, source)), ("supervisor", lambda: _supervisor(r)),
        ("vm_classes", lambda: _vm_classes(r)), ("storage_policies", lambda: _storage_policies(r)),
        ("namespace", lambda: _namespace(r)), ("content_library", lambda: _content_library(r)),
        ("file_share", lambda: _file_share(r)), ("cluster", lambda: _cluster(r)),
        ("gpu_operator", lambda: _gpu_operator(r)), ("storage", lambda: _storage(r)), ("data", lambda: _data(r)),
        ("dask", lambda: _dask(r, parts["cluster"])), ("chart_pins", lambda: read_chart_pins(r)),
        ("team", lambda: read_team(r)))
    for name, read in readers:
        before = len(r.problems)
        parts[name] = read()
        if len(r.problems) > before:
            unsound.add(name)
    if "cluster" in unsound:  # the workers follow the GPU pools
        unsound.add("dask")
    return {name: Unsound(name) if name in unsound else part for name, part in parts.items()}, unsound


def _unverified_tls(r: _Reader, source: Source) -> None:
    """An unverified vCenter is refused unless ``acknowledgeUnverifiedTls`` says it is meant
    (a refusal of the combination: the vCenter site's values stay sound)."""
    insecure = _insecure(source)
    acknowledged = r("acknowledgeUnverifiedTls")  # read always, so that its type is checked on every stack
    if insecure and not acknowledged:
        r.problems.append(Problem("acknowledgeUnverifiedTls", (
            "vsphere:allowUnverifiedSsl is true and nothing says it is meant: the provider would send the vCenter"
            " password to whoever answers at vsphereServer. Trust vCenter's CA (SSL_CERT_FILE, vcenterCaPem,"
            " supervisorCaPem) and set vsphere:allowUnverifiedSsl false, or set acknowledgeUnverifiedTls=true for"
            " a vCenter you cannot give a trusted certificate (preview still names what goes unchecked)")))


def _insecure(source: Source) -> bool:
    """``vsphere:allowUnverifiedSsl``: the provider (and the program's own sessions) skip vCenter's certificate."""
    return str(source.provider("vsphere", "allowUnverifiedSsl") or "false").lower() == "true"


def _vsphere(r: _Reader, source: Source) -> VSphereSite:
    """The vCenter site: its address and credentials are the vsphere provider's keys."""
    return VSphereSite(
        version=r.one_of("vsphereVersion", 7, 8, 9),
        server=source.provider("vsphere", "vsphereServer") or "",
        user=source.provider("vsphere", "user") or "",
        password=source.provider("vsphere", "password", secret=True),
        insecure=_insecure(source),
        datacenter=r("datacenter"),
        compute_cluster=r("computeCluster"),
        esxi_hosts=r("esxiHosts") or (),
        ca_pem=r.check("vcenterCaPem", _pem_certificate) or "",
        privilege_check=r("vcenterPrivilegeCheck"),
    )


def _supervisor(r: _Reader) -> SupervisorSpec:
    """The Supervisor: an existing one, or one this program enables (vSphere 7)."""
    return SupervisorSpec(
        mode=r.one_of("supervisorMode", "existing", "create"),
        id=r("supervisorId") or "",
        server=r("supervisorServer") or "",
        create_spec=_key_values(r, "supervisorCreateSpec"),
        kubeconfig=r("supervisorKubeconfig"),
        ca_pem=r.check("supervisorCaPem", _pem_certificate) or "",
        set_tkr_library=r("supervisorSetTkrLibrary"),
    )


def _storage_policies(r: _Reader) -> tuple[StoragePolicy, ...]:
    """The vSAN storage policies the program creates."""
    return tuple(
        StoragePolicy(name=rec.pop("name"), rules={k: v for k, v in rec.items() if v is not None})
        for rec in r.records("storagePolicies", {"name": F(values.rfc1123_label), **VSAN_RULE_FIELDS})
    )


def _namespace(r: _Reader) -> NamespaceSpec:
    """The vSphere Namespace: its name, access and storage limits."""
    return NamespaceSpec(
        name=r.check("namespaceName", values.rfc1123_label),
        access=_access(r),
        storage_limits=_storage_limits(r),
    )


def _content_library(r: _Reader) -> ContentLibrarySpec:
    """The content library of the Kubernetes releases."""
    return ContentLibrarySpec(
        name=r("contentLibraryName"),
        url=r.check("contentLibraryUrl", _url),
        datastore=r("contentLibraryDatastore"),
        on_demand=r("contentLibraryOnDemand"),
        existing=r("contentLibraryExisting"),
    )


def _file_share(r: _Reader) -> FileShareSpec:
    """The RWX file share; its clients as given (``file_share_clients``: never guessed)."""
    return FileShareSpec(
        mode=r.one_of("fileShareMode", "vsan", "existing"),
        name=r.check("fileShareName", values.vsan_share_name),
        size_gib=r.at_least("fileShareSizeGib", 1),
        policy=r("fileSharePolicy"),
        clients=tuple(
            NetPermission(ips=rec["ips"], permissions=rec["permissions"], allow_root=rec["allowRoot"])
            for rec in r.records("fileShareClients", _NET_PERMISSION_FIELDS)
        ),
        nfs_server=r("nfsServer") or "",
        nfs_path=r("nfsPath") or "",
        domain=r("fileShareDomain") or "",
        nfs_address=r.one_of("fileShareNfsAddress", "fqdn", "ip"),
    )


def _gpu_operator(r: _Reader) -> GpuOperatorSpec:
    """The GPU operator's chart and the vGPU guest driver it installs."""
    return GpuOperatorSpec(
        chart_repo=r.check("gpuOperatorChartRepo", _url),
        chart=r("gpuOperatorChart"),
        version=r.check("gpuOperatorVersion", _chart_version),
        driver_repository=r("vgpuDriverRepository"),
        driver_image=addon_facts.nvaie_driver_image(r("vgpuDriverImage"), r.check("nvaieVersion", _nvaie_version)),
        driver_version=r("vgpuDriverVersion"),
        feature_type=r.one_of("vgpuFeatureType", 0, 1, 2, 4),
        ngc_registry=r("ngcRegistry"),
        token_in_configmap=r("licenseTokenInConfigMap"),
        ngc_api_key=r("ngcApiKey"),
        license_token=r("vgpuLicenseToken"),
        metrics=r("gpuMetrics"),
    )


def _storage(r: _Reader) -> StorageSpec:
    """The RWX provisioner and the Dask namespace's claims."""
    return StorageSpec(
        provisioner=r.one_of("rwxProvisioner", "nfs-subdir", "vsphere-csi"),
        storage_class=r.check("rwxStorageClass", values.rfc1123_label),
        nfs_chart_version=r.check("nfsProvisionerChartVersion", _chart_version),
        namespace=r.check("daskNamespace", values.rfc1123_label),
        dataset_size=r.check("datasetPvcSize", values.quantity),
        pip_cache_size=r.check("pipCachePvcSize", values.quantity),
        dataset_mount=r.check("datasetMountPath", _abs_path),
    )


def _data(r: _Reader) -> DataSpec:
    """The data Job: what the benchmarks declare, the settings their URLs come from (each
    read and checked by what it holds: ``datasets.settings``), the site's files and digests."""
    declared = datasets.downloads()
    read: dict[str, Callable[[Any], Any]] = {"url": _url, "template": _month_template, "months": _months}
    return DataSpec(
        enabled=r("dataPrepEnabled"),
        image=r.check("dataJobImage", values.pinned_image),
        downloads=declared,
        values={key: r.check(key, read[kind]) for key, kind in datasets.settings(declared)},
        checksums=tuple(FileDigest(**rec) for rec in r.records("dataChecksums", downloads.DIGEST_FIELDS)),
        files=tuple(NamedFile(**rec) for rec in r.records("dataFiles", downloads.FILE_FIELDS)),
    )


_NET_PERMISSION_FIELDS = {
    "ips": F(records.text),
    "permissions": F(records.choice("READ_WRITE", "READ_ONLY", "NO_ACCESS")),
    "allowRoot": F(records.boolean, required=False, default=False),
}


def _access(r: _Reader) -> tuple[AccessEntry, ...]:
    fields = {
        "role": F(records.choice("OWNER", "EDIT", "VIEW")),
        "subjectType": F(records.choice("USER", "GROUP"), required=False, default="USER"),
        "subject": F(records.text),
        "domain": F(records.text, required=False, default="vsphere.local"),
    }
    return tuple(
        AccessEntry(role=rec["role"], subject_type=rec["subjectType"], subject=rec["subject"], domain=rec["domain"])
        for rec in r.records("namespaceAccess", fields)
    )


def _vm_classes(r: _Reader) -> tuple[VmClass, ...]:
    fields = {
        "name": F(values.rfc1123_label),
        "cpus": F(records.integer(1, 128)),
        "memoryMb": F(records.integer(512)),
        "cpuReservation": F(records.integer(0, 100), required=False, default=0),
        "memoryReservation": F(records.integer(0, 100), required=False, default=0),
        "vgpuProfile": F(records.text, required=False, default=None),
    }
    custom = [
        VmClass(
            name=rec["name"], cpus=rec["cpus"], memory_mb=rec["memoryMb"],
            cpu_reservation=rec["cpuReservation"], memory_reservation=rec["memoryReservation"],
            vgpu_profile=rec["vgpuProfile"],
        )
        for rec in r.records("vmClasses", fields)
    ]
    predefined = []
    for i, name in enumerate(r("predefinedVmClasses") or ()):
        if name not in PREDEFINED_VM_CLASS_SIZES:
            r.problems.append(Problem(
                f"predefinedVmClasses[{i}]",
                f"{name!r} is not a pre-defined VM class; known: {', '.join(PREDEFINED_VM_CLASS_SIZES)}",
            ))
            continue
        cpus, memory = PREDEFINED_VM_CLASS_SIZES[name]
        predefined.append(VmClass(name=name, cpus=cpus, memory_mb=memory, predefined=True))
    return tuple(custom + predefined)


def _storage_limits(r: _Reader) -> dict[str, str]:
    limits: dict[str, str] = {}
    for i, item in enumerate(r("namespaceStorageLimits") or ()):
        policy, sep, amount = item.partition("=")
        try:
            if not sep:
                raise ValueError("must be policy=quantity, e.g. vsan-r5=4Ti")
            values.quantity_bytes(amount)
        except ValueError as exc:
            r.problems.append(Problem(f"namespaceStorageLimits[{i}]", f"{exc} (got {item!r})"))
            continue
        limits[policy.strip()] = amount.strip()
    return limits


def _key_values(r: _Reader, key: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, item in enumerate(r(key) or ()):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            r.problems.append(Problem(f"{key}[{i}]", f"must be key=value (got {item!r})"))
            continue
        out[name.strip()] = value.strip()
    return out


def _cluster(r: _Reader) -> ClusterSpec:
    pool_fields = {
        "name": F(values.rfc1123_label),
        "role": F(records.choice(*POOL_ROLES)),
        "replicas": F(records.integer(0, 64)),
        "vmClass": F(records.text),
        "storageClass": F(records.text),
    }
    pools = tuple(
        NodePool(name=p["name"], role=p["role"], replicas=p["replicas"], vm_class=p["vmClass"],
                 storage_class=p["storageClass"])
        for p in r.records("nodePools", pool_fields)
    )
    volume_fields = {"name": F(values.rfc1123_label), "mountPath": F(_abs_path), "capacity": F(values.quantity)}
    volumes = tuple(
        Volume(name=v["name"], mount_path=v["mountPath"], capacity=v["capacity"])
        for v in r.records("nodeVolumes", volume_fields)
    )
    tkr = r("tkr")
    k8s = r.check("tkr", values.tkr_kubernetes_version)
    return ClusterSpec(
        name=r.check("clusterName", values.rfc1123_label),
        api_version=r.one_of("clusterApi", *CLUSTER_APIS),
        tkr=tkr,
        kubernetes_version=k8s,
        control_plane=NodePool(
            name="control-plane",
            role="control-plane",
            replicas=r.one_of("controlPlaneReplicas", 1, 3),
            vm_class=r("controlPlaneVmClass"),
            storage_class=r("controlPlaneStorageClass"),
        ),
        node_pools=pools,
        volumes=volumes,
        cni=r.one_of("cni", "antrea", "calico"),
        pod_cidr=r.check("podCidr", values.cidr),
        service_cidr=r.check("serviceCidr", values.cidr),
        ready_timeout_minutes=r.at_least("clusterReadyTimeoutMinutes", 1),
        gpu_pools_ready_timeout_minutes=r.at_least("gpuPoolsReadyTimeoutMinutes", 1),
        cluster_class=r.check("clusterClass", _cluster_class),
        class_namespace=r.check("clusterClassNamespace", values.rfc1123_label),
        pod_security_default=r.one_of("podSecurityDefault", "", "privileged", "baseline", "restricted"),
    )


def _cluster_class(name: str) -> str:
    cluster_classes.generation(name)  # ValueError: a class whose variables no source gives
    return name


def _dask(r: _Reader, cluster: ClusterSpec) -> DaskSpec:
    service_types = ("ClusterIP", "NodePort", "LoadBalancer")
    worker_cpu = r.at_least("workerCpu", 1)
    threads = r.at_least("workerThreads", 0)
    jupyter = JupyterSpec(
        enabled=r("jupyterEnabled"),
        gpu=r("jupyterGpu"),
        cpu=r.check("jupyterCpu", _cpu),
        memory=r.check("jupyterMemory", values.quantity),
        service_type=r.one_of("jupyterServiceType", *service_types),
    )
    gpus = r.one_of("workerGpus", 1)
    requested = r.at_least("gpuWorkers", 0)
    gpu_nodes = sum(p.replicas for p in cluster.node_pools if p.role == "gpu")
    jupyter_takes_gpu = bool(jupyter.enabled and jupyter.gpu and not any(
        p.role == "jupyter" for p in cluster.node_pools))
    replicas = requested if requested else max(gpu_nodes - (1 if jupyter_takes_gpu else 0), 0)
    return DaskSpec(
        chart_version=r.check("daskChartVersion", _chart_version),
        image=r.check("daskImage", values.pinned_image),
        dask_version=r.check("daskImageDaskVersion", _dask_version),
        extra_pip_packages=r("extraPipPackages") or "",
        scheduler=PodResources(
            cpu=r.check("schedulerCpu", _cpu),
            memory=r.check("schedulerMemory", values.quantity),
            service_type=r.one_of("schedulerServiceType", *service_types),
        ),
        workers=WorkerSpec(
            replicas=replicas,
            cpu=worker_cpu,
            memory=r.check("workerMemory", values.quantity),
            gpus=gpus,
            threads=threads or worker_cpu,  # None only beside a recorded problem
            tcmalloc=r("workerTcmalloc"),
        ),
        jupyter=jupyter,
        tls=r("daskTls"),
        lb_source_ranges=tuple(_each(r, "loadBalancerSourceRanges", values.cidr)),
        allow_public_lb=r("allowPublicLoadBalancer"),
        backend=_backend(r("daskBackend")),
        operator=read_operator(r, max(gpu_nodes - (1 if jupyter_takes_gpu else 0), 0)),
        **read_worker_environment(r),
    )


def _each(r: _Reader, key: str, parse: Callable[[str], str]) -> list[str]:
    out = []
    for i, item in enumerate(r(key) or ()):
        try:
            out.append(parse(item))
        except ValueError as exc:
            r.problems.append(Problem(f"{key}[{i}]", f"{exc} (got {item!r})"))
    return out


# --- small parsers ---------------------------------------------------------------------


def _backend(value: Any) -> Backend:
    """``daskBackend`` as its choice; any other value only beside the problem ``read_operator``
    records (the settings are refused, the spec never used)."""
    return Backend(value) if value in tuple(Backend) else Backend.HELM


def _url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL")
    return text


def _months(items: tuple[str, ...]) -> tuple[str, ...]:
    return values.expand_months(tuple(items)) or ()


def _month_template(text: str) -> str:
    _url(text)
    if "{month}" not in text:
        raise ValueError("must contain {month} (replaced by YYYY-MM)")
    return text


def _chart_version(text: str) -> str:
    parts = text.lstrip("v").split(".")
    if len(parts) < 3 or not all(p.isdigit() for p in parts[:2]) or not parts[2].split("-")[0].isdigit():
        raise ValueError("must be a pinned chart version such as 1.9.1 or v1.9.1")
    return text


def _nvaie_version(text: str) -> str:
    if text and not re.fullmatch(r"\d+\.\d+", text):
        raise ValueError("must be an NVIDIA AI Enterprise release such as 5.0 (major.minor), or empty")
    return text


def _dask_version(text: str) -> str:
    """A Dask version the program knows how to give workers their environment for."""
    nanny_environ_fact(text)  # ValueError names what is missing
    return text


def _cpu(text: str) -> str:
    values.cpu_millis(text)
    return text


def _pem_certificate(text: str) -> str:
    if text and "-----BEGIN CERTIFICATE-----" not in text:
        raise ValueError("must be PEM text (-----BEGIN CERTIFICATE----- ...)")
    return text


def _abs_path(text: str) -> str:
    if not text.startswith("/"):
        raise ValueError("must be an absolute path")
    return text
