"""Deploy safety: what must survive survives, replacements are known before they happen,
and the program is deterministic."""
from __future__ import annotations

import json

import pytest

from components.settings.schema import project
from tests.program.graph import _run, run_program

# pulumi-kubernetes replaces an object when its identity changes (apiVersion/kind,
# namespace, name); a changed kubeconfig cluster replaces the provider and so every object
# it manages. Other changes are in-place updates (for a TKC: a rolling update).
REPLACING = {
    "clusterName": "tkg-dask-2",
    "namespaceName": "dask-2",
    "clusterApi": "run.tanzu.vmware.com/v1alpha3",
    "supervisorServer": "192.168.105.9",
}
IN_PLACE = {
    "gpuWorkers": 6,
    "tkr": "v1.21.6---vmware.1-tkg.1",
    "controlPlaneReplicas": 1,
    "workerMemory": "40Gi",
}


def tkc_identity(graph) -> tuple:
    tkc = graph.of_type("TanzuKubernetesCluster")[0].manifest()
    return tkc["apiVersion"], tkc["kind"], tkc["metadata"]["namespace"], tkc["metadata"]["name"]


def supervisor_endpoint(graph, config) -> str:
    # The program logs in at supervisorServer unless a kubeconfig is configured; the
    # endpoint is what the Supervisor provider talks to.
    return config.get("supervisorServer", "192.168.105.2")


def variant(config):
    # v1alpha3 runs on vSphere 8 with a TKR of Kubernetes 1.21 or newer (settings refuse a 1.20 one).
    extra = ({"vsphereVersion": 8, "supervisorId": "sv-1", "tkr": "v1.21.6---vmware.1-tkg.1"}
             if config.get("clusterApi", "").endswith("v1alpha3") else {})
    return run_program("reference", config={**config, **extra})


def test_the_docs_name_exactly_the_replacing_settings():
    _, decls = project()
    documented = {k for k, d in decls.items() if "Replaces the cluster" in d.description}
    assert documented == set(REPLACING)


@pytest.mark.parametrize("key", sorted(REPLACING))
def test_a_replacing_setting_changes_the_clusters_identity(key):
    base = run_program("reference")
    changed = variant({key: REPLACING[key]})
    assert changed.error is None, changed.traceback
    if key == "supervisorServer":
        assert supervisor_endpoint(changed, {key: REPLACING[key]}) != supervisor_endpoint(base, {})
    else:
        assert tkc_identity(changed) != tkc_identity(base), f"{key} would not replace the cluster"


@pytest.mark.parametrize("key", sorted(IN_PLACE))
def test_other_settings_update_the_cluster_in_place(key):
    base = run_program("reference")
    changed = variant({key: IN_PLACE[key]})
    assert changed.error is None, changed.traceback
    assert tkc_identity(changed) == tkc_identity(base)
    tkc = "TanzuKubernetesCluster"
    assert changed.of_type(tkc)[0].manifest() != base.of_type(tkc)[0].manifest() \
        or key in ("gpuWorkers", "workerMemory")


def test_data_survives_destroy_and_replacement():
    graph = run_program("reference")
    claim = graph.named("storage-dataset")
    share = graph.of_type("dynamic/vsphere:VsanFileShare")[0]
    for protected in (claim, share):
        assert protected.raw["protect"], protected.name  # destroy/replace stop with an error
        assert protected.raw["retain_on_delete"], protected.name  # and never delete the data
    # Deleting the claim by hand keeps the volume: the StorageClass retains it.
    provisioner = graph.named("storage-provisioner")
    assert provisioner.inputs["values"]["storageClass"]["reclaimPolicy"] == "Retain"


def test_two_runs_give_identical_inputs():
    spec = json.dumps({"stack": "reference", "config": {}, "secrets": {"vsphere:password": "p", "ngcApiKey": "k",
                                                                         "vgpuLicenseToken": "t",
                                                                         "supervisorKubeconfig": "x"}, "mock": {}})
    first = json.loads(_run.__wrapped__(spec))
    second = json.loads(_run.__wrapped__(spec))
    assert first["error"] is None
    key = lambda r: r["urn"]  # noqa: E731
    # Dependencies are a set (the SDK gathers them concurrently): compare them sorted.
    strip = lambda rs: [{**{k: r[k] for k in ("urn", "inputs", "parent", "protect")},  # noqa: E731
                         "dependencies": sorted(r["dependencies"])} for r in sorted(rs, key=key)]
    assert strip(first["resources"]) == strip(second["resources"])
    assert first["outputs"] == second["outputs"]
