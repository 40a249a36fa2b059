"""Fixtures of the render tests: the Kubernetes 1.20 stand-in (the same fixture and build
hooks as ``tests/apiserver``) and the Helm engine with that server's capabilities."""
from __future__ import annotations

import pytest

from tests.kube.fixtures import (  # noqa: F401 - fixtures and hooks, registered by name
    kube_apiserver,
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
def capabilities(kube_apiserver) -> tuple[str, ...]:
    """The API versions and kinds the 1.20 stand-in serves (Helm's ``--api-versions``)."""
    return api_versions(kube_apiserver.api_client)
