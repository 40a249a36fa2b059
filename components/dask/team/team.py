"""A team on one stack (``users``): one ``PersonSpace`` per person, and what they share.

The shared claims' bound volumes are read once from the cluster (``PersistentVolume.get`` on
each claim's ``spec.volumeName``: pulumi-kubernetes waits for a claim to be Bound before it
reports it created, ``provider/pkg/await/awaiters.go``, ``untilCoreV1PersistentVolumeClaimReady``),
so each person's read-only copy names exactly the data the Dask namespace mounts, whichever
provisioner made it. During a first preview the name is not known yet; the engine then reads
nothing and the copies' specs stay unknown until ``pulumi up``.

The Dask operator must hold its Role in a namespace before it watches it (kopf retries a
forbidden watch for ~55 s, then the controller fails: operator_rbac), so the operator's
release waits for ``operator_rights``.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.dask.team import admission as team_admission
from components.dask.team import reclaim as team_reclaim
from components.dask.team.person_space import PersonSpace, PersonSpaceArgs, SharedVolume
from components.settings.model import Settings


def bound_spec(spec: Any) -> dict[str, Any]:
    """What ``team_volumes`` needs of a read PersistentVolume's spec (pulumi-kubernetes'
    ``PersistentVolumeSpec``), keyed as the API keys it: capacity, mount options, the nfs or
    csi source."""
    out: dict[str, Any] = {"capacity": dict(spec.capacity or {}), "mountOptions": list(spec.mount_options or [])}
    if spec.nfs:
        out["nfs"] = {"server": spec.nfs.server, "path": spec.nfs.path}
    if spec.csi:
        out["csi"] = {"driver": spec.csi.driver, "volumeHandle": spec.csi.volume_handle,
                      "volumeAttributes": dict(spec.csi.volume_attributes or {}), "fsType": spec.csi.fs_type}
    return out


def team_users(s: Settings) -> dict[str, dict[str, Any]]:
    """The ``teamUsers`` output: each person's namespace, GPUs and idle timeout (workloads/contract.py)."""
    return {m.name: {"namespace": m.namespace, "gpus": m.gpus, "idleTimeout": m.idle_timeout} for m in s.team}


@dataclass(frozen=True)
class TeamArgs:
    settings: Settings
    # the Dask namespace's shared claims, by a short label (dataset, pip-cache)
    shared_claims: Mapping[str, k8s.core.v1.PersistentVolumeClaim]


class Team(pulumi.ComponentResource):
    users: pulumi.Output[dict[str, dict[str, Any]]]

    def __init__(self, name: str, args: TeamArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:dask:Team", name, None, opts)
        s = args.settings
        if s.dask.operator is None:
            raise ValueError("a team needs daskBackend=operator (components/settings/team.py refuses it at preview)")
        self.admission = self._admission(name)
        shared = {label: self._shared_volume(name, label, claim) for label, claim in args.shared_claims.items()}
        self.spaces = [PersonSpace(f"{name}-{m.namespace}",
                                   PersonSpaceArgs(member=m, settings=s, shared_volumes=shared),
                                   pulumi.ResourceOptions(parent=self, depends_on=self.admission)) for m in s.team]
        self.operator_rights = [right for space in self.spaces for right in space.operator_rights]
        self.users = pulumi.Output.from_input(team_users(s))
        self.register_outputs({"users": self.users})

    def _admission(self, name: str) -> list[pulumi.Resource]:
        """The team's admission policies and their bindings (``team_admission``), cluster-wide
        objects that act in the team's namespaces only."""
        made: list[pulumi.Resource] = []
        for policy in team_admission.policies():
            short = policy["metadata"]["name"].removeprefix("dask-tkg-team-")
            declared = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{short}-policy", metadata=policy["metadata"], spec=policy["spec"],
                opts=pulumi.ResourceOptions(parent=self))
            bound = team_admission.binding(policy)
            made += [declared, k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                f"{name}-{short}-binding", metadata=bound["metadata"], spec=bound["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[declared]))]
        return made

    def _shared_volume(self, name: str, label: str, claim: k8s.core.v1.PersistentVolumeClaim) -> SharedVolume:
        bound = claim.spec.apply(lambda spec: spec.volume_name)
        volume = k8s.core.v1.PersistentVolume.get(f"{name}-{label}-shared-volume", bound,
                                                  opts=pulumi.ResourceOptions(parent=self))
        return SharedVolume(claim=claim.metadata.apply(lambda m: m.name), spec=volume.spec.apply(bound_spec))


@dataclass(frozen=True)
class TeamReclaimerArgs:
    settings: Settings
    depends_on: tuple[pulumi.Resource, ...] = ()  # the Dask backend: the operator's namespace and CRDs


class TeamReclaimer(pulumi.ComponentResource):
    """The team's reclaimer in the Dask operator's namespace (``team_reclaim``): its account, its
    script and limits, its CronJob. Its Role in each person's namespace is the person's space's."""

    def __init__(self, name: str, args: TeamReclaimerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:dask:TeamReclaimer", name, None, opts)
        s = args.settings
        if s.dask.operator is None:
            raise ValueError("a team needs daskBackend=operator (components/settings/team.py refuses it at preview)")
        namespace = s.dask.operator.namespace
        inside = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        account = team_reclaim.service_account(namespace)
        code = team_reclaim.config_map(namespace, s.team)
        job = team_reclaim.cron_job(namespace, s.dask.image, s.cluster.enforces_psp)
        made = [k8s.core.v1.ServiceAccount(f"{name}-account", metadata=account["metadata"], opts=inside),
                k8s.core.v1.ConfigMap(f"{name}-code", metadata=code["metadata"], data=code["data"], opts=inside)]
        self.cron_job = k8s.batch.v1.CronJob(f"{name}-cron", metadata=job["metadata"], spec=job["spec"],
                                             opts=pulumi.ResourceOptions(parent=self, depends_on=made))
        self.register_outputs({})
