"""The apiserver tests run against real Kubernetes API servers (etcd + kube-apiserver on 127.0.0.1,
no controllers): the current stacks' on 1.33, the paper's (the TanzuKubernetesCluster CRDs, the
reference stacks' objects) on 1.20. Their fixtures and build hooks, registered here by name, are in
:mod:`tests.kube.fixtures`; the helpers the tests call are in :mod:`tests.kube` (REST client in
:mod:`tests.kube.rest`, CRDs in :mod:`tests.kube.crds`, PKI in :mod:`tests.kube.pki`)."""
from __future__ import annotations

from tests.kube.fixtures import (  # noqa: F401 - fixtures and hooks, registered by name
    apiserver_for,
    capi_crds,
    kube_apiserver,
    kube_namespace,
    operator_crds,
    paper_apiserver,
    paper_namespace,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    tkc_crd,
)
