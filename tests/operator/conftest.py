"""The real kube-apiserver 1.20 stand-in (tests/apiserver) for the operator tests, with the
pinned operator chart's CRDs installed."""
from __future__ import annotations

import pytest

from tests.apiserver.conftest import (  # noqa: F401 - fixtures and the build hooks, reused as they are
    kube_apiserver, kube_namespace, install_crd, pytest_collection_finish, pytest_collection_modifyitems)
from tests.operator.support import chart_crds


@pytest.fixture(scope="session")
def operator_crds(kube_apiserver) -> dict[str, dict]:
    """kind -> the operator's CRD as the server holds it (DaskCluster, DaskWorkerGroup, ...)."""
    return {crd["spec"]["names"]["kind"]: install_crd(kube_apiserver.api_client, crd) for crd in chart_crds()}
