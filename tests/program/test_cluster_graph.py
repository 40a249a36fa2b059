"""The cluster half of the graph under mocks: TKC, add-ons, Dask, and the stack outputs."""
from __future__ import annotations

from pathlib import Path

import pytest

from components.settings.model import POOL_ROLE_LABEL
from tests.program.graph import SECRETS, run_program, walk_strings
from workloads import contract


@pytest.fixture(scope="module")
def graph():
    g = run_program("reference")
    assert g.error is None, g.traceback
    return g


def dask_values(g) -> dict:
    return g.named("dask-release").inputs["values"]


def test_tkc_has_the_papers_topology(graph):
    (tkc,) = graph.of_type("TanzuKubernetesCluster")
    m = tkc.manifest()
    assert m["apiVersion"] == "run.tanzu.vmware.com/v1alpha2"
    topology = m["spec"]["topology"]
    assert topology["controlPlane"]["replicas"] == 3
    assert topology["controlPlane"]["vmClass"] == "best-effort-medium"
    pools = {p["name"]: p for p in topology["nodePools"]}
    assert (pools["gpu-worker"]["replicas"], pools["gpu-worker"]["vmClass"]) == (8, "16cpu-64gram-ts-20c-vmxnet3")
    assert pools["cpu-worker"]["replicas"] == 2
    for pool in pools.values():
        assert [(v["name"], v["mountPath"], v["capacity"]["storage"]) for v in pool["volumes"]] == [
            ("containerd", "/var/lib/containerd", "100Gi"), ("kubelet", "/var/lib/kubelet", "50Gi")]
        assert pool["tkr"]["reference"]["name"] == "v1.20.8---vmware.1-tkg.2"
    assert pools["gpu-worker"]["labels"] == {POOL_ROLE_LABEL: "gpu"}
    assert m["metadata"]["annotations"]["pulumi.com/waitFor"] == "jsonpath={.status.phase}=running"
    assert m["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == "1800"
    assert m["metadata"]["namespace"] == "dask"


def test_guest_provider_reads_the_kubeconfig_secret_after_the_tkc(graph):
    secret = graph.named("tkc-kubeconfig")
    assert secret.raw["read"] and secret.raw["id"] == "dask/tkg-dask-kubeconfig"
    (tkc,) = graph.of_type("TanzuKubernetesCluster")
    assert graph.depends_on(secret, tkc)
    guest = graph.named("guest")
    assert graph.depends_on(guest, secret)
    assert "__secret__" in str(guest.raw["inputs"]["kubeconfig"])


def test_dependency_chain(graph):
    ns = graph.of_type("dynamic/vsphere:SupervisorNamespace")[0]
    tkc = graph.of_type("TanzuKubernetesCluster")[0]
    guest = graph.named("guest")
    gpu_operator = graph.named("gpu-operator-release")
    dataset = graph.named("storage-dataset")
    pip_cache = graph.named("storage-pip-cache")
    job = graph.named("dataset-job")
    dask = graph.named("dask-release")
    assert graph.depends_on(tkc, ns)
    for addon in (gpu_operator, dataset, pip_cache, job, dask):
        assert graph.depends_on(addon, guest), addon.name
        assert graph.depends_on(addon, tkc), addon.name
    assert graph.depends_on(job, dataset)
    for prerequisite in (gpu_operator, dataset, pip_cache, job):
        assert graph.depends_on(dask, prerequisite), prerequisite.name


def test_gpu_operator_release(graph):
    release = graph.named("gpu-operator-release")
    inputs = release.inputs
    assert (Path(inputs["chart"]).name, inputs["version"], inputs["namespace"]) == (
        "gpu-operator-v1.9.1.tgz", "v1.9.1", "gpu-operator")
    driver = inputs["values"]["driver"]
    # the operator appends -ubuntu20.04
    assert driver["repository"] == "nvcr.io/nvaie" and driver["version"] == "470.63.01"
    assert driver["imagePullSecrets"] == ["ngc-secret"]
    # NLS: the token is mounted
    assert driver["licensingConfig"] == {"configMapName": "licensing-config", "nlsEnabled": True}
    assert "repositoryOpts" not in inputs  # the pinned archive: no repository, and no NGC key sent to one


def test_two_read_write_many_claims_and_the_dataset_one_survives_destroy(graph):
    claims = {c.manifest()["metadata"]["name"]: c for c in graph.of_type("kubernetes:core/v1:PersistentVolumeClaim")}
    assert set(claims) == {"external-nfs-pvc", "external-nfs-pip-cache-pvc"}
    for claim in claims.values():
        assert claim.manifest()["spec"]["accessModes"] == ["ReadWriteMany"]
        assert claim.manifest()["spec"]["storageClassName"] == "nfs-external"
    assert claims["external-nfs-pvc"].manifest()["spec"]["resources"]["requests"]["storage"] == "500Gi"
    assert claims["external-nfs-pvc"].raw["protect"] and claims["external-nfs-pvc"].raw["retain_on_delete"]


def test_dask_workers_get_one_gpu_each_and_mount_both_claims(graph):
    worker = dask_values(graph)["worker"]
    assert worker["replicas"] == 8
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert worker["resources"]["limits"]["cpu"] == "6" and worker["resources"]["limits"]["memory"] == "48Gi"
    assert worker["image"]["dask_worker"] == "dask-cuda-worker"
    claims = {v["persistentVolumeClaim"]["claimName"] for v in worker["mounts"]["volumes"]
              if "persistentVolumeClaim" in v}
    assert claims == {"external-nfs-pvc", "external-nfs-pip-cache-pvc"}
    mounts = {m["mountPath"] for m in worker["mounts"]["volumeMounts"]}
    # the paper's image runs as root: the pods run as non-root RUN_AS, with a home (and pip's cache) of its own
    assert {"/ml-share", "/home/dask", "/home/dask/.cache/pip", "/scratch"} <= mounts
    assert worker["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000}
    assert {"name": "scratch", "emptyDir": {}} in worker["mounts"]["volumes"]  # local disk, not NFS
    assert worker["nodeSelector"] == {POOL_ROLE_LABEL: "gpu"}


def test_scheduler_and_jupyter_run_on_non_gpu_nodes_with_one_image(graph):
    values = dask_values(graph)
    assert values["scheduler"]["nodeSelector"] == {POOL_ROLE_LABEL: "cpu"}
    assert values["jupyter"]["nodeSelector"] == {POOL_ROLE_LABEL: "cpu"}
    assert "nvidia.com/gpu" not in values["jupyter"]["resources"]["limits"]
    images = {(v["image"]["repository"], v["image"]["tag"]) for v in (values["scheduler"], values["worker"],
                                                                      values["jupyter"])}
    assert images == {("nvcr.io/nvidia/rapidsai/rapidsai", "21.10-cuda11.2-runtime-ubuntu20.04")}


def test_topology_b_gives_jupyter_a_gpu_and_seven_workers():
    g = run_program("reference", config={"jupyterGpu": True, "gpuWorkers": 0})
    assert g.error is None, g.traceback
    values = dask_values(g)
    assert values["worker"]["replicas"] == 7
    assert values["jupyter"]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert values["jupyter"]["nodeSelector"] == {POOL_ROLE_LABEL: "gpu"}
    assert g.outputs[contract.WORKERS] == 7


def test_script_pools_place_scheduler_and_jupyter_on_their_own_pools():
    g = run_program("reference", config={"gpuWorkers": 7, "nodePools": [
        "name=gpu-worker,role=gpu,replicas=7,vmClass=16cpu-64gram-ts-20c-vmxnet3,storageClass=vsan-r1-sw8",
        "name=scheduler,role=scheduler,replicas=1,vmClass=best-effort-2xlarge,storageClass=vsan-r5",
        "name=jupyter,role=jupyter,replicas=1,vmClass=best-effort-2xlarge,storageClass=vsan-r5"]})
    assert g.error is None, g.traceback
    values = dask_values(g)
    assert values["scheduler"]["nodeSelector"] == {POOL_ROLE_LABEL: "scheduler"}
    assert values["jupyter"]["nodeSelector"] == {POOL_ROLE_LABEL: "jupyter"}
    names = [p["name"] for p in g.of_type("TanzuKubernetesCluster")[0].manifest()["spec"]["topology"]["nodePools"]]
    assert names == ["gpu-worker", "scheduler", "jupyter"]


def test_outputs_the_runner_needs(graph):
    out = graph.outputs
    parsed = contract.parse_outputs({k: (v["__secret__"] if isinstance(v, dict) and "__secret__" in v else v)
                                     for k, v in out.items()})
    assert parsed.scheduler_address == "tls://dask-scheduler.rapidsai.svc.cluster.local:8786"
    assert parsed.workers == 8 and parsed.gpus_per_worker == 1 and parsed.namespace == "rapidsai"
    assert parsed.dataset_layout["dogs_images"] == "/ml-share/dogs/Images"
    assert parsed.dask_version == "2021.09.1"
    for key in contract.SECRET_OUTPUTS:
        assert isinstance(out[key], dict) and "__secret__" in out[key], key
    for key in set(out) - contract.SECRET_OUTPUTS:
        assert not (isinstance(out[key], dict) and "__secret__" in out[key]), key


def test_no_secret_value_appears_outside_a_secret(graph):
    values = [*list(SECRETS.values()), "mock-generated-password-0123456789"]
    for r in graph.resources:
        # Outputs a provider's schema marks secret (additionalSecretOutputs) are secret in
        # the real engine; the mock monitor returns them plain.
        state = {k: v for k, v in r.raw["state"].items() if k not in r.raw["additional_secret_outputs"]}
        for where, value in (("inputs", r.raw["inputs"]), ("state", state)):
            for text, secret in walk_strings(value):
                for hidden in values:
                    assert not (hidden in text and not secret), f"{r.name}.{where} shows a secret in the clear"
    for key, value in graph.outputs.items():
        for text, secret in walk_strings(value):
            assert not any(v in text for v in values) or secret, key


def test_the_papers_small_stack_is_the_same_graph_small():
    g = run_program("reference-dev")
    assert g.error is None, g.traceback
    tkc = g.of_type("TanzuKubernetesCluster")[0].manifest()
    assert tkc["spec"]["topology"]["controlPlane"]["replicas"] == 1
    assert {p["name"]: p["replicas"] for p in tkc["spec"]["topology"]["nodePools"]} == {"gpu-worker": 2,
                                                                                        "cpu-worker": 1}
    assert dask_values(g)["worker"]["replicas"] == 2
    ref = run_program("reference")
    # Same graph; only the reference exposes scheduler and Jupyter on LoadBalancers.
    assert {r.type for r in ref.resources} - {r.type for r in g.resources} == {"kubernetes:core/v1:Service"}
    assert {r.type for r in g.resources} <= {r.type for r in ref.resources}


def test_jupyter_password_is_generated_secret_and_hashed_for_the_chart(graph):
    from argon2 import PasswordHasher

    password = graph.outputs[contract.JUPYTER_PASSWORD]
    assert set(password) == {"__secret__"} and password["__secret__"] not in ("rapidsai", "dask", "")
    (generator,) = graph.of_type("random:index/randomPassword:RandomPassword")
    assert generator.inputs["length"] >= 16
    release = graph.named("dask-release")
    assert "__secret__" in json_dumps(release.raw["inputs"]["values"])  # the hash travels as a secret
    chart_hash = dask_values(graph)["jupyter"]["password"]
    assert chart_hash.startswith("argon2:")
    assert PasswordHasher().verify(chart_hash.removeprefix("argon2:"), password["__secret__"])


def test_with_tls_on_the_scheduler_address_is_tls(graph):
    assert graph.outputs[contract.SCHEDULER_ADDRESS].startswith("tls://")
    # without TLS the scheduler and Jupyter are not exposed (preview refuses that)
    g = run_program("reference", config={"daskTls": False, "schedulerServiceType": "ClusterIP",
                                         "jupyterServiceType": "ClusterIP"})
    assert g.error is None, g.error
    assert g.outputs[contract.SCHEDULER_ADDRESS].startswith("tcp://")
    assert not g.of_type("tls:index/privateKey:PrivateKey")


def json_dumps(value) -> str:
    import json

    return json.dumps(value)


def test_licence_token_goes_to_a_secret_with_a_current_operator():
    g = run_program("reference", config={"gpuOperatorVersion": "v26.7.0", "licenseTokenInConfigMap": False})
    assert g.error is None, g.traceback
    licensing = g.named("gpu-operator-licensing")
    assert licensing.type == "kubernetes:core/v1:Secret"
    for config_map in g.of_type("kubernetes:core/v1:ConfigMap"):
        assert SECRETS["vgpuLicenseToken"] not in json_dumps(config_map.inputs), config_map.name
