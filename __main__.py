"""Dask on an AI-ready enterprise platform on vSphere with Tanzu Kubernetes Grid.

settings -> vSphere layer -> cluster -> add-ons -> Dask -> exports; nothing else.
"""
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_vsphere as vsphere

from components.addons.dataset_job import DatasetJob, DatasetJobArgs
from components.addons.environment_job import EnvironmentJob, EnvironmentJobArgs
from components.addons.gpu_metrics.objects import GpuMetrics, GpuMetricsArgs
from components.addons.gpu_operator import GpuOperator, GpuOperatorArgs
from components.addons.shared_storage import SharedStorage, SharedStorageArgs
from components.artifacts import worker_lock
from components.cluster.os_images import library_os_names
from components.cluster.providers.supervisor_releases import SupervisorReleases
from components.cluster.supervisor_access import supervisor_kubeconfig
from components.cluster.tanzu_cluster import TanzuCluster, TanzuClusterArgs
from components.dask.backend import OUTPUTS as DASK_OUTPUTS
from components.dask.backend import DaskBackendArgs
from components.dask.backends import BACKENDS
from components.dask.dask_release import RELEASE
from components.dask.runner_access import RunnerAccess, RunnerAccessArgs
from components.dask.team.cluster_spec import team_cluster_spec
from components.dask.team.team import Team, TeamArgs, TeamReclaimer, TeamReclaimerArgs
from components.kube.network_settings import outside
from components.kube.pod_security import GuestNamespace, GuestNamespaceArgs
from components.settings import load_settings
from components.settings.model import CLUSTER_API
from components.settings.notices import preview_notices
from components.settings.operator import initial_workers
from components.vsphere.access import VCenterAccess
from components.vsphere.layer import VSphereLayer, VSphereLayerArgs
from workloads import contract
from workloads.runs import datasets

settings = load_settings()
for notice in preview_notices(settings):  # what dask-tkg check prints too: support, trust, tag-only images, GPUs
    pulumi.log.warn(notice)

# --- vSphere: VM classes, storage policies, content library, namespace, NFS share ------
vcenter = VCenterAccess(settings.vsphere.server, settings.vsphere.user, settings.vsphere.password,
                        settings.vsphere.insecure, settings.vsphere.ca_pem)
vcenter_provider = vsphere.Provider("vcenter", vsphere_server=vcenter.server, user=vcenter.user,
                                    password=vcenter.password, allow_unverified_ssl=vcenter.insecure)
# vSphere 8/9 with a Cluster API Cluster: the Supervisor must serve the ClusterClass, the release and
# its OS images; checked at preview, and nothing of the vSphere layer is built before it passes.
supervisor_config = supervisor_kubeconfig(settings)
serves_cluster: list[pulumi.Resource] = []
if settings.cluster.api_version == CLUSTER_API and settings.vsphere.version >= 8:
    serves_cluster.append(SupervisorReleases(
        "supervisor-releases", kubeconfig=supervisor_config, spec=settings.cluster,
        access_key="supervisorKubeconfig" if settings.supervisor.kubeconfig is not None else "supervisorServer"))
platform = VSphereLayer("vsphere", VSphereLayerArgs.from_settings(
                            settings, vcenter, release_os=tuple(library_os_names(settings.cluster))),
                        pulumi.ResourceOptions(providers=[vcenter_provider], depends_on=serves_cluster))

# --- the TanzuKubernetesCluster, and its kubeconfig feeding the guest provider ----------
supervisor = k8s.Provider("supervisor", kubeconfig=supervisor_config)
cluster = TanzuCluster("tkc", TanzuClusterArgs(spec=settings.cluster, namespace=platform.namespace,
                                               supervisor_kubeconfig=supervisor_config),
                       pulumi.ResourceOptions(provider=supervisor))
guest = k8s.Provider("guest", kubeconfig=cluster.kubeconfig)
in_guest = pulumi.ResourceOptions(provider=guest)
enforces_psp = settings.cluster.enforces_psp

# --- add-ons: pod security, GPU operator, RWX storage + claims, data Job ---------------
workspace = GuestNamespace("workspace", GuestNamespaceArgs(settings.storage.namespace, "restricted", enforces_psp),
                           in_guest)
gpu_operator = GpuOperator("gpu-operator", GpuOperatorArgs(spec=settings.gpu_operator, enforces_psp=enforces_psp),
                           pulumi.ResourceOptions(provider=guest, depends_on=[*cluster.ready_for_workloads]))
# the team's GPU use, cluster-wide: recording rules, scrape jobs and dashboard for the cluster's Prometheus
if settings.gpu_operator.metrics:
    GpuMetrics("gpu-metrics", GpuMetricsArgs(enforces_psp=enforces_psp), in_guest)
storage = SharedStorage("storage", SharedStorageArgs(
    spec=settings.storage, namespace=workspace.name, nfs_server=platform.nfs_server, nfs_path=platform.nfs_path,
    file_share_policy=settings.file_share.policy, enforces_psp=enforces_psp), in_guest)
data_steps: tuple[pulumi.Resource, ...] = ()
if settings.data.enabled:
    data_steps = (DatasetJob("dataset", DatasetJobArgs(
        data=settings.data, image=settings.data.image, namespace=workspace.name,
        dataset_claim=storage.dataset_claim, dataset_mount=settings.storage.dataset_mount,
        outside=outside(settings), enforces_psp=enforces_psp, depends_on=(storage,)), in_guest),)
# --- a team (users): a namespace of their own per person, before the Dask operator that serves it
team = Team("team", TeamArgs(settings=settings, shared_claims={"dataset": storage.dataset,
                                                               "pip-cache": storage.pip_cache}),
            in_guest) if settings.team else None

# the Dask pods' locked environment, prepared once per lock change on the pip-cache claim
environment_inputs: dict[str, Any] = {}
if settings.dask.prepared:
    environment = EnvironmentJob("environment", EnvironmentJobArgs(
        image=settings.dask.image, namespace=workspace.name, claim=storage.pip_cache_claim,
        package_index_url=settings.dask.package_index_url, lock=worker_lock.lock_text(),
        outside=outside(settings), person_namespaces=tuple(m.namespace for m in settings.team),
        api_server_ranges=tuple(c.ips for c in settings.file_share.clients),
        enforces_psp=enforces_psp, depends_on=(storage, *([team] if team else []))), in_guest)
    environment_inputs = {"environment_job": environment, "environment_subdir": environment.subdir}

# --- Dask: scheduler, GPU workers, Jupyter (Helm release, or the Dask operator) --------
backend = BACKENDS[settings.dask.backend]
dask = backend("dask", DaskBackendArgs(
    settings=settings, namespace=workspace.name, dataset_claim=storage.dataset_claim,
    pip_cache_claim=storage.pip_cache_claim,
    depends_on=(gpu_operator, storage, *data_steps, *cluster.ready_for_workloads, *([team] if team else [])),
    **environment_inputs), in_guest)
# the team's reclaimer, in the operator's namespace: no cluster of a person outlives their maxLifetime
if team:
    TeamReclaimer("team-reclaimer", TeamReclaimerArgs(settings=settings, depends_on=(dask,)), in_guest)
# the runner's own identity: a namespaced token, not the cluster's admin kubeconfig
runner = RunnerAccess("runner", RunnerAccessArgs(namespace=workspace.name, cluster_kubeconfig=cluster.kubeconfig,
                                                 dask_cluster=backend.SCALED_CLUSTER), in_guest)

# --- exports: the contract the runner reads ---------------------------------------------
mount = settings.storage.dataset_mount
for attribute, output in DASK_OUTPUTS.items():  # the backend's, the same whichever it is
    pulumi.export(output, getattr(dask, attribute))
pulumi.export(contract.RUNNER_KUBECONFIG, runner.kubeconfig)
pulumi.export(contract.NAMESPACE, workspace.name)
pulumi.export(contract.RELEASE, RELEASE)
pulumi.export(contract.DATASET_MOUNT, mount)
pulumi.export(contract.DATASET_LAYOUT, datasets.layout(mount))  # each benchmark's dataset.json "layout"
pulumi.export(contract.WORKERS, initial_workers(settings))
pulumi.export(contract.GPUS_PER_WORKER, settings.dask.workers.gpus)
pulumi.export(contract.THREADS_PER_WORKER, settings.dask.workers.threads)
pulumi.export(contract.IMAGE, settings.dask.image)
pulumi.export(contract.DASK_VERSION, settings.dask.dask_version)
pulumi.export(contract.BACKEND, settings.dask.backend)
operator = settings.dask.operator if settings.dask.on_operator else None
pulumi.export(contract.AUTOSCALE_MIN, operator.min_workers if operator and operator.autoscale else 0)
pulumi.export(contract.AUTOSCALE_MAX, operator.max_workers if operator and operator.autoscale else 0)
pulumi.export(contract.SUPERVISOR_SERVER, settings.supervisor.server)
pulumi.export(contract.SUPERVISOR_NAMESPACE, platform.namespace)
pulumi.export(contract.CLUSTER_NAME, cluster.name)
pulumi.export(contract.NFS_SERVER, platform.nfs_server)
pulumi.export(contract.NFS_PATH, platform.nfs_path)
if team:
    pulumi.export(contract.TEAM_USERS, team.users)
    pulumi.export(contract.TEAM_CLUSTER_SPEC, team_cluster_spec(settings, environment_inputs.get("environment_subdir")))
