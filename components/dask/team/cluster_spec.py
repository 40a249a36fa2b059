"""``teamClusterSpec``: the ``spec`` of a DaskCluster for a person's own cluster, built by the
builders of the shared cluster (``operator_spec``) so that both run the same pods: the stack's
image, scheduler and GPU worker (resources with ``nvidia.com/gpu``, node selectors, the pods'
hardening, the prepared environment first on PATH), the two shared claims mounted read-only by
name (each person's namespace holds claims of those names: ``team_volumes``).

Namespace-neutral and with no TLS, for the runner to complete (workloads/contract.py
``TEAM_CLUSTER_SPEC``):
- no scheduler address: the workers find it in ``DASK_SCHEDULER_ADDRESS``, which the controller
  sets in the cluster's own namespace unless the container does (dask-kubernetes 2026.3.0,
  operator/controller/controller.py ``build_worker_deployment_spec``; ``dask worker`` and
  ``dask-cuda-worker`` read it through Dask's ``scheduler-address`` config); the controller's is
  ``tcp://``, so a TLS cluster sets its own ``tls://`` one;
- the scheduler's Service selects ``dask.org/component: scheduler`` only: the runner adds
  ``dask.org/cluster-name`` of the cluster it names;
- no TLS volume or variables, worker replicas 0, no ``idleTimeout`` (each person's is in
  ``teamUsers``).
"""
from __future__ import annotations

from typing import Any

from components.addons.shared_storage import DATASET_CLAIM, PIP_CACHE_CLAIM
from components.dask import operator_spec, podspec
from components.settings.model import POOL_ROLE_LABEL, Settings
from components.settings.placement import pool_selector

NEUTRAL_NAME = "dask"  # the builders' cluster name; it reaches nothing the spec keeps


def team_cluster_spec(s: Settings, environment_subdir: str | None) -> dict[str, Any]:
    """The spec (``environment_subdir``: the prepared environment's directory on the pip-cache
    claim, None with workerEnvironment=image)."""
    inputs = operator_spec.DaskClusterInputs(
        dask=s.dask, name=NEUTRAL_NAME, namespace=None, scheduler_selector=pool_selector(s, "scheduler"),
        worker_selector={POOL_ROLE_LABEL: "gpu"}, cpu_worker_selector={POOL_ROLE_LABEL: "cpu"},
        claims=podspec.Claims(DATASET_CLAIM, PIP_CACHE_CLAIM, s.storage.dataset_mount, environment_subdir,
                              read_only=True),
        initial_workers=0, tls_secret=None, enforces_psp=s.cluster.enforces_psp)
    spec: dict[str, Any] = operator_spec.dask_cluster(inputs)["spec"]
    del spec["idleTimeout"]
    service = spec["scheduler"]["service"]
    service["selector"] = {operator_spec.COMPONENT_LABEL: "scheduler"}
    return spec
