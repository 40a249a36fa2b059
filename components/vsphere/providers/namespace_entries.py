"""The entries of a namespace's lists, as vCenter's ``Instances`` API holds them, shared by the
vSphere 7 namespace (``namespace_rest``) and the vSphere 8/9 access list and limits
(``namespace_access``).

``Instances.Access`` is {subject_type USER|GROUP, subject, domain, role OWNER|EDIT|VIEW};
``Instances.StorageSpec`` is {policy, limit in MiB (optional)} (vSphere Automation API,
``vcenter.namespaces.Instances``). In an ``Instances.UpdateSpec`` a list replaces the server's,
so both resources merge the program's entries into the server's by the entry's key (its
subject, its policy) and send a list only when it changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

SUBJECT_TYPES = ("USER", "GROUP")
ROLES = ("OWNER", "EDIT", "VIEW")
ACCESS_FIELDS = ("subject_type", "subject", "domain", "role")
#: A namespace's name: an RFC 1123 label (at most 63 characters, checked beside it).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def is_namespace_name(name: str) -> bool:
    """Whether ``name`` is an RFC 1123 label of at most 63 characters."""
    return len(name) <= 63 and bool(DNS_LABEL.match(name))


def access_key(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes an access entry the same entry: its subject (a new role replaces it)."""
    return entry.get("subject_type"), entry.get("subject"), entry.get("domain")


def storage_key(entry: Mapping[str, Any]) -> str | None:
    """What makes a storage spec the same spec: its policy (a new limit replaces it)."""
    return entry.get("policy")


def canonical(entries: Sequence[Any]) -> list[str]:
    """The entries in an order-free form, to tell whether two lists hold the same."""
    return sorted(json.dumps(e, sort_keys=True) for e in entries)


def merge_entries(server: Sequence[Any], ours: Sequence[Any], owned_before: Sequence[Any],
                  key: Callable[[Any], Any] | None = None) -> list[Any]:
    """The server's entries without the ones the program dropped, then the program's
    (an entry of ours replaces the server's with the same key: same subject, same policy)."""
    key = key or (lambda entry: entry)
    replaced = {key(e) for e in ours} | ({key(e) for e in owned_before} - {key(e) for e in ours})
    kept = [dict(e) if isinstance(e, Mapping) else e for e in server if key(e) not in replaced]
    return kept + [dict(e) if isinstance(e, Mapping) else e for e in ours]


def access_entry(entry: Mapping[str, Any], i: int) -> dict[str, str]:
    """``access_list[i]`` validated; ``ValueError`` names the field."""
    where = f"access_list[{i}]"
    missing = [k for k in ACCESS_FIELDS if not entry.get(k)]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    unknown = set(entry) - set(ACCESS_FIELDS)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    if entry["subject_type"] not in SUBJECT_TYPES:
        raise ValueError(f"{where}.subject_type: {entry['subject_type']!r} is not one of {' | '.join(SUBJECT_TYPES)}")
    if entry["role"] not in ROLES:
        raise ValueError(f"{where}.role: {entry['role']!r} is not one of {' | '.join(ROLES)}")
    return {k: str(entry[k]) for k in ACCESS_FIELDS}


def storage_entry(entry: Mapping[str, Any], i: int) -> dict[str, Any]:
    """``storage_specs[i]`` validated (the limit a whole number of MiB); ``ValueError`` names the field."""
    where = f"storage_specs[{i}]"
    if not entry.get("policy"):
        raise ValueError(f"{where}.policy: the storage policy id is required")
    unknown = set(entry) - {"policy", "limit"}
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    out: dict[str, Any] = {"policy": str(entry["policy"])}
    if entry.get("limit") is not None:
        limit = entry["limit"]
        if isinstance(limit, float) and limit.is_integer():
            limit = int(limit)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"{where}.limit: expected a whole number of MiB >= 0, got {entry['limit']!r}")
        out["limit"] = limit
    return out


def sorted_access(entries: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The access list validated, in a canonical order."""
    return sorted((access_entry(a, i) for i, a in enumerate(entries)),
                  key=lambda a: (a["domain"], a["subject"], a["subject_type"]))
