"""``users``: a team on one stack. Each person (or SSO group) gets a namespace of their own in
the workload cluster, a GPU quota and an idle timeout for their Dask clusters
(components/dask/team/team.py declares them). Read here into ``Settings.team``; whatever could not
work is refused at ``pulumi preview``, naming ``users[<i>].<field>``.

Why each refusal:
- a name not of the form ``<user>@<domain>``: inside a VKS cluster a vCenter Single Sign-On
  user or group is the subject ``sso:<user>@<domain>`` (VMware, "Grant Developers SSO Access
  to Workload Clusters", vSphere 8 TKG Service, https://vmw-docs.broadcom.com/en/VMware-vSphere/
  8.0/vsphere-with-tanzu-tkg/GUID-C213218C-58D2-4F55-8D25-83B84F593E04.html); any other name binds
  nobody who can log in;
- a person listed twice, or two names that map to one namespace: one namespace, one quota and
  one binding per person, so the second entry would silently share (or take) the first's;
- a namespace that is one of the program's own Dask namespaces: the person's Role would be
  granted there;
- ``gpus`` below 0, or above every GPU the stack's GPU workers have: a quota that can never be
  used in full is a typo;
- ``users`` with the Helm backend: each person's clusters are DaskClusters, run by the Dask
  operator the Helm backend does not deploy;
- a person who holds EDIT or OWNER on the vSphere Namespace (``namespaceAccess``): VKS grants
  that as ``cluster-admin`` in every cluster of the namespace (a ClusterRoleBinding
  ``vmware-system-auth-sync-...``, Broadcom KB 424897, "vSphere Namespace Permissions for VKS"),
  which undoes the person's namespace; VIEW is what a person needs to log in.

A sum of ``gpus`` above the stack's GPUs is a warning, not a refusal (``team_warnings``): a
ResourceQuota caps what a namespace may hold and reserves nothing, so a team sharing 8 GPUs may
well give five people 4 each; a request that finds the GPUs taken waits (the runner says so).
"""
from __future__ import annotations

import re

import components.settings.records as records
from components.settings.errors import Problem
from components.settings.model import Settings, TeamMember
from components.settings.operator import free_gpu_nodes, initial_workers
from components.settings.reader import SettingsReader

NAMESPACE_PREFIX = "dask-"
KINDS = ("User", "Group")
_DNS_LABEL = r"[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?"
_SSO_NAME = re.compile(rf"^[^@\s:]+@{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_OUTSIDE_LABEL = re.compile(r"[^a-z0-9-]+")


def sso_name(text: str) -> str:
    """A vSphere SSO identity, ``<user>@<domain>``, as ``users`` takes it (without ``sso:``)."""
    if text.lower().startswith("sso:"):
        raise ValueError("give the SSO identity without the sso: prefix (the program adds it in the RoleBinding)")
    if not _SSO_NAME.match(text):
        raise ValueError("must be a vSphere SSO identity <user>@<domain>, e.g. alice@vsphere.local")
    member_namespace(text)
    return text


def member_namespace(name: str) -> str:
    """``dask-<local part>``: lower-cased, each run of characters outside ``[a-z0-9-]`` a single
    '-', trimmed to fit a DNS label (63 characters with the prefix) and of '-' at either end."""
    local = _OUTSIDE_LABEL.sub("-", name.split("@", 1)[0].lower()).strip("-")
    local = local[:63 - len(NAMESPACE_PREFIX)].rstrip("-")
    if not local:
        raise ValueError(f"{name!r} leaves no letter or digit for a namespace (dask-<the part before @>)")
    return NAMESPACE_PREFIX + local


_FIELDS = {
    "name": records.Field(sso_name),
    "gpus": records.Field(records.integer(0)),
    "idleTimeout": records.Field(records.integer(0), required=False, default=None),
    "maxLifetime": records.Field(records.integer(0), required=False, default=None),
    "kind": records.Field(records.choice(*KINDS), required=False, default="User"),
}


def read_team(r: SettingsReader) -> tuple[TeamMember, ...]:
    """``users``, ``teamIdleTimeout`` and ``teamMaxLifetime``: one
    ``TeamMember`` per entry, or problems naming ``users[<i>].<field>``."""
    default_timeout = r.at_least("teamIdleTimeout", 0)
    default_lifetime = r.at_least("teamMaxLifetime", 0)
    team: list[TeamMember] = []
    seen: dict[str, int] = {}
    namespaces: dict[str, tuple[int, str]] = {}
    for i, item in enumerate(r("users") or ()):
        rec = records.parse_record("users", i, item, _FIELDS, r.problems)
        if rec is None:
            continue
        name, namespace = rec["name"], member_namespace(rec["name"])
        if name.lower() in seen:
            r.problems.append(Problem(f"users[{i}].name", f"{name} is listed twice (users[{seen[name.lower()]}]):"
                                                          " one namespace, quota and binding per person"))
            continue
        if namespace in namespaces:
            first, other = namespaces[namespace]
            r.problems.append(Problem(f"users[{i}].name", (
                f"{name} maps to namespace {namespace}, as users[{first}] ({other}) does: each person needs a"
                " namespace of their own; list one of them under another name")))
            continue
        seen[name.lower()], namespaces[namespace] = i, (i, name)
        timeout = rec["idleTimeout"] if rec["idleTimeout"] is not None else default_timeout
        lifetime = rec["maxLifetime"] if rec["maxLifetime"] is not None else default_lifetime
        team.append(TeamMember(name=name, kind=rec["kind"], gpus=rec["gpus"], idle_timeout=timeout,
                               namespace=namespace, max_lifetime=lifetime))
    return tuple(team)


# The first Kubernetes with ValidatingAdmissionPolicy served as admissionregistration.k8s.io/v1
# (kubernetes.io, "Validating Admission Policy": stable in v1.30).
ADMISSION_POLICIES_FROM = (1, 30)


def team_checks(s: Settings) -> list[Problem]:
    """What each person's entry must fit: the backend, the GPUs, the program's namespaces, the
    vSphere Namespace's permissions. Entries are in ``users`` order (all parsed by now)."""
    if not s.team:
        return []
    if not s.dask.on_operator or s.dask.operator is None:
        return [Problem("users", "needs daskBackend=operator: each person's Dask clusters are DaskClusters, run by"
                                 " the Dask operator, which the Helm backend does not deploy")]
    out: list[Problem] = []
    if s.cluster.kubernetes_version[:2] < ADMISSION_POLICIES_FROM:
        out.append(Problem("users", (
            f"needs Kubernetes {ADMISSION_POLICIES_FROM[0]}.{ADMISSION_POLICIES_FROM[1]} or later (tkr"
            f" {s.cluster.tkr} is {'.'.join(map(str, s.cluster.kubernetes_version))}): the people's namespaces"
            " are held by ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, GA in 1.30), without which a"
            " person's DaskCluster could take every GPU of a node, preempt others or publish its scheduler")))
    capacity = stack_gpus(s)
    own = {s.storage.namespace: "daskNamespace", s.dask.operator.namespace: "daskOperatorNamespace"}
    for i, member in enumerate(s.team):
        if member.gpus > capacity:
            out.append(Problem(f"users[{i}].gpus", (
                f"{member.gpus} is more than the {capacity} GPUs the stack's GPU workers have (role=gpu nodes free"
                " for workers, one GPU each): the quota could never be used in full")))
        if member.namespace in own:
            out.append(Problem(f"users[{i}].name", (
                f"{member.name} maps to namespace {member.namespace}, the program's own {own[member.namespace]}:"
                " the person's Role would be granted there; set that setting to another name")))
        out.extend(_edit_access(s, i, member))
    return out


def _edit_access(s: Settings, index: int, member: TeamMember) -> list[Problem]:
    """A person (or group) given EDIT or OWNER on the vSphere Namespace by ``namespaceAccess``."""
    subject, _, domain = member.name.lower().partition("@")
    kind = "USER" if member.kind == "User" else "GROUP"
    for j, entry in enumerate(s.namespace.access):
        if (entry.role in ("EDIT", "OWNER") and entry.subject_type == kind
                and (entry.subject.lower(), entry.domain.lower()) == (subject, domain)):
            return [Problem(f"users[{index}].name", (
                f"{member.name} has {entry.role} on the vSphere Namespace (namespaceAccess[{j}]), which VKS makes"
                " cluster-admin in every cluster of the namespace: the person's own namespace would bound"
                " nothing. Give VIEW there (enough to log in) and let users grant the rest"))]
    return []


def stack_gpus(s: Settings) -> int:
    """GPUs the stack's GPU workers may hold: one per role=gpu node Jupyter does not take."""
    return free_gpu_nodes(s) * s.dask.workers.gpus


def shared_idle_gpus(s: Settings) -> int:
    """GPUs the shared DaskCluster holds even when idle: its autoscaler's minimum, or every
    worker without an autoscaler (no idleTimeout: docs/dask.md, "For a team")."""
    op = s.dask.operator
    if op is None:
        return 0
    workers = op.min_workers if op.autoscale else initial_workers(s)
    return workers * s.dask.workers.gpus


def team_warnings(s: Settings) -> list[str]:
    """What preview says, and goes on, about a team: the people's quotas add up to more than the
    stack has (overcommitting, which quotas allow), a shared cluster that keeps GPUs while idle,
    and an SSO group with EDIT on the vSphere Namespace (whose members preview cannot see)."""
    if not s.team or s.dask.operator is None:
        return []
    out = []
    total, capacity, held = sum(m.gpus for m in s.team), stack_gpus(s), shared_idle_gpus(s)
    if total > capacity:
        out.append(
            f"dask-tkg:users: the people's gpus add up to {total}, more than the {capacity} GPUs of the stack's GPU"
            f" workers: each quota caps what one person may hold and together they reserve nothing, so a person's"
            " workers wait Pending while others hold the GPUs (an idle cluster gives them back after its"
            " idleTimeout). Lower gpus where each person must always get their share.")
    if held:
        out.append(
            f"dask-tkg:autoscaleMinWorkers: the shared cluster keeps {held // s.dask.workers.gpus} GPU worker(s) even"
            f" when idle{'' if s.dask.operator.autoscale else ' (daskAutoscale=false: all of them)'}, GPUs no"
            " person's quota can use; set autoscaleMinWorkers=0 (with daskAutoscale=true) so that an idle shared"
            " cluster gives its GPUs back (docs/dask.md, \"For a team\")")
    out.extend(_group_access_warnings(s))
    return out


def _group_access_warnings(s: Settings) -> list[str]:
    """EDIT or OWNER given to an SSO group on the vSphere Namespace: preview refuses a person
    named there (``_edit_access``) but cannot see who is in a group, and any member of it is
    cluster-admin in every cluster of the namespace, their own namespace's limits bound nothing."""
    return [f"dask-tkg:namespaceAccess[{j}]: the SSO group {entry.subject}@{entry.domain} has {entry.role} on the"
            " vSphere Namespace, which VKS makes cluster-admin in its clusters; preview cannot see who is in the"
            " group, so a person of users who is a member would be bound by nothing. Give groups VIEW, or make"
            " sure no person of users belongs to it"
            for j, entry in enumerate(s.namespace.access)
            if entry.role in ("EDIT", "OWNER") and entry.subject_type == "GROUP"]
