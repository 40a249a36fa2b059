"""What the operator-backend tests share: a stack config that selects the operator, settings
built the way the program builds them, and the pinned operator chart's own CRDs."""
from __future__ import annotations

import io
import tarfile

import yaml

from components.dask import podspec
from components.dask.operator_cluster import CLUSTER_NAME
from components.dask.operator_spec import DaskClusterInputs
from components.settings.model import POOL_ROLE_LABEL
from components.settings.operator import initial_workers
from components.settings.placement import pool_selector
from tests.artifacts import DASK_OPERATOR_CHART, artifact_path
from tests.unit.support import settings

MODERN_IMAGE = "registry.example/dask-tkg/dask-runtime:2026.7.1"
# The operator needs an image Dask >= 2022.10.0: the project's runtime image, which holds every
# package itself (workerEnvironment=image: no prepared environment on the paper's driver).
OPERATOR = {"daskBackend": "operator", "daskImage": MODERN_IMAGE, "daskImageDaskVersion": "2026.7.1",
            "extraPipPackages": "", "workerEnvironment": "image"}
NAMESPACE = "rapidsai"


def operator_settings(**overrides):
    return settings(**{**OPERATOR, **overrides})


def cluster_inputs(s, namespace: str = NAMESPACE, tls: bool = True) -> DaskClusterInputs:
    """The builder's inputs as ``DaskOperatorCluster`` makes them."""
    return DaskClusterInputs(
        dask=s.dask, name=CLUSTER_NAME, namespace=namespace, scheduler_selector=pool_selector(s, "scheduler"),
        worker_selector={POOL_ROLE_LABEL: "gpu"}, cpu_worker_selector={POOL_ROLE_LABEL: "cpu"},
        claims=podspec.Claims("external-nfs-pvc", "pip-cache-pvc", s.storage.dataset_mount),
        initial_workers=initial_workers(s), tls_secret=f"{CLUSTER_NAME}-tls" if tls else None)


def chart_crds() -> list[dict]:
    """The CustomResourceDefinitions in the pinned dask-kubernetes-operator chart's ``crds/``."""
    crds = []
    with tarfile.open(artifact_path(DASK_OPERATOR_CHART)) as chart:
        for member in chart.getmembers():
            if member.isfile() and "/crds/" in member.name and member.name.endswith(".yaml"):
                extracted = chart.extractfile(member)
                assert extracted is not None, member.name
                text = extracted.read().decode()
                crds += [doc for doc in yaml.safe_load_all(io.StringIO(text)) if doc]
    return crds
