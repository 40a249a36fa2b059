"""The vSAN file-service NFS share that becomes the cluster's ReadWriteMany data lake.

pulumi-vsphere has no resource for vSAN file shares; pyVmomi carries the vSAN
management types, served by vCenter at ``/vsanHealth``:
``vim.vsan.VsanFileServiceSystem`` (``CreateFileShare``, ``QueryFileShares``,
``ReconfigureFileShare``, ``RemoveFileShare``) and ``vim.vsan.FileShareConfig``.
The file service itself (its domain and IP pool) must already be enabled on the
cluster. ``CreateFileShare`` needs the share's file service domain (``domainName``,
"required for file share creation" in vim.vsan.FileShareConfig, vSAN Management API
7.0): the provider takes it from ``domain_name`` or looks up the cluster's only domain.
Create, reconfigure and remove return a vim Task; the provider waits on it, as VMware's
vSAN samples do (``vsanapiutils.WaitForTasks``), so a server-side failure is raised with
the server's message at once. An existing share with the same name is adopted (and
left in place on delete).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import pulumi
import pulumi.dynamic as dyn

from ..access import VCenterAccess
from .base import PollingVCenterProvider, VCenterResource
from .session import VCenterError, changed_keys, vcenter, vsan_stub

logger = logging.getLogger(__name__)

#: The well-known id of the vSAN file service system on vCenter.
FILE_SERVICE_MOID = "vsan-cluster-file-service-system"
ACCESS = ("READ_ONLY", "READ_WRITE", "NO_ACCESS")
#: Access-point keys in order of preference (``runtime.accessPoints``).
NFS_PROTOCOLS = ("NFSv4.1", "NFSv4", "NFSv3")
#: What ``nfs_server`` reports: the access point's host (fqdn) or the file server's IP.
NFS_ADDRESSES = ("fqdn", "ip")
#: vim.vsan.FileShareConfig.name: at most 80 letters, digits and '-', every '-' between two of them.
SHARE_NAME = re.compile(r"^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$")
_QUOTA = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(?:I?B)?\s*$", re.IGNORECASE)
_UNITS_GIB = {"": 2.0**-30, "K": 2.0**-20, "M": 2.0**-10, "G": 1.0, "T": 2.0**10, "P": 2.0**20}
SPEC_KEYS = ("quota_gib", "policy_id", "net_permissions")

T = TypeVar("T")


def validate_permissions(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{ips, permissions, allow_root}]`` checked and completed with defaults."""
    out = []
    for i, entry in enumerate(entries or []):
        where = f"net_permissions[{i}]"
        unknown = set(entry) - {"ips", "permissions", "allow_root"}
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        if not entry.get("ips"):
            raise ValueError(f"{where}.ips: required ('*' or a comma-separated list of IPs/CIDRs)")
        permissions = entry.get("permissions") or "READ_WRITE"
        if permissions not in ACCESS:
            raise ValueError(f"{where}.permissions: {permissions!r} is not one of {' | '.join(ACCESS)}")
        out.append(
            {"ips": str(entry["ips"]), "permissions": permissions, "allow_root": bool(entry.get("allow_root", False))}
        )
    return out


def format_quota(quota_gib: int) -> str:
    """vSAN's quota string in G, as VMware's own file service samples write it (``2048G``)."""
    return f"{quota_gib}G"


def parse_quota(quota: str | None) -> float | None:
    """``"2T"`` -> 2048.0 GiB; ``None`` for no or unparseable quota."""
    match = _QUOTA.match(quota or "")
    return float(match.group(1)) * _UNITS_GIB[match.group(2).upper()] if match else None


def build_share_config(
    name: str,
    quota_gib: int,
    policy_id: str | None,
    net_permissions: Sequence[Mapping[str, Any]],
    domain_name: str | None = None,
) -> Any:
    """The ``vim.vsan.FileShareConfig`` for an NFS share."""
    from pyVmomi import vim

    return vim.vsan.FileShareConfig(
        name=name,
        domainName=domain_name,
        quota=format_quota(quota_gib),
        storagePolicy=vim.vm.DefinedProfileSpec(profileId=policy_id) if policy_id else None,
        permission=[
            vim.vsan.FileShareNetPermission(ips=p["ips"], permissions=p["permissions"], allowRoot=p["allow_root"])
            for p in validate_permissions(net_permissions)
        ],
    )


def file_service(si: Any) -> Any:
    """vCenter's ``VsanFileServiceSystem`` on ``/vsanHealth``, sharing ``si``'s session."""
    from pyVmomi import vim

    return vim.vsan.VsanFileServiceSystem(FILE_SERVICE_MOID, vsan_stub(si))


def cluster_ref(si: Any, cluster: str) -> Any:
    """The ``ClusterComputeResource`` for a managed object id (``domain-c8``) or a cluster name."""
    from pyVmomi import vim

    view = si.content.viewManager.CreateContainerView(si.content.rootFolder, [vim.ClusterComputeResource], True)
    try:
        clusters = list(view.view)
    finally:
        view.Destroy()
    by_id = [c for c in clusters if c._moId == cluster]
    if by_id:
        return by_id[0]
    found = [c for c in clusters if c.name == cluster]
    if not found:
        raise VCenterError(f"no compute cluster with id or name {cluster!r} on this vCenter")
    if len(found) > 1:
        raise VCenterError(f"{len(found)} clusters are named {cluster!r}; pass the managed object id instead")
    return found[0]


def find_share(fs: Any, cluster: Any, name: str | None) -> Any:
    """The share called ``name`` on ``cluster``, or ``None``."""
    from pyVmomi import vim

    result = fs.QueryFileShares(querySpec=vim.vsan.FileShareQuerySpec(names=[name]), cluster=cluster)
    for share in (result.fileShares if result else None) or []:
        if share.config and share.config.name == name:
            return share
    return None


def access_point(share: Any) -> tuple[str, str] | None:
    """``(server, export path)`` of the share's NFS access point, NFSv4.1 preferred."""
    points = {kv.key: kv.value for kv in (getattr(share.runtime, "accessPoints", None) or [])}
    for protocol in NFS_PROTOCOLS:
        value = points.get(protocol)
        if value and ":/" in value:
            host, _, path = value.partition(":/")
            return host.strip("[]"), "/" + path
    return None


def nfs_server(share: Any, address: str) -> tuple[str, str] | None:
    """``(server, path)`` to mount: the access point's host, or with ``address="ip"``
    the file server's IP (``runtime.address``), which guest nodes reach without DNS."""
    point = access_point(share)
    if point is None or address == "fqdn":
        return point
    ip = getattr(share.runtime, "address", None)
    return (ip, point[1]) if ip else None


def resolve_domain(fs: Any, cluster: Any, wanted: str | None) -> str:
    """The file service domain to create the share in: ``wanted`` if the cluster has it,
    else the cluster's only one; raises naming the domains found."""
    domains: list[str] = [d.config.name for d in (fs.QueryFileServiceDomains(cluster=cluster) or []) if d.config]
    if wanted:
        if wanted not in domains:
            raise VCenterError(
                f"vSAN file service domain {wanted!r} (fileShareDomain) is not on cluster {cluster.name!r};"
                f" it has: {', '.join(domains) or 'none'}"
            )
        return wanted
    if not domains:
        raise VCenterError(
            f"cluster {cluster.name!r} has no vSAN file service domain: enable the file service"
            " (vSAN > File Service) before creating a share"
        )
    if len(domains) > 1:
        raise VCenterError(
            f"cluster {cluster.name!r} has {len(domains)} vSAN file service domains ({', '.join(domains)}):"
            " set fileShareDomain to the one the share belongs to"
        )
    return domains[0]


def wait_task(si: Any, task: Any, what: str, timeout_s: float, poll_s: float) -> Any:
    """Wait for a task a vSAN call returned; raise its error, naming ``what``.

    vSAN tasks are vim Tasks: read ``info`` on the vim endpoint (VMware's
    ``vsanapiutils.WaitForTasks`` converts them with ``vim.Task(task._moId, si._stub)``).
    """
    from pyVmomi import vim

    vim_task = vim.Task(task._moId, si._stub)

    def finished() -> Any:
        info = vim_task.info
        if info.state == "error":
            fault = info.error
            message = getattr(fault, "localizedMessage", None) or getattr(fault, "msg", None) or str(fault)
            raise VCenterError(f"{what} failed on vCenter ({task._moId}): {message}")
        return info if info.state == "success" else None

    return wait_for(finished, f"{what} (task {task._moId})", timeout_s, poll_s)


def wait_for(probe: Callable[[], T | None], what: str, timeout_s: float, poll_s: float) -> T:
    """Call ``probe`` until it returns something truthy; raise after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise VCenterError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)


def share_differences(share: Any, quota_gib: int, policy_id: str | None) -> list[str]:
    """What an existing share's config differs in from the wanted quota and policy."""
    config = share.config
    differences = []
    if parse_quota(config.quota) != float(quota_gib):
        differences.append(f"quota: server {config.quota!r}, wanted {format_quota(quota_gib)!r}")
    actual_policy = getattr(config.storagePolicy, "profileId", None)
    if policy_id and actual_policy != policy_id:
        differences.append(f"storage policy: server {actual_policy!r}, wanted {policy_id!r}")
    return differences


class VsanFileShareProvider(PollingVCenterProvider):
    """Creates (or adopts), reconfigures and removes one vSAN file-service NFS share."""

    TIMEOUT_S = 1800.0
    POLL_S = 10.0

    @staticmethod
    def _spec(props: Mapping[str, Any]) -> dict[str, Any]:
        name = props.get("share_name") or ""
        if len(name) > 80 or not SHARE_NAME.match(name):
            raise ValueError(
                f"share_name: {name!r} must be at most 80 letters, digits and '-', each '-' between letters or digits"
            )
        quota = props.get("quota_gib")
        if isinstance(quota, float) and quota.is_integer():
            quota = int(quota)
        if isinstance(quota, bool) or not isinstance(quota, int) or quota <= 0:
            raise ValueError(
                f"share {name!r}: quota_gib must be a whole number of GiB > 0, got {props.get('quota_gib')!r}"
            )
        if not props.get("cluster"):
            raise ValueError(f"share {name!r}: cluster (name or managed object id) is required")
        address = props.get("nfs_address") or "fqdn"
        if address not in NFS_ADDRESSES:
            raise ValueError(f"share {name!r}: nfs_address {address!r} is not one of {' | '.join(NFS_ADDRESSES)}")
        return {
            "share_name": name,
            "cluster": str(props["cluster"]),
            "quota_gib": quota,
            "policy_id": props.get("policy_id") or None,
            "net_permissions": validate_permissions(props.get("net_permissions") or []),
            "domain_name": props.get("domain_name") or None,
            "nfs_address": address,
        }

    def _outs(self, props: Mapping[str, Any], spec: Mapping[str, Any], share: Any, adopted: bool) -> dict[str, Any]:
        server, path = nfs_server(share, spec["nfs_address"]) or ("", "")
        outs = self.stored(props)
        outs.update(spec, share_uuid=share.uuid, nfs_server=server, nfs_path=path, adopted=adopted)
        outs["domain_name"] = getattr(share.config, "domainName", None) or spec["domain_name"]
        return outs

    def _ready(self, fs: Any, cluster: Any, name: str, address: str) -> Any:
        """The share once it has the NFS access point (and address) to report."""
        share = find_share(fs, cluster, name)
        if share is None or not nfs_server(share, address):
            raise VCenterError(
                f"vSAN file share {name!r} has no NFS {'IP address' if address == 'ip' else 'access point'}"
                " in its runtime info (is NFS enabled on the share?)"
            )
        return share

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> dyn.CheckResult:
        return self.validated(news, "share_name", self._spec)

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        conn = self.connection(props)
        spec = self._spec(props)
        name = spec["share_name"]
        with vcenter(conn, f"creating vSAN file share {name!r}") as si:
            fs = file_service(si)
            cluster = cluster_ref(si, spec["cluster"])
            existing = find_share(fs, cluster, name)
            adopted = existing is not None
            if adopted:
                differences = share_differences(existing, spec["quota_gib"], spec["policy_id"])
                logger.info("vSAN file share %r exists (%s): adopting it%s", name, existing.uuid,
                            f"; it differs: {'; '.join(differences)}" if differences else "")
            else:
                domain = resolve_domain(fs, cluster, spec["domain_name"])
                config = build_share_config(name, spec["quota_gib"], spec["policy_id"], spec["net_permissions"], domain)
                task = fs.CreateFileShare(config=config, cluster=cluster)
                wait_task(si, task, f"creating vSAN file share {name!r}", self.timeout_s, self.poll_s)
            share = self._ready(fs, cluster, name, spec["nfs_address"])
            if not adopted:
                logger.info("created vSAN file share %r (%s)", name, share.uuid)
        return dyn.CreateResult(share.uuid, self._outs(props, spec, share, adopted))

    def read(self, id_: str, props: dict[str, Any]) -> dyn.ReadResult:
        conn = self.connection(props)
        spec = self._spec(props)
        with vcenter(conn, f"reading vSAN file share {spec['share_name']!r}") as si:
            share = find_share(file_service(si), cluster_ref(si, spec["cluster"]), spec["share_name"])
        if share is None or share.uuid != id_:
            return dyn.ReadResult("", {})
        spec["quota_gib"] = int(parse_quota(share.config.quota) or spec["quota_gib"])
        spec["policy_id"] = getattr(share.config.storagePolicy, "profileId", None) or spec["policy_id"]
        return dyn.ReadResult(id_, self._outs(props, spec, share, bool(props.get("adopted"))))

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        def normalize(key: str, value: Any) -> Any:
            if key == "net_permissions" and isinstance(value, list):
                try:
                    return validate_permissions(value)
                except (ValueError, TypeError, AttributeError):
                    return value
            if key == "quota_gib" and isinstance(value, float):
                return int(value)
            if key == "nfs_address":
                return value or "fqdn"
            return value or None

        # The domain is where the share lives: a new one only when the setting names another
        # domain than the one the share was made in (an empty setting means "the only one").
        domain = [] if not news.get("domain_name") else changed_keys(olds, news, ["domain_name"], normalize)
        replaces = changed_keys(olds, news, ["share_name", "cluster"], normalize) + domain
        changes = changed_keys(olds, news, (*SPEC_KEYS, "nfs_address"), normalize)
        return self.diff_result(olds, news, replaces, changes, delete_before_replace=True)

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        conn = self.connection(news)
        spec = self._spec(news)
        name = spec["share_name"]
        reconfigure = changed_keys(self._spec(olds), spec, SPEC_KEYS)
        with vcenter(conn, f"reconfiguring vSAN file share {name!r}") as si:
            fs = file_service(si)
            cluster = cluster_ref(si, spec["cluster"])
            if reconfigure:
                domain = olds.get("domain_name") or spec["domain_name"]
                config = build_share_config(name, spec["quota_gib"], spec["policy_id"], spec["net_permissions"], domain)
                task = fs.ReconfigureFileShare(shareUuid=id_, config=config, cluster=cluster)
                wait_task(si, task, f"reconfiguring vSAN file share {name!r}", self.timeout_s, self.poll_s)
                logger.info("reconfigured vSAN file share %r (%s)", name, id_)
            else:
                logger.info("vSAN file share %r: nothing to change on vCenter", name)
            share = self._ready(fs, cluster, name, spec["nfs_address"])
        return dyn.UpdateResult(self._outs(news, spec, share, bool(olds.get("adopted"))))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        name = props.get("share_name")
        if self.leaves_adopted(props, f"vSAN file share {name!r} ({id_})"):
            return
        conn = self.connection(props)
        with vcenter(conn, f"removing vSAN file share {name!r}") as si:
            fs = file_service(si)
            cluster = cluster_ref(si, props["cluster"])
            share = find_share(fs, cluster, name)
            if share is None or share.uuid != id_:
                logger.info("vSAN file share %r (%s) is already gone", name, id_)
                return
            task = fs.RemoveFileShare(shareUuid=id_, cluster=cluster, force=False)
            wait_task(si, task, f"removing vSAN file share {name!r}", self.timeout_s, self.poll_s)
            logger.info("removed vSAN file share %r (%s)", name, id_)


class VsanFileShare(VCenterResource, module="vsphere", name="VsanFileShare"):
    """A vSAN file-service NFS share; outputs ``share_uuid``, ``nfs_server``, ``nfs_path``, ``adopted``.

    ``cluster`` is the vSAN cluster's managed object id (``domain-c8``) or name;
    ``net_permissions`` is ``[{"ips": "*", "permissions": "READ_WRITE", "allow_root": True}]``;
    ``domain_name`` the file service domain (empty: the cluster's only one); ``nfs_address``
    ``fqdn`` or ``ip``: what ``nfs_server`` reports.
    """

    share_uuid: pulumi.Output[str]
    nfs_server: pulumi.Output[str]
    nfs_path: pulumi.Output[str]
    adopted: pulumi.Output[bool]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *, share_name: pulumi.Input[str],
                 cluster: pulumi.Input[str], quota_gib: pulumi.Input[int],
                 policy_id: pulumi.Input[str] | None = None,
                 net_permissions: pulumi.Input[Sequence[Mapping[str, Any]]] = (),
                 domain_name: pulumi.Input[str] | None = None, nfs_address: pulumi.Input[str] = "fqdn",
                 vcenter: VCenterAccess) -> None:
        if isinstance(net_permissions, (list, tuple)) and all(
            isinstance(p, Mapping) and not any(isinstance(v, pulumi.Output) for v in p.values())
            for p in net_permissions
        ):
            net_permissions = validate_permissions(net_permissions)  # fail at construction, naming the entry
        props = {
            "share_name": share_name,
            "cluster": cluster,
            "quota_gib": quota_gib,
            "policy_id": policy_id,
            "net_permissions": net_permissions,
            "domain_name": domain_name,
            "nfs_address": nfs_address,
            "share_uuid": None,
            "nfs_server": None,
            "nfs_path": None,
            "adopted": None,
        }
        super().__init__(VsanFileShareProvider(), name, opts, props, vcenter)
