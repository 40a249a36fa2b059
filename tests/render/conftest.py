"""Fixtures of the render tests: the API servers (the same fixtures and build hooks as
``tests/apiserver``: the current stacks' 1.33, the paper's 1.20) and the Helm engine with a
server's capabilities."""
from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.kube.apiserver import KubeAPIServer
from tests.kube.fixtures import (  # noqa: F401 - fixtures and hooks, registered by name
    apiserver_for,
    kube_apiserver,
    paper_apiserver,
    pytest_collection_finish,
    pytest_collection_modifyitems,
)
from tests.render.cluster import api_versions
from tests.render.helm import helm_binary


@pytest.fixture(scope="session")
def helm() -> str:
    """The pinned Helm binary; a missing or wrong one fails the test with what to run."""
    try:
        return str(helm_binary())
    except (FileNotFoundError, RuntimeError) as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def capabilities_of() -> Callable[[KubeAPIServer], tuple[str, ...]]:
    """``capabilities_of(server)``: the API versions and kinds that server serves (Helm's
    ``--api-versions``), asked once per server."""
    asked: dict[str, tuple[str, ...]] = {}

    def of(server: KubeAPIServer) -> tuple[str, ...]:
        if server.url not in asked:
            asked[server.url] = api_versions(server.api_client)
        return asked[server.url]

    return of


@pytest.fixture(scope="session")
def capabilities(paper_apiserver, capabilities_of) -> tuple[str, ...]:
    """The paper's server's capabilities (the reference stacks' charts render against them)."""
    return capabilities_of(paper_apiserver)
