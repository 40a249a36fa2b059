"""The variables of VMware's ClusterClasses, as data, and the check of every variable a
Cluster sets against its class's generation.

A Cluster (``cluster.x-k8s.io/v1beta1``) names a ClusterClass in ``spec.topology.class``;
the class declares which ``topology.variables`` (and per-pool ``variables.overrides``) it
takes. VMware's classes come in two generations whose variables differ in name and shape:

* flat: ``tanzukubernetescluster`` (the unversioned class of TKG Service 3.0/3.1) and
  ``builtin-generic-v3.1.0``: ``defaultStorageClass``, ``storageClasses``,
  ``nodePoolVolumes`` with ``capacity.storage``, ``nodePoolLabels`` as key/value lists, ...
* structured: ``builtin-generic-v3.2.0`` and later: ``volumes`` with ``capacity`` a plain
  quantity, ``node.labels`` as a map, ``kubernetes.security.podSecurityStandard``,
  ``vsphereOptions.persistentVolumes.defaultStorageClass``, ``osConfiguration``, ...

Sources: VMware vSphere 8 TKG Service docs, "Using the Cluster v1beta1 API" (GUID-69E52B31:
``vmClass`` and ``storageClass`` required; the flat variables of ``tanzukubernetescluster``);
Broadcom KB 404143 (the switch to structured variables in ``builtin-generic-v3.2.0``);
Broadcom's variable reference for the builtin classes
(developer.broadcom.com/xapis/vmware-vsphere-kubernetes-service/3.7.0/variable-docs.html); real
Clusters on ``tanzukubernetescluster`` (papivot/tkg-helper-scripts
``tkgs-cluster-class-noaz.yaml`` @ f3e362ed), ``builtin-generic-v3.3.0`` and ``v3.4.0``
(defaultroute0/vksdemo ``vksexpdaylab/`` @ 0e9acc80, e5511110). No ClusterClass object itself is
published: each shape below is what those sources show, and an object whose inner shape no
source shows is checked as an object only (``OPEN``).

The schemas use a small subset of OpenAPI: ``type``, ``properties``, ``required``, ``items``,
``additionalProperties`` (False, or a schema for a map's values) and ``enum``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
BOOLEAN = {"type": "boolean"}
OPEN = {"type": "object"}  # a shape no source shows: checked as an object only
STRINGS = {"type": "array", "items": STRING}
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
PSS_LEVELS = ["privileged", "baseline", "restricted"]


def _object(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "required": list(required),
            "additionalProperties": False}


_PSS = _object({
    "deactivated": BOOLEAN,
    **{level: {"type": "string", "enum": PSS_LEVELS} for level in ("audit", "enforce", "warn")},
    **{f"{level}Version": STRING for level in ("audit", "enforce", "warn")},
    "exemptions": _object({"namespaces": STRINGS}),
})
_TAINT = _object({"key": STRING, "value": STRING, "effect": {"type": "string", "enum": TAINT_EFFECTS}},
                 ("key", "effect"))

FLAT_VOLUME = _object({"name": STRING, "mountPath": STRING, "storageClass": STRING,
                       "capacity": _object({"storage": STRING}, ("storage",))},
                      ("name", "mountPath", "capacity"))
STRUCTURED_VOLUME = _object({"name": STRING, "mountPath": STRING, "storageClass": STRING, "capacity": STRING},
                            ("name", "mountPath", "capacity"))

FLAT_VARIABLES: dict[str, dict[str, Any]] = {
    "vmClass": STRING,
    "storageClass": STRING,
    "defaultStorageClass": STRING,
    "storageClasses": STRINGS,
    "controlPlaneVolumes": {"type": "array", "items": FLAT_VOLUME},
    "nodePoolVolumes": {"type": "array", "items": FLAT_VOLUME},
    "nodePoolLabels": {"type": "array", "items": _object({"key": STRING, "value": STRING}, ("key", "value"))},
    "nodePoolTaints": {"type": "array", "items": _TAINT},
    "podSecurityStandard": _PSS,
    "ntp": STRING,
    "kubeAPIServerFQDNs": STRINGS,
    "controlPlaneCertificateRotation": _object({"activate": BOOLEAN, "daysBefore": INTEGER}),
    "clusterEncryptionConfigYaml": STRING,
    "user": OPEN,
    "trust": OPEN,
    "proxy": OPEN,
    "extensionCert": OPEN,
}

STRUCTURED_VARIABLES: dict[str, dict[str, Any]] = {
    "vmClass": STRING,
    "storageClass": STRING,
    "volumes": {"type": "array", "items": STRUCTURED_VOLUME},
    "node": _object({"labels": {"type": "object", "additionalProperties": STRING},
                     "taints": {"type": "array", "items": _TAINT}}),
    "kubernetes": _object({
        "certificateRotation": _object({"enabled": BOOLEAN, "renewalDaysBeforeExpiry": INTEGER}),
        "endpointFQDNs": STRINGS,
        "security": _object({"podSecurityStandard": _PSS}),
    }),
    "vsphereOptions": _object({"persistentVolumes": _object({
        "availableStorageClasses": STRINGS,
        "defaultStorageClass": STRING,
        "availableVolumeSnapshotClasses": STRINGS,
        "defaultVolumeSnapshotClass": STRING,
        "customizableStorageClassAnnotations": STRINGS,
        "customizableStorageClassLabels": STRINGS,
    })}),
    "osConfiguration": _object({"ntp": _object({"servers": STRINGS}),
                                "systemProxy": _object({"http": STRING, "https": STRING, "noProxy": STRINGS}),
                                "trust": OPEN, "user": OPEN, "fips": _object({"enabled": BOOLEAN}),
                                "ubuntuPro": OPEN}),
    "resourceConfiguration": OPEN,
}


@dataclass(frozen=True)
class ClassGeneration:
    """One generation of VMware's ClusterClass variables."""

    name: str  # flat | structured
    variables: Mapping[str, Mapping[str, Any]]

    @property
    def structured(self) -> bool:
        return self.name == "structured"


FLAT = ClassGeneration("flat", FLAT_VARIABLES)
STRUCTURED = ClassGeneration("structured", STRUCTURED_VARIABLES)
REQUIRED_VARIABLES = ("vmClass", "storageClass")  # GUID-69E52B31

UNVERSIONED_CLASS = "tanzukubernetescluster"
_BUILTIN = re.compile(r"^builtin-generic-v3\.(\d+)\.(\d+)$")
# builtin-generic-v3.1.0 is flat; v3.2.0 brought structured variables (KB 404143); v3.7.0 is
# the newest class the sources name (VKS 3.7 variable reference).
NEWEST_KNOWN_MINOR = 7
BUILTIN_NAMESPACE = "vmware-system-vks-public"  # where VKS publishes the builtin classes


def generation(class_name: str) -> ClassGeneration:
    """The variable generation of VMware class ``class_name``; ValueError for a class whose
    variables no source describes."""
    if class_name == UNVERSIONED_CLASS:
        return FLAT
    match = _BUILTIN.match(class_name)
    if not match:
        raise ValueError(f"{class_name!r} is not one of VMware's ClusterClasses ({UNVERSIONED_CLASS}, or"
                         f" builtin-generic-v3.1.0 ... v3.{NEWEST_KNOWN_MINOR}.0)")
    minor = int(match.group(1))
    if not 1 <= minor <= NEWEST_KNOWN_MINOR:
        raise ValueError(f"{class_name!r}: the variables of builtin-generic classes are known for v3.1.0 ..."
                         f" v3.{NEWEST_KNOWN_MINOR}.0 only; name one of those")
    return FLAT if minor == 1 else STRUCTURED


def check_variables(class_name: str, variables: Sequence[Mapping[str, Any]], where: str,
                    required: tuple[str, ...] = ()) -> list[str]:
    """Problems of ``variables`` (``[{name, value}]``) for class ``class_name``: an unknown
    name, a value of the wrong shape, a missing required one. ``where`` names the list."""
    known = generation(class_name).variables
    problems = []
    names = [v.get("name") for v in variables]
    for needed in required:
        if needed not in names:
            problems.append(f"{where}: variable {needed!r} is required by {class_name}")
    for variable in variables:
        name = variable.get("name")
        schema = known.get(name) if isinstance(name, str) else None
        if schema is None:
            problems.append(f"{where}: {class_name} has no variable {name!r} (it has: {', '.join(sorted(known))})")
            continue
        problems.extend(check_value(variable.get("value"), schema, f"{where}.{name}"))
    return problems


_TYPES: dict[str, type[Any]] = {"string": str, "integer": int, "boolean": bool, "array": list, "object": dict}


def check_value(value: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    """Where ``value`` departs from ``schema`` (the subset of OpenAPI this module uses)."""
    kind = schema["type"]
    if not isinstance(value, _TYPES[kind]) or (kind == "integer" and isinstance(value, bool)):
        return [f"{path}: must be {'an' if kind[0] in 'aeio' else 'a'} {kind}, got {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: must be one of {', '.join(schema['enum'])}, got {value!r}"]
    problems: list[str] = []
    if kind == "array":
        for i, item in enumerate(value):
            problems.extend(check_value(item, schema["items"], f"{path}[{i}]"))
    elif kind == "object":
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for field in schema.get("required", []):
            if field not in value:
                problems.append(f"{path}: {field!r} is required")
        for field, item in value.items():
            if field in properties:
                problems.extend(check_value(item, properties[field], f"{path}.{field}"))
            elif extra is False:
                problems.append(f"{path}: unknown field {field!r} (known: {', '.join(sorted(properties))})")
            elif isinstance(extra, dict):
                problems.extend(check_value(item, extra, f"{path}.{field}"))
    return problems
