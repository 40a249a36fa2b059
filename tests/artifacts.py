"""Pinned upstream artifacts for the tests, read from the cache that scripts/fetch_artifacts.py
fills (``make test`` runs it first). Nothing here opens a path outside the repository or the
cache."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fetch_artifacts.py"
_spec = importlib.util.spec_from_file_location("fetch_artifacts", _SCRIPT)
assert _spec is not None and _spec.loader is not None, _SCRIPT
fetch_artifacts = importlib.util.module_from_spec(_spec)
sys.modules["fetch_artifacts"] = fetch_artifacts  # dataclasses look their module up there
_spec.loader.exec_module(fetch_artifacts)

MissingArtifact = fetch_artifacts.MissingArtifact


def artifact_path(file: str) -> Path:
    """The cached, sha256-verified path of a pinned artifact (its ``file`` in scripts/artifacts.toml)."""
    return fetch_artifacts.artifact_path(file)


TKC_CRD_V1ALPHA2 = "crds/run.tanzu.vmware.com_tanzukubernetesclusters.v1alpha2.yaml"
CAPI_CLUSTER_CRD = "crds/capi-v1.10.10/cluster.x-k8s.io_clusters.yaml"
CAPI_CLUSTERCLASS_CRD = "crds/capi-v1.10.10/cluster.x-k8s.io_clusterclasses.yaml"
CAPI_MACHINEDEPLOYMENT_CRD = "crds/capi-v1.10.10/cluster.x-k8s.io_machinedeployments.yaml"
# tanzu-framework@2bcc114e's TanzuKubernetesRelease and OSImage CRDs (what a Supervisor publishes its releases as)
TKR_CRD = "crds/tanzu-framework/run.tanzu.vmware.com_tanzukubernetesreleases.yaml"
OSIMAGE_CRD = "crds/tanzu-framework/run.tanzu.vmware.com_osimages.yaml"
DASK_CHART = "charts/dask-2024.1.1.tgz"
GPU_OPERATOR_CHART = "charts/gpu-operator-v1.9.1.tgz"  # the paper's
GPU_OPERATOR_CHART_CURRENT = "charts/gpu-operator-v26.7.0.tgz"
NFS_PROVISIONER_CHART = "charts/nfs-subdir-external-provisioner-4.0.18.tgz"
DASK_OPERATOR_CHART = "charts/dask-kubernetes-operator-2026.3.0.tgz"
