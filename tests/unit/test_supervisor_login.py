"""``kubectl vsphere login``'s call, against a local FAKE of the Supervisor's /wcp/login
endpoint (no simulator serves it; the fake answers like the Supervisor: basic auth in,
``{"session_id": ...}`` out)."""
from __future__ import annotations

import base64
import http.server
import json
import ssl
import subprocess
import threading

import pytest
import yaml

from components.cluster.supervisor_access import SupervisorLoginError, kubeconfig, login

USER, PASSWORD = "devops@vsphere.local", "pw-Do-Not-Leak"


class FakeWcpLogin(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if self.path != "/wcp/login":
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Authorization") != expected:
            self.send_response(401)
            self.end_headers()
            return
        body = json.dumps({"session_id": "token-abc"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def supervisor(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wcp")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(folder / "k.pem"), "-out", str(folder / "c.pem"), "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeWcpLogin)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "c.pem", folder / "k.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def supervisor_ca(supervisor, tmp_path_factory):
    """The fake's self-signed certificate as PEM text: its own CA."""
    host, port = supervisor.split(":")
    return ssl.get_server_certificate((host, int(port)))


def test_login_returns_the_session_token(supervisor):
    assert login(supervisor, USER, PASSWORD, insecure=True) == "token-abc"


def test_wrong_password_is_named_without_the_password(supervisor):
    with pytest.raises(SupervisorLoginError) as info:
        login(supervisor, USER, "wrong-" + PASSWORD, insecure=True)
    assert "HTTP 401" in str(info.value) and USER in str(info.value) and PASSWORD not in str(info.value)


def test_untrusted_certificate_is_refused_without_insecure(supervisor):
    with pytest.raises(SupervisorLoginError) as info:
        login(supervisor, USER, PASSWORD)
    assert "cannot reach" in str(info.value) and "CERTIFICATE_VERIFY_FAILED" in str(info.value)


def test_a_ca_given_as_pem_text_is_trusted_instead_of_insecure(supervisor, supervisor_ca):
    assert login(supervisor, USER, PASSWORD, ca_pem=supervisor_ca) == "token-abc"


def test_a_foreign_ca_is_refused(supervisor, tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(tmp_path / "k.pem"), "-out", str(tmp_path / "c.pem"), "-days", "1",
                    "-subj", "/CN=other"], check=True, capture_output=True)
    with pytest.raises(SupervisorLoginError) as info:
        login(supervisor, USER, PASSWORD, ca_pem=(tmp_path / "c.pem").read_text())
    assert "CERTIFICATE_VERIFY_FAILED" in str(info.value)


def test_unreachable_supervisor_names_the_url():
    with pytest.raises(SupervisorLoginError) as info:
        login("127.0.0.1:9", USER, PASSWORD, insecure=True, timeout=2)
    assert "https://127.0.0.1:9/wcp/login" in str(info.value)


def test_kubeconfig_uses_the_token_and_namespace():
    doc = yaml.safe_load(kubeconfig("10.0.0.2", "tok", "dask", insecure=True))
    assert doc["users"][0]["user"] == {"token": "tok"}
    assert doc["clusters"][0]["cluster"] == {"server": "https://10.0.0.2:6443", "insecure-skip-tls-verify": True}
    assert doc["contexts"][0]["context"]["namespace"] == "dask"
