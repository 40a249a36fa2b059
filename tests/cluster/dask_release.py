"""The program's Dask release (the Helm backend) deployed on the real node, as a module fixture
(tests/paper_cluster/test_dask_release.py says what differs from the program's output, and why),
with the data server its data Job fetches from and the stack outputs the runner is given.

Which stack's release: the module's ``release_stack`` fixture, ``(stack, config)``: the paper's
``reference`` on the paper's 1.20 cluster (tests/paper_cluster), a current stack with
``daskBackend=helm`` on the current stacks' 1.33 cluster (tests/cluster/test_port_forward.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from distributed.security import Security

from components.dask.runner_access import TOKEN_TYPE
from components.dask.values import service_names
from tests.apiserver.runner_identity import deploy_runner_identity
from tests.artifacts import DASK_CHART, artifact_path
from tests.cluster import data_job, helm
from tests.cluster.kube import (
    bind_stand_in_pod_security,
    delete_namespace,
    delete_volumes,
    install_tkg_pod_security,
    wait_running,
)
from tests.cluster.pki import dask_tls_material
from tests.cluster.program import DeclaredStack, declared_stack, stack_settings
from tests.cluster.support import RELEASE_WORKERS as WORKERS
from tests.cluster.support import apply_guest_half, read_only_claims, runtime_differences, shared_volume_stand_ins
from tests.kube.rest import api_request, apply_manifest


class Release:
    def __init__(self, stack: DeclaredStack, tls_dir: Path, service_ips: dict[str, str], share: Path,
                 runner_kubeconfig: str):
        self.stack, self.namespace, self.tls_dir = stack, stack.dask_namespace, tls_dir
        self.scheduler_ip, self.jupyter_ip = service_ips["dask-scheduler"], service_ips["dask-jupyter"]
        self.share, self.program_outputs = share, stack.outputs
        # the program's runnerKubeconfig, on the token this cluster's token controller issued
        self.runner_kubeconfig = runner_kubeconfig

    @property
    def address(self) -> str:
        return f"tls://{self.scheduler_ip}:8786"

    def security(self) -> Security:
        d = self.tls_dir
        return Security(tls_ca_file=str(d / "ca.crt"), tls_client_cert=str(d / "client.crt"),
                        tls_client_key=str(d / "client.key"), require_encryption=True)


@pytest.fixture(scope="module")
def data_server(kube_cluster, release_stack, tmp_path_factory):
    stack, config = release_stack
    served = data_job.serve(kube_cluster.net, tmp_path_factory.mktemp("data-server"),
                            stack_settings(stack, config).data)
    yield served
    served.server.stop()


def service_ips(api, namespace: str, names: tuple[str, ...]) -> dict[str, str]:
    return {name: api_request(api, "GET", f"/api/v1/namespaces/{namespace}/services/{name}")["spec"]["clusterIP"]
            for name in names}


@pytest.fixture(scope="module")
def dask_release(kube_cluster, release_stack, data_server, tmp_path_factory):
    api = kube_cluster.api_client
    name, config = release_stack
    stack = declared_stack(name, {**config, **data_server.config()})
    ns = stack.dask_namespace
    tmp = tmp_path_factory.mktemp("dask-release")
    volumes = shared_volume_stand_ins(stack, tmp / "share")
    differences = runtime_differences(kube_cluster)
    install_tkg_pod_security(api)
    try:
        for volume in volumes:
            apply_manifest(api, volume)
        apply_guest_half(api, stack, kinds=("Namespace", "RoleBinding", "ConfigMap", "PersistentVolumeClaim"))
        runner_kubeconfig = deploy_runner_identity(api, stack.objects, ns, kube_cluster.kubeconfig,
                                                   kinds=("ServiceAccount", "Role", "Secret"))
        bind_stand_in_pod_security(api, ns, [m["host"] for m in differences["mounts"]])
        volumes += read_only_claims(api, ns, differences["mounts"])
        # the scheduler's certificate names its Service's fixed ClusterIP too: what the tests dial
        tls = dask_tls_material(tmp / "tls", [*service_names("dask-scheduler", ns), differences["scheduler_ip"]],
                                service_names("dask-jupyter", ns))
        for secret in (o for o in stack.objects if o["kind"] == "Secret" and o["metadata"].get("namespace") == ns
                       and o.get("type") != TOKEN_TYPE):  # the runner's token: applied above
            applied = secret
            if secret["metadata"]["name"] == "dask-tls":
                assert set(secret["stringData"]) == set(tls), "the program's TLS Secret has other keys"
                applied = {**secret, "stringData": tls}
            apply_manifest(api, applied)
        helm.install(kube_cluster, "dask", artifact_path(DASK_CHART), ns, stack.dask_release["values"],
                     differences=differences)
        wait_running(api, ns, "component=scheduler", 1, timeout_s=180)
        wait_running(api, ns, "component=worker", WORKERS, timeout_s=180)
        wait_running(api, ns, "component=jupyter", 1, timeout_s=120)
        dataset_claim = stack.dask_release["values"]["worker"]["mounts"]["volumes"][0]["persistentVolumeClaim"]
        yield Release(stack, tmp / "tls", service_ips(api, ns, ("dask-scheduler", "dask-jupyter")),
                      tmp / "share" / dataset_claim["claimName"], runner_kubeconfig)
    finally:
        delete_namespace(api, ns, timeout_s=120)
        delete_volumes(api, volumes)


def stack_outputs(release: Release) -> dict:
    """``pulumi stack output --json --show-secrets`` of the program's run, with the differences
    this cluster needs: the scheduler by its Service's ClusterIP (the program's address is the
    in-cluster DNS name; the host reaches the Service through its route onto the cluster
    network), the real TLS material, the runner's kubeconfig on the token this cluster issued
    for the program's ServiceAccount (not the admin's), and the stand-in's workers, image and
    Dask version."""
    import distributed

    def plain(value):
        return value["__secret__"] if isinstance(value, dict) and "__secret__" in value else value

    outputs = {k: plain(v) for k, v in release.program_outputs.items()}
    tls = release.tls_dir
    outputs.update({"schedulerAddress": release.address, "dashboardUrl": f"https://{release.scheduler_ip}:8787",
                    "tlsCaCert": (tls / "ca.crt").read_text(), "tlsClientCert": (tls / "client.crt").read_text(),
                    "tlsClientKey": (tls / "client.key").read_text(), "workerCount": WORKERS,
                    "runnerKubeconfig": release.runner_kubeconfig,
                    "gpusPerWorker": 0, "threadsPerWorker": 1, "daskVersion": distributed.__version__})
    return outputs
