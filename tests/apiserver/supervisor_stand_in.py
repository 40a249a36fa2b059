"""A Supervisor's release objects on the stand-in API server: the CRDs they are served by, and
objects shaped as a Supervisor's controllers leave them.

Two release APIs exist (``components/cluster/providers/supervisor_releases.py`` cites each):
vSphere 8's TanzuKubernetesRelease, whose CRD is tanzu-framework's pinned file, and VKS 3.4+'s
KubernetesRelease, whose CRD is not published. ``kubernetes_release_crd`` derives that one from
what a VKS Supervisor is seen to serve, and no more: group ``kubernetes.vmware.com``, version
``v1alpha1``, cluster-scoped, plural ``kubernetesreleases``, short name ``kr``, the
``kubectl get kr`` columns NAME, VERSION, READY, COMPATIBLE, CREATED, ``spec.version`` a string
and ``status.conditions`` in Cluster API's Condition shape. Everything else a real one holds is
kept (``x-kubernetes-preserve-unknown-fields``), not guessed.
"""
from __future__ import annotations

import base64

import yaml

from tests import artifacts
from tests.kube.crds import load_crd

OS_IMAGE_API = "run.tanzu.vmware.com/v1alpha3"
KR_API = "kubernetes.vmware.com/v1alpha1"


def _condition_column(kind: str) -> dict:
    return {"name": kind.upper(), "type": "string", "jsonPath": f'.status.conditions[?(@.type=="{kind}")].status'}


def kubernetes_release_crd() -> dict:
    """The KubernetesRelease CRD, derived (see the module's docstring)."""
    condition = {"type": "object", "required": ["type", "status"],
                 "properties": {name: {"type": "string"} for name in
                                ("type", "status", "reason", "message", "severity", "lastTransitionTime")}}
    schema = {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "properties": {"version": {"type": "string"}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                   "properties": {"conditions": {"type": "array", "items": condition}}}}}
    columns = [{"name": "VERSION", "type": "string", "jsonPath": ".spec.version"}, _condition_column("Ready"),
               _condition_column("Compatible"),
               {"name": "CREATED", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "kubernetesreleases.kubernetes.vmware.com"},
            "spec": {"group": "kubernetes.vmware.com", "scope": "Cluster",
                     "names": {"kind": "KubernetesRelease", "listKind": "KubernetesReleaseList",
                               "plural": "kubernetesreleases", "singular": "kubernetesrelease", "shortNames": ["kr"]},
                     "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}},
                                   "additionalPrinterColumns": columns}]}}


def tanzu_release_crds() -> list[dict]:
    """tanzu-framework's TKR and OSImage CRDs. The TKR CRD stores v1alpha1 and a Supervisor
    converts to it through a webhook; the stand-in has none, so v1alpha3 is made the stored
    version here (its schema, the one read, unchanged), else the v1alpha1 schema would prune
    ``spec.osImages``."""
    tkr = load_crd(artifacts.TKR_CRD)
    for version in tkr["spec"]["versions"]:
        version["storage"] = version["name"] == "v1alpha3"
    return [tkr, load_crd(artifacts.OSIMAGE_CRD)]


def os_image_crd() -> dict:
    return load_crd(artifacts.OSIMAGE_CRD)


def condition(kind: str, status: str, why: dict | None = None) -> dict:
    return {"type": kind, "status": status, "lastTransitionTime": "2026-11-02T10:00:00Z", **(why or {})}


def os_image(name: str, os_name: str, version: str, k8s: str) -> dict:
    return {"apiVersion": OS_IMAGE_API, "kind": "OSImage", "metadata": {"name": name},
            "spec": {"kubernetesVersion": k8s, "os": {"name": os_name, "version": version, "arch": "amd64",
                                                       "type": "linux"},
                     "image": {"type": "vmop", "ref": {"name": name}}}}


def kubernetes_release(name: str) -> dict:
    """A KubernetesRelease as VKS publishes one: named like its version with ``+`` as ``---``."""
    return {"apiVersion": KR_API, "kind": "KubernetesRelease", "metadata": {"name": name},
            "spec": {"version": name.replace("---", "+")}}


def kubeconfig(server, token: str | None = None) -> str:
    """A kubeconfig carrying the CA as data, as a Supervisor's service-account kubeconfig does."""
    doc = yaml.safe_load(server.kubeconfig.read_text())
    cluster = doc["clusters"][0]["cluster"]
    cluster["certificate-authority-data"] = base64.b64encode(server.ca_file.read_bytes()).decode()
    del cluster["certificate-authority"]
    if token:
        doc["users"][0]["user"]["token"] = token
    return yaml.safe_dump(doc)
