"""Who may mount the vSAN file share: the workload cluster's nodes, never every address.

vSAN takes each client as a single IPv4 address, a CIDR, a range ``a-b`` or ``*`` (every
client), and ``allowRoot`` "whether to squash the root user or not" (vSAN Management API 7.0,
``vim.vsan.FileShareNetPermission``).

The node network is known from the settings only when the program enables the Supervisor
(``supervisorMode=create``, vSphere 7 with NSX): the guest nodes' traffic leaves the
namespace through NSX's SNAT, from an address of the Supervisor's ``egressCidr`` ("CIDR blocks
from which NSX assigns IP addresses used for performing SNAT from container IPs to external
IPs", vSphere Automation API 7.0 ``NamespaceManagement.Clusters.NCPClusterNetworkEnableSpec``;
terraform-provider-vsphere v2.16.1 ``resource_vsphere_supervisor.go`` ``egress_cidr``), so the
file service sees those addresses. ``loadBalancerSourceRanges`` is where users come from, not
the nodes. Elsewhere ``fileShareClients`` must be given.

Root is kept for the node network only with ``rwxProvisioner=nfs-subdir``: the provisioner
(kubernetes-sigs/nfs-subdir-external-provisioner v4.0.2, the image chart 4.0.18 runs; a
distroless image, so uid 0, and the chart sets no securityContext) creates each volume's
directory at the share's root (``os.MkdirAll(fullPath, 0777)`` then ``os.Chmod``, and
``os.Rename`` to ``archived-*`` on delete, ``cmd/nfs-subdir-external-provisioner/provisioner.go``).
Squashed to the anonymous user, that works only if the share's root is writable by it, which
VMware does not document. The data Job and the Dask pods run as non-root users inside those
0777 directories and need no root (docs/deploy.md, "Who mounts the share").
"""
from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from components.settings.errors import Problem
from components.settings.model import FileShareSpec, NetPermission, Settings

#: Widest range given root on the share: a /16 (65,536 addresses) holds any node network.
ROOT_MAX_ADDRESSES = 2**16
EVERY_ADDRESS = 2**32
REQUIRED = ("is required with fileShareMode=vsan: the settings do not say the workload cluster's node network"
            " (only supervisorMode=create does, through supervisorCreateSpec egressCidr). List the network the"
            " cluster's nodes reach the file service from, e.g."
            " ips=<the workload network's CIDR>,permissions=READ_WRITE,allowRoot=false; with rwxProvisioner"
            "=nfs-subdir give that one entry allowRoot=true: the provisioner creates each volume's directory at"
            " the share's root as root (docs/deploy.md, \"Who mounts the share\")")


def derived_clients(create_spec: Mapping[str, str], supervisor_mode: str,
                    provisioner: str) -> tuple[NetPermission, ...]:
    """The node network's entries where the settings say it (the Supervisor's egress CIDRs), else none."""
    if supervisor_mode != "create":
        return ()
    cidrs = [c.strip() for c in create_spec.get("egressCidr", "").split(",") if c.strip()]
    return tuple(NetPermission(cidr, "READ_WRITE", provisioner == "nfs-subdir") for cidr in cidrs)


def address_count(ips: str) -> int:
    """How many IPv4 addresses ``ips`` covers; ValueError when vSAN would not take it."""
    text = ips.strip()
    if text == "*":
        return EVERY_ADDRESS
    if "-" in text:
        low, high = (ipaddress.IPv4Address(part.strip()) for part in text.split("-", 1))
        if high < low:
            raise ValueError(f"range {text!r} ends before it starts")
        return int(high) - int(low) + 1
    return ipaddress.IPv4Network(text, strict=False).num_addresses


def client_problems(s: Settings) -> list[Problem]:
    """Why the share's clients are unsafe or unusable, each naming its entry."""
    fs: FileShareSpec = s.file_share
    if fs.mode != "vsan":
        return []
    if not fs.clients:
        return [Problem("fileShareClients", REQUIRED)]
    out: list[Problem] = []
    for i, client in enumerate(fs.clients):
        out.extend(Problem(f"fileShareClients[{i}]", message) for message in _entry_problems(client))
    return out


def _entry_problems(client: NetPermission) -> list[str]:
    try:
        count = address_count(client.ips)
    except ValueError:
        return [f"{client.ips!r} is not an IPv4 address, CIDR, range a-b or * (vim.vsan.FileShareNetPermission.ips)"]
    out = []
    if count == EVERY_ADDRESS and client.permissions == "READ_WRITE":
        out.append(f"ips={client.ips} opens the share read-write to every address: any machine that reaches the"
                   " file service could change the dataset and the pip cache the workers install from. Give the"
                   " workload cluster's node network, e.g. ips=10.20.30.0/24,permissions=READ_WRITE")
    if client.allow_root and count > ROOT_MAX_ADDRESSES:
        out.append(f"ips={client.ips} with allowRoot=true gives root on the share to {count} addresses: keep root"
                   f" for the node network only (at most {ROOT_MAX_ADDRESSES} addresses, a /16), allowRoot=false"
                   " elsewhere")
    return out
