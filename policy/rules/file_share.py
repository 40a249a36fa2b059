"""The vSAN file share is mounted only by the cluster's nodes: no client read-write to every
address, no root for a range wider than a /16, nor entries that do either together.

The share is the program's dynamic resource ``VsanFileShare``; its input ``net_permissions``
is ``[{ips, permissions, allow_root}]``, one ``vim.vsan.FileShareNetPermission`` each (vSAN
Management API 7.0: ``ips`` a single IPv4 address, a CIDR, a range ``a-b`` or ``*``;
``allowRoot`` "whether to squash the root user or not"). The pack keeps its own copy of the
arithmetic: a guard that reused the program's code would share its bugs.
"""
from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from .common import VSAN_FILE_SHARE, as_list, as_map, where

EVERY_ADDRESS = 2**32
ROOT_MAX_ADDRESSES = 2**16
FIX = ("Fix: list only the workload cluster's node network (stack setting fileShareClients, e.g. "
       "ips=10.20.30.0/24,permissions=READ_WRITE,allowRoot=true), root for that network only.")


def address_count(ips: Any) -> int | None:
    """How many IPv4 addresses a vSAN client string covers, or None if it is not one."""
    text = str(ips).strip()
    if text == "*":
        return EVERY_ADDRESS
    try:
        if "-" in text:
            low, high = (int(ipaddress.IPv4Address(p.strip())) for p in text.split("-", 1))
            return high - low + 1 if high >= low else None
        return ipaddress.IPv4Network(text, strict=False).num_addresses
    except ValueError:
        return None  # vSAN refuses it at create


def _problems(index: int, client: Any) -> list[str]:
    entry = as_map(client)
    ips, count = entry.get("ips"), address_count(entry.get("ips"))
    if count is None:
        return []
    out = []
    if count == EVERY_ADDRESS and entry.get("permissions", "READ_WRITE") == "READ_WRITE":
        out.append(f"net_permissions[{index}] ips={ips} is READ_WRITE to every address: any machine that reaches "
                   "the file service can change the dataset and the pip cache the workers install from")
    if entry.get("allow_root") is True and count > ROOT_MAX_ADDRESSES:
        out.append(f"net_permissions[{index}] ips={ips} gives root to {count} addresses (more than a /16)")
    return out


def _networks(ips: Any) -> list[ipaddress.IPv4Network]:
    text = str(ips).strip()
    if text == "*":
        return [ipaddress.IPv4Network("0.0.0.0/0")]
    try:
        if "-" in text:
            low, high = (ipaddress.IPv4Address(p.strip()) for p in text.split("-", 1))
            return list(ipaddress.summarize_address_range(low, high))
        return [ipaddress.IPv4Network(text, strict=False)]
    except (ValueError, TypeError):
        return []


def _covered(clients: list[Mapping[str, Any]]) -> int:
    nets = [net for client in clients for net in _networks(client.get("ips"))]
    return sum(net.num_addresses for net in ipaddress.collapse_addresses(nets))


def _together(clients: list[Mapping[str, Any]]) -> list[str]:
    """What entries fine one by one do together (``0.0.0.0/1`` and ``128.0.0.0/1`` are every address)."""
    writers = [c for c in clients if c.get("permissions", "READ_WRITE") == "READ_WRITE"]
    roots = [c for c in clients if c.get("allow_root") is True]
    out = []
    if writers and _covered(writers) == EVERY_ADDRESS:
        out.append(f"net_permissions {[c.get('ips') for c in writers]} together are READ_WRITE to every address")
    if roots and _covered(roots) > ROOT_MAX_ADDRESSES:
        out.append(f"net_permissions {[c.get('ips') for c in roots]} together give root to {_covered(roots)} addresses"
                   " (more than a /16)")
    return out


def _check_share(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != VSAN_FILE_SHARE:
        return
    share = where("VsanFileShare", str(args.props.get("share_name") or args.name), args.name)
    clients = [as_map(c) for c in as_list(args.props.get("net_permissions"))]
    found = [problem for index, client in enumerate(clients) for problem in _problems(index, client)]
    for problem in found or _together(clients):
        report(f"{share}: {problem}. {FIX}", args.urn)


file_share_clients_closed = ResourceValidationPolicy(
    name="file-share-clients-closed",
    description="The vSAN file share is not read-write to every address and gives root to no range wider than "
                "a /16: only the cluster's nodes mount it.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_check_share,
)

POLICIES = [file_share_clients_closed]
