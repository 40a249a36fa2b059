"""What the rules share: the resource types as the engine reports them, reading properties
through the SDK's proxies, image references, and the stack settings the CLI hands a pack.

The pack does not import the program: a guard that reuses the code it guards would share
its bugs. The few constants both need are checked against the program by the tests.

Properties arrive as ``Mapping``/``Sequence`` proxies (not ``dict``/``list``) that raise
``UnknownValueError`` when a value is not known yet (``pulumi preview`` of a new stack).
The helpers here only test for the abstract types and let that error through: the SDK
turns it into an advisory "can't run policy during preview" note instead of a violation.
"""
from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

PROJECT = "dask-tkg"  # Pulumi.yaml ``name``: the prefix of the stack's own settings
POOL_ROLE_LABEL = "dask-tkg.io/pool-role"
DATA_LABEL = "dask-tkg.io/data"
DATASET_CLAIM = "external-nfs-pvc"
GPU_RESOURCE = "nvidia.com/gpu"

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SERVICE = "kubernetes:core/v1:Service"
TKC_V1ALPHA2 = "kubernetes:run.tanzu.vmware.com/v1alpha2:TanzuKubernetesCluster"
TKC_V1ALPHA3 = "kubernetes:run.tanzu.vmware.com/v1alpha3:TanzuKubernetesCluster"
TKC_TYPES = (TKC_V1ALPHA2, TKC_V1ALPHA3)
CAPI_CLUSTER = "kubernetes:cluster.x-k8s.io/v1beta1:Cluster"  # the default stacks' workload cluster (VKS)
CLUSTER_TYPES = (*TKC_TYPES, CAPI_CLUSTER)
VM_CLASS = "vsphere:index/virtualMachineClass:VirtualMachineClass"
VSAN_POLICY = "pulumi-python:dynamic/vsphere:VsanStoragePolicy"
SUPERVISOR_NAMESPACE = "pulumi-python:dynamic/vsphere:SupervisorNamespace"
VSPHERE_NAMESPACE = "vsphere:index/namespace:Namespace"
VSAN_FILE_SHARE = "pulumi-python:dynamic/vsphere:VsanFileShare"

EMPTY: Mapping[str, Any] = {}


def as_map(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping (a proxy or a dict), else an empty one."""
    return value if isinstance(value, Mapping) else EMPTY


def as_list(value: Any) -> Sequence[Any]:
    """``value`` if it is a list (a proxy or a list), else an empty one; never a string."""
    return value if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else ()


def dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...``, or None where a level is missing or not a mapping."""
    for key in keys:
        value = as_map(value).get(key)
        if value is None:
            return None
    return value


def count(value: Any) -> int | None:
    """A whole-number resource amount (1, 1.0 or "1"), or None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and float(value).is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def truthy(value: Any) -> bool:
    """A boolean setting as the CLI passes it (``true``/``"true"``)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def k8s_name(props: Mapping[str, Any], fallback: str) -> str:
    """The Kubernetes object's ``metadata.name``, or ``fallback`` when it has none."""
    name = dig(props, "metadata", "name")
    return name if isinstance(name, str) and name else fallback


def where(kind: str, object_name: str, resource_name: str) -> str:
    """``kind 'name' (Pulumi resource 'r')``: how messages name the offender."""
    if object_name == resource_name:
        return f"{kind} {object_name!r}"
    return f"{kind} {object_name!r} (Pulumi resource {resource_name!r})"


# --- image references --------------------------------------------------------------------
_REFERENCE = re.compile(
    r"^(?P<name>[A-Za-z0-9._-]+(?::[0-9]+(?=/))?(?:/[A-Za-z0-9._-]+)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)


def image_problem(reference: Any) -> str | None:
    """Why ``reference`` is not a pinned image, or None if it is pinned (a digest, or a tag
    that is not ``latest``)."""
    if not isinstance(reference, str) or not reference:
        return "names no image"
    match = _REFERENCE.match(reference)
    if match is None:
        return f"is not a valid image reference ({reference!r})"
    if match["digest"]:
        return None
    tag = match["tag"]
    if not tag:
        return f"has no tag ({reference!r}), so Kubernetes pulls whatever ':latest' is at the time"
    if tag.lower() == "latest":
        return f"uses the moving tag 'latest' ({reference!r})"
    return None


# --- LoadBalancer exposure ---------------------------------------------------------------
def open_to_everyone(ranges: Sequence[Any]) -> bool:
    """True when ``ranges`` is empty or holds a /0 (0.0.0.0/0, ::/0)."""
    if not ranges:
        return True
    for cidr in ranges:
        try:
            if ipaddress.ip_network(str(cidr).strip(), strict=False).prefixlen == 0:
                return True
        except ValueError:
            continue  # the API server rejects an invalid CIDR itself
    return False


# --- the stack's own settings --------------------------------------------------------------
def stack_setting(key: str) -> Any:
    """The stack's setting ``dask-tkg:<key>`` as the CLI hands it to a policy pack (the
    PULUMI_CONFIG environment of the pack's process), or None if the stack does not set it."""
    return pulumi.Config(PROJECT).get(key)


def stack_vgpu_classes() -> set[str]:
    """Names of the stack's custom VM classes that carry a vGPU (``vmClasses`` records with
    a ``vgpuProfile``)."""
    raw = stack_setting("vmClasses")
    try:
        records = json.loads(raw) if isinstance(raw, str) else []
    except json.JSONDecodeError:
        return set()
    names = set()
    for record in records if isinstance(records, list) else []:
        fields = dict(part.split("=", 1) for part in str(record).split(",") if "=" in part)
        if fields.get("vgpuProfile", "").strip() and fields.get("name"):
            names.add(fields["name"].strip())
    return names
