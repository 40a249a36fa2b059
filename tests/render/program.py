"""The Helm releases the program declares, with the values it builds, per stack variant.

The program runs for real under Pulumi's mocks (``tests/program/harness.py``), so the values
are exactly what ``pulumi up`` would hand to Helm for that stack file and overrides.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.artifacts import (
    DASK_CHART,
    DASK_OPERATOR_CHART,
    GPU_OPERATOR_CHART,
    GPU_OPERATOR_CHART_CURRENT,
    NFS_PROVISIONER_CHART,
    artifact_path,
)
from tests.kube.binaries import release_for_stack
from tests.program.graph import run_program
from tests.render.helm import Rendered, render

# The stack variants the other program tests use (tests/apiserver/test_program_objects.py).
# On vSphere 8 the 1.20 TKRs are not compatible with v1alpha3: the program refuses them.
TKR_FOR_V1ALPHA3 = "v1.21.6---vmware.1-tkg.1"
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "reference": ("reference", {}),
    "reference-dev": ("reference-dev", {}),
    # Today's platform (Pulumi.yaml's defaults): GPU operator v26.7.0, RAPIDS 26.10's image.
    "dev": ("dev", {}),
    "full": ("full", {}),
    "topology-b": ("reference", {"jupyterGpu": True, "gpuWorkers": 0}),
    "vsphere8-csi": ("reference", {"vsphereVersion": 8, "supervisorId": "sv-1",
                                   "clusterApi": "run.tanzu.vmware.com/v1alpha3", "tkr": TKR_FOR_V1ALPHA3,
                                   # without TLS, so not exposed (preview refuses that): port-forward only
                                   "daskTls": False, "schedulerServiceType": "ClusterIP",
                                   "jupyterServiceType": "ClusterIP",
                                   "rwxProvisioner": "vsphere-csi"}),
}

# Chart name in the program -> the pinned archives the tests render (one per version pinned).
CHART_ARTIFACTS = {
    "dask": (DASK_CHART,),
    "gpu-operator": (GPU_OPERATOR_CHART, GPU_OPERATOR_CHART_CURRENT),
    "nfs-subdir-external-provisioner": (NFS_PROVISIONER_CHART,),
    "dask-kubernetes-operator": (DASK_OPERATOR_CHART,),
}


def _pinned_version(chart: str, artifact: str) -> str:
    return Path(artifact).name.removeprefix(f"{chart}-").removesuffix(".tgz")


@dataclass(frozen=True)
class Release:
    name: str
    chart: str
    version: str
    namespace: str
    values: dict[str, Any]
    kube_version: str  # the Kubernetes of its stack's build (tests/kube/binaries.py)
    postrender: str | None = None

    def render(self, api_versions: tuple[str, ...] = (), values: dict[str, Any] | None = None) -> Rendered:
        """What Helm installs for this release: its chart, its (or these) values, its post-renderer,
        on its stack's Kubernetes."""
        return render(self.archive, self.name, self.namespace, self.values if values is None else values,
                      kube_version=self.kube_version, api_versions=api_versions, post_renderer=self.postrender)

    @property
    def archive(self) -> Path:
        artifacts = {_pinned_version(self.chart, a): a for a in CHART_ARTIFACTS[self.chart]}
        assert self.version in artifacts, (
            f"the program pins {self.chart} {self.version} but the tests render only {sorted(artifacts)}: pin the"
            " new chart in scripts/artifacts.toml and tests/artifacts.py")
        return artifact_path(artifacts[self.version])


def program_releases(variant: str, **extra_config: Any) -> dict[str, Release]:
    """chart name -> the release the program declares for ``variant`` (plus config overrides)."""
    stack, config = VARIANTS[variant]
    graph = run_program(stack, config={**config, **extra_config})
    assert graph.error is None, graph.traceback
    releases = {}
    for resource in graph.of_type("kubernetes:helm.sh/v3:Release"):
        inputs = resource.inputs
        # the release's chart is its pinned archive, verified (components/artifacts/charts.py)
        chart = Path(inputs["chart"]).name.removesuffix(f"-{inputs['version']}.tgz")
        releases[chart] = Release(name=inputs["name"], chart=chart, version=inputs["version"],
                                  namespace=inputs["namespace"], values=inputs.get("values") or {},
                                  kube_version=release_for_stack(stack, config).version,
                                  postrender=inputs.get("postrender") or None)
    return releases


def program_error(variant: str, **extra_config: Any) -> str | None:
    """The program's error text for ``variant`` with overrides (None when it runs)."""
    stack, config = VARIANTS[variant]
    graph = run_program(stack, config={**config, **extra_config})
    return None if graph.error is None else str(graph.error)
