"""Graphs of the real program (under mocks, cached per configuration) and the stack
config a policy pack process gets from the CLI."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.program.graph import Graph, run_program

# The program's own ways to the cases the policies guard (it validates settings first, so
# a public LoadBalancer needs the stack's opt-in to be built at all).
PUBLIC_LB = {"schedulerServiceType": "LoadBalancer", "jupyterServiceType": "LoadBalancer",
             "loadBalancerSourceRanges": [], "allowPublicLoadBalancer": True}
TOPOLOGY_B = {"jupyterGpu": True, "gpuWorkers": 7}
VSPHERE_8 = {"vsphereVersion": 8, "supervisorId": "supervisor-1", "clusterApi": "run.tanzu.vmware.com/v1alpha3",
             "tkr": "v1.21.6---vmware.1-tkg.1"}  # v1alpha3 refuses the 1.20 TKRs


def _graph(stack: str, config: dict[str, Any] | None = None) -> Graph:
    graph = run_program(stack, config=config)
    assert graph.error is None, graph.traceback
    return graph


@pytest.fixture(scope="session")
def reference() -> Graph:
    return _graph("reference")


@pytest.fixture(scope="session")
def public_lb() -> Graph:
    return _graph("reference", PUBLIC_LB)


@pytest.fixture(scope="session")
def topology_b() -> Graph:
    return _graph("reference", TOPOLOGY_B)


@pytest.fixture(scope="session")
def vsphere8() -> Graph:
    return _graph("reference", VSPHERE_8)


@pytest.fixture(scope="session")
def reference_dev() -> Graph:
    return _graph("reference-dev")


@pytest.fixture(scope="session")
def dev() -> Graph:
    """The current platform's small stack (Pulumi.dev.yaml)."""
    return _graph("dev")


@pytest.fixture(scope="session")
def full() -> Graph:
    """The paper's topology on the current platform (Pulumi.full.yaml)."""
    return _graph("full")


@pytest.fixture(autouse=True)
def no_stack_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """No stack config unless a test gives some: the developer's environment must not leak in."""
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)


@pytest.fixture
def stack_config(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Set the stack's settings the way the CLI hands them to a policy pack: the
    ``PULUMI_CONFIG`` environment, a JSON map of ``project:key`` to string values."""

    def set_config(**settings: Any) -> None:
        values = {f"dask-tkg:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in settings.items()}
        monkeypatch.setenv("PULUMI_CONFIG", json.dumps(values))

    return set_config
