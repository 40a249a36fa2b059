"""The real-node tests' namespace teardown (tests/cluster/kube.py) against the current stacks'
real API server: a pod that goes on its own between the teardown's listing and its deletion (as a
Dask cluster's pods do while the runner deletes the cluster) must not keep the namespace's own
deletion from being sent. It once did: the 404 ended the sweep before the namespace's DELETE, the
namespace stayed Active, and every later module that used it found the earlier one's objects.

The bare server has no namespace controller, so a deleted namespace stays Terminating; the wait
times out and its message says what the controller would be asked to finish."""
from __future__ import annotations

import pytest

from tests.cluster import kube
from tests.kube.rest import api_request

pytestmark = pytest.mark.apiserver


def test_a_pod_gone_before_its_deletion_still_lets_the_namespace_be_deleted(kube_apiserver, kube_namespace,
                                                                             monkeypatch):
    api = kube_apiserver.api_client
    monkeypatch.setattr(kube, "pods", lambda _api, _namespace, selector=None: [{"metadata": {"name": "gone-already"}}])
    with pytest.raises(TimeoutError) as caught:
        kube.delete_namespace(api, kube_namespace, timeout_s=1)
    space = api_request(api, "GET", f"/api/v1/namespaces/{kube_namespace}")
    assert space["metadata"].get("deletionTimestamp") and space["status"]["phase"] == "Terminating", space
    assert f"namespace {kube_namespace} deleted: not after 1 s (phase Terminating;" in str(caught.value)


def test_every_namespace_is_deleted_even_when_one_before_it_times_out(kube_apiserver, kube_namespace,
                                                                       monkeypatch):
    api = kube_apiserver.api_client
    second = f"{kube_namespace}-2"
    api_request(api, "POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": second}})
    with pytest.raises(TimeoutError) as caught:
        kube.delete_namespaces(api, [kube_namespace, second], timeout_s=1)
    for name in (kube_namespace, second):
        assert api_request(api, "GET", f"/api/v1/namespaces/{name}")["status"]["phase"] == "Terminating", name
        assert f"{name}: namespace {name} deleted: not after 1 s" in str(caught.value)
