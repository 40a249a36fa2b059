"""A person's DaskCluster from the stack's ``teamClusterSpec`` (workloads/cluster/own_spec.py)
and its TLS material (workloads/cluster/own_tls.py), with no cluster: names, workers, idle
timeout, TLS as the stack's pods have it, each certificate's uses, and the scheduler's name
checked by a client over a real TLS handshake."""
from __future__ import annotations

import copy
import socket
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from components.dask import podspec
from components.dask.team.cluster_spec import team_cluster_spec
from tests.operator.support import operator_settings
from workloads import contract
from workloads.cluster import own_spec, own_tls, quota


def team_spec() -> dict:
    """``teamClusterSpec`` as the program exports it (components/dask/team/cluster_spec.py)."""
    return team_cluster_spec(operator_settings(), environment_subdir=None)


def build(**overrides) -> dict:
    arguments = {"name": "alice-run", "namespace": "dask-alice", "workers": 2, "idle_timeout": 1800,
                 "secret": "dask-tls-alice-run", **overrides}
    return own_spec.build(team_spec(), **arguments)


def test_the_cluster_is_named_sized_and_reclaimed_when_idle():
    cluster = build()
    assert cluster["apiVersion"] == "kubernetes.dask.org/v1" and cluster["kind"] == "DaskCluster"
    assert (cluster["metadata"]["name"], cluster["metadata"]["namespace"]) == ("alice-run", "dask-alice")
    spec = cluster["spec"]
    assert (spec["idleTimeout"], spec["worker"]["replicas"]) == (1800, 2)
    assert spec["scheduler"]["service"]["selector"] == {"dask.org/cluster-name": "alice-run",
                                                        "dask.org/component": "scheduler"}
    assert "tcp://" not in str(cluster)
    given = team_spec()
    before = copy.deepcopy(given)
    own_spec.build(given, name="b", namespace="dask-bob", workers=1, idle_timeout=0, secret="s")
    assert given == before  # the stack's spec is left as it was


def test_the_scheduler_listens_on_tls_and_the_workers_dial_it_by_its_service_name():
    spec = build()["spec"]
    (scheduler,) = spec["scheduler"]["spec"]["containers"]
    assert scheduler["args"][-2:] == ["--protocol", "tls"]
    (worker,) = spec["worker"]["spec"]["containers"]
    address = "tls://alice-run-scheduler.dask-alice.svc.cluster.local:8786"
    assert worker["args"][:2] == ["dask-cuda-worker", address], worker["args"]
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert env["DASK_SCHEDULER_ADDRESS"] == address


def test_the_tls_files_and_variables_are_the_stacks_own_per_role():
    spec = build()["spec"]
    for role, part in (("scheduler", spec["scheduler"]), ("worker", spec["worker"])):
        pod = part["spec"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == contract.TLS_VOLUME]
        assert volume == contract.tls_volume(role, "dask-tls-alice-run")
        for container in pod["containers"]:
            assert contract.TLS_MOUNT in container["volumeMounts"]
            tls_env = [e for e in container["env"] if e["name"] in {x["name"] for x in podspec.tls_env(role, "s")}]
            assert tls_env == podspec.tls_env(role, "dask-tls-alice-run"), role


def test_worker_arguments_without_an_address_get_one_before_the_options():
    address = "tls://x-scheduler.ns.svc.cluster.local:8786"
    assert own_spec.with_scheduler_address(["dask", "worker", "--nthreads", "1"], address) == [
        "dask", "worker", address, "--nthreads", "1"]
    assert own_spec.with_scheduler_address(["dask-cuda-worker", "tcp://a:8786", "--name", "n"], address) == [
        "dask-cuda-worker", address, "--name", "n"]
    assert own_spec.with_tls_protocol(["dask", "scheduler", "--protocol=tcp"]) == ["dask", "scheduler",
                                                                                   "--protocol=tls"]


def test_the_spec_s_gpus_are_what_the_quota_counts():
    cluster = build(workers=3)
    assert quota.gpus_per_worker(cluster) == operator_settings().dask.workers.gpus
    assert quota.cluster_charges(cluster, 3)["requests.nvidia.com/gpu"] == 3 * quota.gpus_per_worker(cluster)


def uses(pem: str) -> set:
    cert = x509.load_pem_x509_certificate(pem.encode())
    try:
        return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)
    except x509.ExtensionNotFound:
        return set()


def test_each_role_s_certificate_does_only_what_the_role_does():
    pems = own_tls.issue(own_spec.scheduler_names("alice-run", "dask-alice"))
    assert set(pems) == {"ca.crt", *(f"{r}.{e}" for r in ("scheduler", "worker", "client") for e in ("crt", "key"))}
    server, client = ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH
    assert (uses(pems["scheduler.crt"]), uses(pems["worker.crt"]), uses(pems["client.crt"])) == (
        {server, client}, {server, client}, {client})
    names = x509.load_pem_x509_certificate(pems["scheduler.crt"].encode()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert names == own_spec.scheduler_names("alice-run", "dask-alice")
    ca = x509.load_pem_x509_certificate(pems["ca.crt"].encode())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    secret = own_tls.secret("dask-tls-alice-run", "dask-alice", pems, owner={"kind": "DaskCluster", "uid": "u"})
    assert secret["metadata"]["ownerReferences"] == [{"kind": "DaskCluster", "uid": "u"}]
    assert set(secret["stringData"]) == set(pems) and "ca.key" not in secret["stringData"]


def handshake(pems: dict, tmp_path, server_role: str, name: str, client_role: str = "client") -> None:
    """One TLS handshake: a server with ``server_role``'s certificate asking for a client
    certificate, a client with ``client_role``'s checking the server's name is ``name``."""
    for key, text in pems.items():
        (tmp_path / key).write_text(text)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(tmp_path / f"{server_role}.crt", tmp_path / f"{server_role}.key")
    served.load_verify_locations(tmp_path / "ca.crt")
    served.verify_mode = ssl.CERT_REQUIRED
    dialling = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname on
    dialling.load_verify_locations(tmp_path / "ca.crt")
    dialling.load_cert_chain(tmp_path / f"{client_role}.crt", tmp_path / f"{client_role}.key")
    listener = socket.create_server(("127.0.0.1", 0))
    errors = []

    def serve():
        conn, _ = listener.accept()
        try:
            served.wrap_socket(conn, server_side=True).close()
        except (ssl.SSLError, OSError) as exc:
            errors.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with socket.create_connection(listener.getsockname()) as raw:
            dialling.wrap_socket(raw, server_hostname=name).close()
    finally:
        thread.join(10)
        listener.close()


def test_the_client_reaches_the_scheduler_by_name_and_a_worker_s_key_cannot_pass_for_it(tmp_path):
    pems = own_tls.issue(own_spec.scheduler_names("alice-run", "dask-alice"))
    handshake(pems, tmp_path, "scheduler", "alice-run-scheduler.dask-alice.svc.cluster.local")
    with pytest.raises(ssl.SSLCertVerificationError, match="match"):
        handshake(pems, tmp_path, "worker", "alice-run-scheduler.dask-alice.svc.cluster.local")
    other = own_tls.issue(own_spec.scheduler_names("alice-run", "dask-alice"))
    with pytest.raises(ssl.SSLCertVerificationError):  # another run's CA certifies nothing here
        handshake({**pems, "ca.crt": other["ca.crt"]}, tmp_path, "scheduler", "alice-run-scheduler")
