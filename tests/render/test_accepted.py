"""Every object the pinned charts render, with the values the program builds for each stack
variant, is accepted by the API server of that variant's Kubernetes (the paper's variants on 1.20,
dev and full on 1.33), rendered with that server's capabilities; a wrong value is not."""
from __future__ import annotations

import pytest

from tests.kube.rest import KubeApiError
from tests.render.cluster import submit
from tests.render.program import VARIANTS, program_releases

pytestmark = pytest.mark.apiserver

# What each variant installs: the vSphere CSI variant has no NFS provisioner release.
EXPECTED_CHARTS = {
    "reference": {"dask", "gpu-operator", "nfs-subdir-external-provisioner"},
    "reference-dev": {"dask", "gpu-operator", "nfs-subdir-external-provisioner"},
    # the operator backend: the operator's chart, and the dask chart for Jupyter alone
    "dev": {"dask", "dask-kubernetes-operator", "gpu-operator", "nfs-subdir-external-provisioner"},
    "full": {"dask", "dask-kubernetes-operator", "gpu-operator", "nfs-subdir-external-provisioner"},
    "topology-b": {"dask", "gpu-operator", "nfs-subdir-external-provisioner"},
    "vsphere8-csi": {"dask", "gpu-operator"},
}
# Objects each chart must render (a chart that silently renders less is a failure too).
EXPECTED_OBJECTS = {
    "dask": {"Deployment/dask-scheduler", "Deployment/dask-worker", "Deployment/dask-jupyter",
             "Service/dask-scheduler", "Service/dask-jupyter", "ConfigMap/dask-jupyter-config"},
    "gpu-operator": {"CustomResourceDefinition/clusterpolicies.nvidia.com", "ClusterPolicy/cluster-policy",
                     "Deployment/gpu-operator", "DaemonSet/gpu-operator-node-feature-discovery-worker"},
    "nfs-subdir-external-provisioner": {"Deployment/nfs-subdir-external-provisioner", "StorageClass/nfs-external"},
    "dask-kubernetes-operator": {"Deployment/dask-kubernetes-operator",
                                 "CustomResourceDefinition/daskclusters.kubernetes.dask.org"},
}
# Beside the operator, the dask chart runs Jupyter alone (components/dask/operator_cluster.py).
JUPYTER_ONLY = {"Deployment/dask-jupyter", "Service/dask-jupyter", "ConfigMap/dask-jupyter-config"}


def expected_objects(chart: str, releases: dict) -> set[str]:
    if chart == "dask" and "dask-kubernetes-operator" in releases:
        return JUPYTER_ONLY
    return EXPECTED_OBJECTS[chart]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_rendered_object_is_accepted(apiserver_for, helm, capabilities_of, variant):
    server = apiserver_for(*VARIANTS[variant])
    api = server.api_client
    releases = program_releases(variant)
    assert set(releases) == EXPECTED_CHARTS[variant]
    for chart, release in releases.items():
        rendered = release.render(capabilities_of(server))
        assert expected_objects(chart, releases) <= set(rendered.kinds()), rendered.kinds()
        try:
            accepted = submit(api, rendered.objects, release.namespace)
        except KubeApiError as exc:
            pytest.fail(f"{variant}: {chart} {release.version}: the server refused {exc.path}: {exc.message}")
        assert sorted(accepted) == rendered.kinds()


def test_a_string_where_the_template_needs_an_int_is_rejected(paper_apiserver, helm, capabilities):
    """The dask chart writes ``replicas: {{ .Values.worker.replicas }}`` unquoted: a string
    renders, and the server refuses it, naming the field."""
    release = program_releases("reference-dev")["dask"]
    values = {**release.values, "worker": {**release.values["worker"], "replicas": "two"}}
    rendered = release.render(capabilities, values)
    worker = rendered.named("Deployment", "dask-worker")
    with pytest.raises(KubeApiError) as refused:
        submit(paper_apiserver.api_client, [worker], release.namespace)
    assert refused.value.status in (400, 422)
    assert "replicas" in refused.value.message


def test_an_nfs_export_without_a_server_is_rejected(paper_apiserver, helm, capabilities):
    """The nfs chart renders an empty ``server:`` without complaint; the server refuses the
    provisioner's root PersistentVolume, naming the field."""
    release = program_releases("reference-dev")["nfs-subdir-external-provisioner"]
    values = {**release.values, "nfs": {**release.values["nfs"], "server": None}}
    rendered = release.render(capabilities, values)
    volume = rendered.of_kind("PersistentVolume")
    assert len(volume) == 1
    with pytest.raises(KubeApiError) as refused:
        submit(paper_apiserver.api_client, volume, release.namespace)
    assert refused.value.status == 422
    assert "spec.nfs.server" in refused.value.message
