"""Jupyter and the scheduler's dashboard over TLS, for real: each started here with exactly
what the program gives its pod (Jupyter's command line from the Helm values, the scheduler's
environment from them), the paths under /etc/dask/tls pointing at certificates shaped as the
program issues them (tests/security/dask_pki.py). A client that trusts the stack's CA and
checks names gets the page by the Service's name and by the exposed address; plain HTTP gets
nothing. Jupyter Server 2.21.1 and distributed 2026.7.1, the runtime image's."""
from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.dask.jupyter_password import jupyter_hash
from components.dask.podspec import TLS_DIR
from components.dask.values import JUPYTER_ARGS, dask_values
from tests.cluster.jupyter import Browser, logged_in
from tests.security.dask_pki import JUPYTER_NAME, SCHEDULER_NAME, issue_pki
from tests.unit.support import settings, values_inputs

BIN = Path(sys.executable).parent
PASSWORD = "a-password-for-this-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    issue_pki(folder, roles=("scheduler", "worker", "client", "jupyter"))
    return folder


@pytest.fixture(scope="module")
def values():
    return dask_values(values_inputs(settings(), jupyter_password_hash=jupyter_hash(PASSWORD, "mocksalt01234567")))


def here(value: str, pki: Path) -> str:
    """A pod path under the TLS mount, as the same file here."""
    return value.replace(TLS_DIR, str(pki))


def https_get(port: int, server_name: str, ca: Path, path: str, timeout: float = 10) -> tuple[int, str]:
    """GET ``path`` from 127.0.0.1:``port`` over TLS, trusting only ``ca`` and requiring the
    certificate to name ``server_name`` (the name the client means, whatever address it dials).
    The Host header is the local one: Jupyter listening on 127.0.0.1 here answers 403 to any
    other (jupyter_server ``allow_remote_access``, off for a local address; the pod listens on
    0.0.0.0, where it is on)."""
    context = ssl.create_default_context(cafile=str(ca))
    with (socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw,
          context.wrap_socket(raw, server_hostname=server_name) as tls):
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    head, _, body = data.decode(errors="replace").partition("\r\n\r\n")
    return int(head.split()[1]), body


def plain_http_answer(port: int) -> bytes:
    """What a plain HTTP request to the port gets back (b"" when the server closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        try:
            return raw.recv(65536)
        except ConnectionResetError:
            return b""


def wait_https(port: int, server_name: str, ca: Path, path: str, process: subprocess.Popen, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return https_get(port, server_name, ca, path)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.terminate()
                raise AssertionError(f"no TLS served on {port}: {process.communicate(timeout=30)[0][-3000:]}") from None
            time.sleep(0.3)


@pytest.fixture(scope="module")
def jupyter(values, pki, tmp_path_factory):
    """The Helm values' Jupyter command line, run here: the chart's config file holds the
    password (dask-jupyter-config.yaml), Jupyter listens on a free local port."""
    home = tmp_path_factory.mktemp("jupyter-home")
    config = home / "jupyter_notebook_config.py"
    config.write_text(f"c = get_config()\nc.NotebookApp.password = {values['jupyter']['password']!r}\n")
    port = free_port()
    args = values["jupyter"]["args"]
    assert args[: len(JUPYTER_ARGS)] == JUPYTER_ARGS and args[0] == "jupyter"
    command = [str(BIN / "jupyter"), *(
        "--ip=127.0.0.1" if a.startswith("--ip=") else f"--port={port}" if a.startswith("--port=")
        else f"--config={config}" if a.startswith("--config=") else here(a, pki) for a in args[1:])]
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    process = subprocess.Popen(command, cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_https(port, JUPYTER_NAME, pki / "ca.crt", "/login", process)
        yield port
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_jupyter_serves_its_certificate_by_its_service_name_and_its_exposed_address(jupyter, pki):
    status, body = https_get(jupyter, JUPYTER_NAME, pki / "ca.crt", "/login")
    assert status == 200 and "password" in body.lower()
    answer = https_get(jupyter, "127.0.0.1", pki / "ca.crt", "/login")
    assert answer[0] == 200  # the LoadBalancer's address


def test_a_browser_logs_in_over_tls_checking_the_services_name(jupyter, pki):
    browser = Browser(f"https://127.0.0.1:{jupyter}", ca_file=pki / "ca.crt", server_name=JUPYTER_NAME)
    answer = browser.login(PASSWORD)
    assert (answer.status, answer.location) == (302, "/lab") and logged_in(answer), answer


def test_jupyter_refuses_plain_http(jupyter):
    assert not plain_http_answer(jupyter).startswith(b"HTTP/1.1 200")


def test_jupyter_is_not_the_scheduler(jupyter, pki):
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        https_get(jupyter, SCHEDULER_NAME, pki / "ca.crt", "/login")


@pytest.fixture(scope="module")
def dashboard(values, pki, tmp_path_factory):
    """The chart's scheduler with the Helm values' environment (its TLS files here), its
    dashboard on a free local port."""
    env = {**os.environ, **{e["name"]: here(e["value"], pki) for e in values["scheduler"]["env"] if "value" in e}}
    port = free_port()
    command = [sys.executable, "-m", "dask", "scheduler", *values["scheduler"]["extraArgs"], "--host", "127.0.0.1",
               "--port", "0", "--dashboard-address", f"127.0.0.1:{port}"]
    process = subprocess.Popen(command, cwd=tmp_path_factory.mktemp("scheduler"), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        wait_https(port, SCHEDULER_NAME, pki / "ca.crt", "/health", process)
        yield port
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=30)
        print(out)


def test_the_dashboard_serves_the_schedulers_certificate(dashboard, pki):
    assert https_get(dashboard, SCHEDULER_NAME, pki / "ca.crt", "/health") == (200, "ok")
    assert https_get(dashboard, "127.0.0.1", pki / "ca.crt", "/health")[0] == 200  # the LoadBalancer's address
    assert not plain_http_answer(dashboard).startswith(b"HTTP/1.1 200")

