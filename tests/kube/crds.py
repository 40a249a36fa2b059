"""The CustomResourceDefinitions the stand-in serves, read unchanged from the pinned upstream
files (``tests/artifacts.py``), and installing one until every served version is discoverable."""
from __future__ import annotations

import time
from pathlib import Path

import kubernetes.client
import yaml

from tests import artifacts
from tests.kube.rest import (
    KubeApiError,
    api_request,
    apply_manifest,
    delete_object,
    forget_discovery,
    get_object,
    resource_info,
)

REPO = Path(__file__).resolve().parents[2]
TKC_CRD_V1ALPHA2 = artifacts.TKC_CRD_V1ALPHA2  # VMware's file, fetched into the cache
# Cluster API v1.10.10's generated CRDs (v1beta1 served and stored), fetched into the cache
CAPI_CRDS = (artifacts.CAPI_CLUSTER_CRD, artifacts.CAPI_CLUSTERCLASS_CRD, artifacts.CAPI_MACHINEDEPLOYMENT_CRD)
# the project's v1alpha3 entry, appended to VMware's CRD
TKC_V1ALPHA3_VERSION = REPO / "components/cluster/crds/run.tanzu.vmware.com_tanzukubernetesclusters.v1alpha3.yaml"


def load_tkc_crd() -> dict:
    """VMware's v1alpha2 TKC CRD, read unchanged, plus the project's v1alpha3 version entry.

    One CRD object serves both versions (v1alpha2 stays the storage version), as on
    a vSphere 8 Supervisor. The cached file is only read, never written.
    """
    v2_file = artifacts.artifact_path(TKC_CRD_V1ALPHA2)
    docs = [d for d in yaml.safe_load_all(v2_file.read_text()) if d]
    if len(docs) != 1 or docs[0].get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{v2_file}: expected one CustomResourceDefinition")
    crd = docs[0]
    v3 = yaml.safe_load(TKC_V1ALPHA3_VERSION.read_text())
    if not isinstance(v3, dict) or v3.get("name") != "v1alpha3" or "schema" not in v3:
        raise ValueError(f"{TKC_V1ALPHA3_VERSION}: expected one spec.versions entry named v1alpha3")
    if v3.get("storage"):
        raise ValueError(f"{TKC_V1ALPHA3_VERSION}: v1alpha2 is the storage version; v1alpha3 must say storage: false")
    versions = [v for v in crd["spec"]["versions"] if v.get("name") != "v1alpha3"]
    crd["spec"]["versions"] = [*versions, v3]
    crd["metadata"].pop("creationTimestamp", None)  # controller-gen writes null
    crd.pop("status", None)
    return crd


def load_crd(file: str) -> dict:
    """The one CustomResourceDefinition in the pinned artifact ``file``, as upstream wrote it.

    The cached file is only read; the CRD is installed as it is, so that a test sees the
    upstream schema and not a copy of it.
    """
    path = artifacts.artifact_path(file)
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    if len(docs) != 1 or docs[0].get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{path}: expected one CustomResourceDefinition")
    return docs[0]


def install_crd(api: kubernetes.client.ApiClient, crd: dict, timeout_s: float = 30.0) -> dict:
    """Create (or replace) a CRD and wait until it is Established and every served version is discoverable."""
    apply_manifest(api, crd, update_existing=True)
    name = crd["metadata"]["name"]
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"]
    deadline = time.monotonic() + timeout_s
    while True:
        current = get_object(api, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        conditions = {c["type"]: c for c in (current.get("status") or {}).get("conditions") or []}
        if conditions.get("Established", {}).get("status") == "True":
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"CRD {name} not Established after {timeout_s} s: {conditions}")
        time.sleep(0.1)
    for version in crd["spec"]["versions"]:
        if version.get("served", True):
            resource_info(api, f"{group}/{version['name']}", kind, wait_s=max(deadline - time.monotonic(), 1.0))
    return current


def uninstall_crd(api: kubernetes.client.ApiClient, name: str, timeout_s: float = 60.0) -> None:
    """Delete a CRD (and with it every object of its kinds) and wait until the server no longer
    lists it in discovery, so that a reader of discovery sees the API gone."""
    try:
        crd = get_object(api, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    except KubeApiError as exc:
        if exc.status == 404:
            return
        raise
    delete_object(api, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
    deadline = time.monotonic() + timeout_s
    for version in crd["spec"]["versions"]:
        forget_discovery(api, f"{group}/{version['name']}")
        while _discovered(api, f"/apis/{group}/{version['name']}", plural):
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} still served in {group}/{version['name']} after {timeout_s} s")
            time.sleep(0.2)


def _discovered(api: kubernetes.client.ApiClient, path: str, plural: str) -> bool:
    try:
        listed = api_request(api, "GET", path)
    except KubeApiError as exc:
        if exc.status == 404:
            return False
        raise
    return any(resource.get("name") == plural for resource in listed.get("resources") or [])
