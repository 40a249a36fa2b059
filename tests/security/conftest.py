"""The current stacks' real API server (tests/apiserver's fixture and build hooks) for the
admission tests of this folder (test_pss_admission.py)."""
from __future__ import annotations

from tests.kube.fixtures import (  # noqa: F401 - fixtures and hooks, registered by name
    kube_apiserver,
    pytest_collection_finish,
    pytest_collection_modifyitems,
)
