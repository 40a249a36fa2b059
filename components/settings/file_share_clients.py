"""Who may mount the vSAN file share: the workload cluster's nodes, never every address.

vSAN takes each client as a single IPv4 address, a CIDR, a range ``a-b`` or ``*`` (every
client), and ``allowRoot`` "whether to squash the root user or not" (vSAN Management API 7.0,
``vim.vsan.FileShareNetPermission``).

The node network is never guessed. The Supervisor's ``egressCidr`` (NSX's SNAT range) was once
taken for it, but NSX gives every vSphere Namespace's traffic an address from that range ("CIDR
blocks from which NSX assigns IP addresses used for performing SNAT from container IPs to
external IPs", vSphere Automation API 7.0 ``NCPClusterNetworkEnableSpec``): every namespace's
workloads, other teams' included, would have mounted the share, with root.
``fileShareClients`` is required, and preview refuses entries that, one by one or together, open
the share read-write to every address or give root to more than a /16.

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

from components.settings.errors import Problem
from components.settings.model import FileShareSpec, NetPermission, Settings

#: Widest range given root on the share: a /16 (65,536 addresses) holds any node network.
ROOT_MAX_ADDRESSES = 2**16
EVERY_ADDRESS = 2**32
REQUIRED = ("is required with fileShareMode=vsan: list the addresses the workload cluster's nodes reach the file"
            " service from, e.g. ips=<the workload network's CIDR>,permissions=READ_WRITE,allowRoot=false (vDS"
            " networking), or the vSphere Namespace's SNAT address with NSX (one address of the Supervisor's"
            " egressCidr, which every namespace shares: never the whole range). With rwxProvisioner=nfs-subdir give"
            " that one entry allowRoot=true: the provisioner creates each volume's directory at the share's root as"
            " root (docs/deploy.md, \"Who mounts the share\")")


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


def networks(ips: str) -> list[ipaddress.IPv4Network]:
    """The IPv4 networks ``ips`` covers (``address_count``'s forms)."""
    text = ips.strip()
    if text == "*":
        return [ipaddress.IPv4Network("0.0.0.0/0")]
    if "-" in text:
        low, high = (ipaddress.IPv4Address(part.strip()) for part in text.split("-", 1))
        return list(ipaddress.summarize_address_range(low, high))
    return [ipaddress.IPv4Network(text, strict=False)]


def covered(clients: list[NetPermission]) -> int:
    """How many distinct IPv4 addresses the entries cover together."""
    nets = [net for client in clients for net in networks(client.ips)]
    return sum(net.num_addresses for net in ipaddress.collapse_addresses(nets))


def client_problems(s: Settings) -> list[Problem]:
    """Why the share's clients are unsafe or unusable, each naming its entry (or all of them,
    for what only their sum does)."""
    fs: FileShareSpec = s.file_share
    if fs.mode != "vsan":
        return []
    if not fs.clients:
        return [Problem("fileShareClients", REQUIRED)]
    out: list[Problem] = []
    for i, client in enumerate(fs.clients):
        out.extend(Problem(f"fileShareClients[{i}]", message) for message in _entry_problems(client))
    if out:
        return out
    return _together_problems(list(fs.clients))


def _together_problems(clients: list[NetPermission]) -> list[Problem]:
    """What entries acceptable one by one do together: half the address space each is every address."""
    out = []
    writers = [c for c in clients if c.permissions == "READ_WRITE"]
    if writers and covered(writers) == EVERY_ADDRESS:
        out.append(Problem("fileShareClients", (
            f"the READ_WRITE entries ({', '.join(c.ips for c in writers)}) together open the share read-write to"
            " every address: list the workload cluster's node network only")))
    roots = [c for c in clients if c.allow_root]
    if roots and covered(roots) > ROOT_MAX_ADDRESSES:
        out.append(Problem("fileShareClients", (
            f"the allowRoot=true entries ({', '.join(c.ips for c in roots)}) together give root on the share to"
            f" {covered(roots)} addresses: keep root for the node network only (at most {ROOT_MAX_ADDRESSES}"
            " addresses, a /16)")))
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
