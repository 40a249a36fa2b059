"""Parsers for the value formats settings use: Kubernetes quantities, CIDRs, names,
TKR versions, month ranges. Each raises ValueError saying what is allowed."""
from __future__ import annotations

import ipaddress
import re

from components.artifacts.images import ImageRef

_RFC1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_CPU = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m)?$")
_TKR = re.compile(r"^v(\d+)\.(\d+)\.(\d+)(?:---|\+)vmware\.[0-9A-Za-z.\-]+$")
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
_UNITS = {
    None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}


def rfc1123_label(text: str) -> str:
    """A Kubernetes name: lower-case alphanumerics and '-', starts and ends alphanumeric,
    at most 63 characters."""
    if len(text) > 63 or not _RFC1123_LABEL.match(text):
        raise ValueError(
            "must be an RFC 1123 label: at most 63 lower-case letters, digits or '-',"
            " starting and ending with a letter or digit"
        )
    return text


def quantity_bytes(text: str) -> int:
    """Bytes of a Kubernetes memory/storage quantity such as ``48Gi`` or ``500M``."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise ValueError("must be a Kubernetes quantity such as 512Mi, 48Gi or 2Ti")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def quantity(text: str) -> str:
    """``text`` if it is a Kubernetes quantity (as a settings check: the value unchanged)."""
    quantity_bytes(text)
    return text


def cpu_millis(text: str) -> int:
    """Millicores of a Kubernetes CPU quantity such as ``3``, ``2.5`` or ``500m``."""
    match = _CPU.match(str(text).strip())
    if not match:
        raise ValueError("must be a CPU quantity such as 3, 2.5 or 500m")
    value = float(match.group(1))
    return int(value if match.group(2) else value * 1000)


def cidr(text: str) -> str:
    try:
        return str(ipaddress.ip_network(text, strict=True))
    except ValueError:
        raise ValueError("must be a network in CIDR notation such as 10.0.0.0/16") from None


def tkr_kubernetes_version(tkr: str) -> tuple[int, int, int]:
    """Kubernetes version of a Tanzu Kubernetes release name (``v1.20.8---vmware.1-tkg.2``)."""
    match = _TKR.match(tkr)
    if not match:
        raise ValueError("must be a Tanzu Kubernetes release such as v1.20.8---vmware.1-tkg.2")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def expand_months(items: tuple[str, ...]) -> tuple[str, ...]:
    """``2017-01..2017-03`` -> 2017-01, 2017-02, 2017-03; single months pass through."""
    months: list[str] = []
    for item in items:
        start, _, end = item.partition("..")
        end = end or start
        for part in (start, end):
            if not _MONTH.match(part):
                raise ValueError(f"{part!r} is not a month YYYY-MM (ranges: YYYY-MM..YYYY-MM)")
        y0, m0 = (int(x) for x in start.split("-"))
        y1, m1 = (int(x) for x in end.split("-"))
        if (y1, m1) < (y0, m0):
            raise ValueError(f"range {item!r} ends before it starts")
        y, m = y0, m0
        while (y, m) <= (y1, m1):
            months.append(f"{y:04d}-{m:02d}")
            y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return tuple(dict.fromkeys(months))


def pinned_image(text: str) -> str:
    """An image reference with an explicit tag other than ``latest``, a digest, or both
    (``name:tag@sha256:<64 hex>``: the digest is what is pulled)."""
    ref = ImageRef.parse(text)  # ValueError: a malformed digest
    if ref.digest:
        return text
    if not ref.tag:
        raise ValueError("must name a tag (repository:tag) or a digest (repository@sha256:...)")
    if ref.tag == "latest":
        raise ValueError("must be pinned: 'latest' is not a version")
    return text


# vSAN Management API 7.0, vim.vsan.FileShareConfig.name: at most 80 characters, letters,
# digits and '-', every '-' between a letter or digit (so no leading, trailing or double '-').
_VSAN_SHARE_NAME = re.compile(r"^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$")


def vsan_share_name(name: str) -> str:
    """A vSAN file share name, or ValueError saying what the file service accepts."""
    if len(name) > 80 or not _VSAN_SHARE_NAME.match(name):
        raise ValueError("must be at most 80 letters, digits and '-', each '-' between letters or digits"
                         " (vSAN file share names)")
    return name
