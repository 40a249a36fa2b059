"""The real kube-apiserver 1.20 stand-in (tests/apiserver) for the operator tests, with the
pinned operator chart's CRDs installed. The modules that use it carry the ``apiserver`` mark
themselves; the build hooks stay with tests/apiserver (imported once, not run twice)."""
from __future__ import annotations

import pytest

from tests.apiserver.conftest import install_crd, kube_apiserver, kube_namespace  # noqa: F401 - fixtures reused
from tests.operator.support import chart_crds


@pytest.fixture(scope="session")
def operator_crds(kube_apiserver) -> dict[str, dict]:  # noqa: F811 - the imported fixture
    """kind -> the operator's CRD as the server holds it (DaskCluster, DaskWorkerGroup, ...)."""
    return {crd["spec"]["names"]["kind"]: install_crd(kube_apiserver.api_client, crd) for crd in chart_crds()}
