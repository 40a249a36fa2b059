"""supervisorCaPem (item 11): the Supervisor's certificate verified against a given CA
instead of skipping verification, for the login and in the kubeconfig. Against the local
FAKE of /wcp/login of ``test_supervisor_login.py`` (no simulator serves it)."""
from __future__ import annotations

import base64
import http.server
import ssl
import subprocess
import threading

import pytest
import yaml

from components.cluster.supervisor_access import SupervisorLoginError, login_kubeconfig
from tests.unit.test_supervisor_login import PASSWORD, USER, FakeWcpLogin


@pytest.fixture(scope="module")
def supervisor(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wcp-ca")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(folder / "k.pem"), "-out", str(folder / "c.pem"), "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeWcpLogin)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "c.pem", folder / "k.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}", (folder / "c.pem").read_text()
    server.shutdown()


def test_the_ca_is_verified_and_written_to_the_kubeconfig(supervisor):
    address, ca_pem = supervisor
    # insecure stays on in the vSphere provider config; the CA wins for the Supervisor.
    doc = yaml.safe_load(login_kubeconfig(address, USER, PASSWORD, "dask", insecure=True, ca_pem=ca_pem))
    cluster = doc["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]).decode() == ca_pem
    assert "insecure-skip-tls-verify" not in cluster
    assert doc["users"][0]["user"]["token"] == "token-abc"


def test_a_wrong_ca_is_refused_even_with_insecure(supervisor, tmp_path):
    address, _ = supervisor
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(tmp_path / "k.pem"), "-out", str(tmp_path / "other.pem"), "-days", "1",
                    "-subj", "/CN=other"], check=True, capture_output=True)
    with pytest.raises(SupervisorLoginError, match="cannot reach the Supervisor"):
        login_kubeconfig(address, USER, PASSWORD, "dask", insecure=True, ca_pem=(tmp_path / "other.pem").read_text())
