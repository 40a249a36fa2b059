"""Mutual TLS for Dask, for real on a local cluster: certificates shaped like the ones the
program issues (ECDSA P-256, one private CA, scheduler/worker/client pairs, each with its
role's extended key usage, components/dask/tls.py ``allowed_uses``, and names only on the
scheduler's), a client with the client certificate computes; a client without one, or with
a foreign CA's, is refused by the scheduler with the TLS alert that says why (and the
scheduler logs the reason); a client trusting another CA refuses the scheduler's
certificate; the runner's client refuses a scheduler whose certificate does not name the
host it dials or, through a port-forward, the host the outputs give (a worker's key posing as
the scheduler); a client's key cannot serve at all, even to a peer that checks no names (a
worker); and the environment variables the Helm values set are the ones Dask reads."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from distributed import Client, LocalCluster, Scheduler
from distributed.comm import connect
from distributed.comm.core import CommClosedError
from distributed.security import Security

from tests.security.dask_pki import SCHEDULER_NAME, issue_pki
from workloads.cluster import endpoint, port_forward
from workloads.cluster.endpoint import security_from_pems
from workloads.cluster.session import ClusterSession
from workloads.contract import TLS_KEYS, StackOutputs
from workloads.core.errors import EndpointError


def assert_no_io_loop_left(before: set[threading.Thread]) -> None:
    """No IO-loop thread of a Dask client (distributed names each ``LoopRunner`` thread "IO
    loop") started since ``before`` still runs. A client whose constructor raised keeps its
    thread, and one left "connecting" is garbage whose ``__del__`` closes it whenever the
    collector runs: on a thread holding distributed's class-wide ``LoopRunner._lock`` (as
    starting any client does) it waits for that lock forever. A test here once hung so until
    pytest-timeout's 900 s, whose exception ``__del__`` swallows, and then passed."""
    left = [t for t in threading.enumerate() if t not in before and t.name == "IO loop"]
    for thread in left:
        thread.join(timeout=30)  # a client closed by now stops its loop; a busy machine may lag
    assert not [t for t in left if t.is_alive()], f"a Dask client's IO loop still runs: {left}"


@pytest.fixture(autouse=True)
def no_io_loop_left():
    before = set(threading.enumerate())
    yield
    assert_no_io_loop_left(before)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return issue_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_cluster(pki):
    # PEM contents, not paths: what the pods get from the Secret through env variables.
    security = Security(tls_ca_file=pki["ca.crt"], tls_scheduler_cert=pki["scheduler.crt"],
                        tls_scheduler_key=pki["scheduler.key"], tls_worker_cert=pki["worker.crt"],
                        tls_worker_key=pki["worker.key"], tls_client_cert=pki["client.crt"],
                        tls_client_key=pki["client.key"], require_encryption=True)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, protocol="tls://", host="127.0.0.1",
                      security=security, dashboard_address=":0") as cluster:
        yield cluster


def test_scheduler_listens_on_tls(tls_cluster):
    assert tls_cluster.scheduler_address.startswith("tls://")


def test_client_with_the_outputs_certificate_computes(tls_cluster, pki, tmp_path):
    security = security_from_pems(pki["ca.crt"], pki["client.crt"], pki["client.key"])
    with Client(tls_cluster.scheduler_address, security=security, timeout=30) as client:
        assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6
    for pem in tmp_path.iterdir():
        assert pem.stat().st_mode & 0o077 == 0, f"{pem.name} is readable by others"


class HandshakeLog(logging.Handler):
    """The scheduler's own account of refused handshakes (it runs in this process):
    distributed 2026.7 ``comm/tcp.py`` logs ``TLS handshake failed with remote ...: <reason>``."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def refused(self, reason: str, timeout: float = 10) -> bool:
        """Whether the scheduler logged a handshake refused for ``reason`` (it logs from
        its own event loop, possibly after the client already read the alert)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any("TLS handshake failed" in m and reason in m for m in self.messages):
                return True
            time.sleep(0.05)
        return False


@pytest.fixture
def handshake_log():
    handler, logger = HandshakeLog(), logging.getLogger("distributed.comm.tcp")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


def tls_exchange(address: str, ca_file: str, cert: str | None = None, key: str | None = None) -> None:
    """A TLS client that trusts ``ca_file`` (so the scheduler's certificate is accepted)
    and presents ``cert`` (or none), then reads: with TLS 1.3 the server's
    verdict on the client's certificate arrives as an alert on the first read (RFC 8446
    4.4.2.4: ``certificate_required`` when none was sent; 6.2: ``unknown_ca``)."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    context.check_hostname = False  # the scheduler's SAN is checked by Dask's own test above
    if cert:
        context.load_cert_chain(cert, key)
    with socket.create_connection((host, int(port)), timeout=10) as raw, context.wrap_socket(raw) as tls:
        assert tls.version() == "TLSv1.3"
        tls.recv(8)  # nothing sent: data after the server's close could make it reset the alert away


def pem_files(pems: dict[str, str], folder: Path, *names: str) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(pems[name])
    return [str(folder / name) for name in names]


def test_client_without_a_certificate_is_refused(tls_cluster, pki, tmp_path, handshake_log):
    (ca,) = pem_files(pki, tmp_path, "ca.crt")
    with pytest.raises(ssl.SSLError) as refused:
        tls_exchange(tls_cluster.scheduler_address, ca)
    assert refused.value.reason == "TLSV13_ALERT_CERTIFICATE_REQUIRED"
    assert handshake_log.refused("PEER_DID_NOT_RETURN_A_CERTIFICATE"), handshake_log.messages


def test_a_dask_client_without_tls_settings_cannot_even_try(tls_cluster):
    before = set(threading.enumerate())
    with pytest.raises(TypeError, match=r"TLS expects a `ssl_context` argument of type ssl.SSLContext") as raised:
        endpoint.open_client(tls_cluster.scheduler_address, timeout=30)  # distributed's Client, which raises
    # The client whose constructor raised, kept by the traceback's frames: closed all the same, its IO loop stopped.
    failed = [entry.frame.f_locals["self"] for entry in raised.traceback
              if entry.name == "__init__" and isinstance(entry.frame.f_locals.get("self"), Client)]
    assert [client.status for client in failed] == ["closed"]
    assert_no_io_loop_left(before)


def test_client_with_another_cas_certificate_is_refused(tls_cluster, pki, tmp_path, handshake_log):
    foreign = issue_pki(tmp_path / "foreign", roles=("client",))
    (ca,) = pem_files(pki, tmp_path, "ca.crt")
    cert, key = pem_files(foreign, tmp_path / "foreign-pem", "client.crt", "client.key")
    with pytest.raises(ssl.SSLError) as refused:
        tls_exchange(tls_cluster.scheduler_address, ca, cert, key)
    assert refused.value.reason == "TLSV1_ALERT_UNKNOWN_CA"
    assert handshake_log.refused("CERTIFICATE_VERIFY_FAILED"), handshake_log.messages


def test_client_trusting_another_ca_refuses_the_scheduler(tls_cluster, tmp_path):
    foreign = issue_pki(tmp_path / "foreign", roles=("client",))
    security = Security(tls_ca_file=foreign["ca.crt"], tls_client_cert=foreign["client.crt"],
                        tls_client_key=foreign["client.key"], require_encryption=True)

    left: list[asyncio.Task] = []

    async def connect() -> None:
        # On this test's own event loop: a synchronous Client starts an IO-loop thread and
        # gives it 10 s (distributed 2026.7.1 utils.LoopRunner), once missed on a loaded CI
        # machine before the handshake under test was even tried.
        try:
            async with Client(tls_cluster.scheduler_address, security=security, timeout=30, asynchronous=True):
                pass
        finally:  # what asyncio.run would cancel and wait for after the refusal
            left.extend(t for t in asyncio.all_tasks() if t is not asyncio.current_task())

    with pytest.raises(CommClosedError, match="TLS certificate does not match") as refused:
        asyncio.run(connect())
    cause = refused.value.__cause__
    assert isinstance(cause, ssl.SSLCertVerificationError) and cause.reason == "CERTIFICATE_VERIFY_FAILED"
    assert not left, f"the refused client left tasks running: {left}"


def test_the_helm_values_env_variables_configure_dask(pki):
    """The pods get PEM contents through DASK_DISTRIBUTED__COMM__TLS__* variables; a fresh
    Python reading Dask's config must build a TLS Security from them alone."""
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
           "DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME": "tls"}
    env.update({variable: pki[key] for key, variable in TLS_KEYS.items()})
    probe = ("import json, dask, distributed.security as s; sec = s.Security();"
             "print(json.dumps({'ca': sec.tls_ca_file, 'worker': sec.tls_worker_cert, 'client': sec.tls_client_key,"
             " 'require': sec.require_encryption, 'scheme': dask.config.get('distributed.comm.default-scheme')}))")
    out = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                    check=True).stdout)
    assert out == {"ca": pki["ca.crt"], "worker": pki["worker.crt"], "client": pki["client.key"],
                   "require": True, "scheme": "tls"}


@contextmanager
def scheduler_presenting(pki: dict[str, str], role: str):
    """A scheduler (no workers) on 127.0.0.1 that presents ``role``'s certificate and key as its
    own: an impostor holding a key the CA certified for something else."""
    security = Security(tls_ca_file=pki["ca.crt"], tls_scheduler_cert=pki[f"{role}.crt"],
                        tls_scheduler_key=pki[f"{role}.key"], tls_client_cert=pki["client.crt"],
                        tls_client_key=pki["client.key"],
                        require_encryption=True)  # the client's: the cluster object's own
    with LocalCluster(n_workers=0, processes=False, protocol="tls://", host="127.0.0.1", security=security,
                      dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def runner_security(pki: dict[str, str]):
    """What the runner builds from the stack's outputs."""
    return security_from_pems(pki["ca.crt"], pki["client.crt"], pki["client.key"])


def test_the_runner_refuses_a_scheduler_whose_certificate_does_not_name_the_address(pki):
    with (scheduler_presenting(pki, "worker") as address,
          pytest.raises(EndpointError, match=r"the scheduler at tls://127\.0\.0\.1:\d+ presents a certificate that"
                                             r" does not name 127\.0\.0\.1: IP address mismatch")):
        endpoint.connect(address, runner_security(pki), timeout=30).close()


def test_the_runner_accepts_the_scheduler_by_the_address_its_certificate_names(pki):
    with (scheduler_presenting(pki, "scheduler") as address,
          endpoint.connect(address, runner_security(pki), timeout=30) as client):
        assert client.scheduler_info()["address"] == address


class LocalForward:
    """The runner's port-forward, reduced to what the session asks of it: the scheduler's
    Service is reached at a local address (a real forward: tests/workloads/test_port_forward.py)."""

    def describe(self) -> str:
        return "a forward to dask-scheduler"

    def close(self) -> None:
        pass


def forwarded_session(pki: dict[str, str], local_address: str, monkeypatch) -> ClusterSession:
    """The runner's session for outputs naming the scheduler by its Service, which does not
    answer from here: it connects through a forward whose local end is ``local_address``."""
    # a stand-in for the StackOutputs the session reads: the scheduler's address and the backend
    outputs = cast(StackOutputs, SimpleNamespace(scheduler_address=f"tls://{SCHEDULER_NAME}:8786", backend="helm"))
    where = endpoint.Endpoint(kind="outputs", source="test", scheduler_address=outputs.scheduler_address,
                              security=runner_security(pki), outputs=outputs)
    monkeypatch.setattr(port_forward, "open_for", lambda outputs, on_drop=None: (
        LocalForward(), port_forward.Forwarded(local_address, "")))
    return ClusterSession(where, echo=lambda *a, **k: None)


def test_through_a_forward_the_runner_checks_the_name_the_outputs_give(pki, monkeypatch):
    with scheduler_presenting(pki, "scheduler") as address, forwarded_session(pki, address, monkeypatch) as session:
        assert session.connect().scheduler_info()["address"] == address
    with (scheduler_presenting(pki, "worker") as address, forwarded_session(pki, address, monkeypatch) as session,
          pytest.raises(EndpointError, match=f"presents a certificate that does not name {SCHEDULER_NAME}:"
                                             " Hostname mismatch")):
        session.connect()


def test_a_clients_key_cannot_serve_even_to_a_peer_that_checks_no_names(pki):
    """A worker dials the scheduler without checking names (distributed's own contexts): a
    client's certificate, certified for client authentication only, is refused as a server's
    (OpenSSL checks the purpose of the peer's certificate against its side: X509_check_purpose,
    SSL server). A bare scheduler: a LocalCluster's own client would be refused first."""
    worker = Security(tls_ca_file=pki["ca.crt"], tls_worker_cert=pki["worker.crt"], tls_worker_key=pki["worker.key"],
                      require_encryption=True)

    async def dial_a_scheduler_presenting(role: str) -> None:
        security = Security(tls_ca_file=pki["ca.crt"], tls_scheduler_cert=pki[f"{role}.crt"],
                            tls_scheduler_key=pki[f"{role}.key"], require_encryption=True)
        async with Scheduler(security=security, protocol="tls://", host="127.0.0.1", dashboard_address=":0") as s:
            comm = await connect(s.address, timeout=30, **worker.get_connection_args("worker"))
            await comm.close()

    with pytest.raises(CommClosedError, match="TLS certificate does not match") as refused:
        asyncio.run(dial_a_scheduler_presenting("client"))
    cause = refused.value.__cause__
    assert isinstance(cause, ssl.SSLCertVerificationError) and cause.verify_message == "unsuitable certificate purpose"
    asyncio.run(dial_a_scheduler_presenting("scheduler"))  # the scheduler's own, dialled by the same worker
