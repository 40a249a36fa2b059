"""``kubectl vsphere login``'s call, against a local FAKE of the Supervisor's /wcp/login
endpoint (``tests/unit/fake_wcp.py``)."""
from __future__ import annotations

import ssl

import pytest
import yaml

from components.cluster.supervisor_access import SupervisorLoginError, kubeconfig, login
from tests.kube.pki import self_signed_pem
from tests.unit.fake_wcp import PASSWORD, USER, serve_fake_wcp


@pytest.fixture(scope="module")
def supervisor(tmp_path_factory):
    with serve_fake_wcp(tmp_path_factory.mktemp("wcp")) as (address, _):
        yield address


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
    other, _ = self_signed_pem(tmp_path, "other")
    with pytest.raises(SupervisorLoginError) as info:
        login(supervisor, USER, PASSWORD, ca_pem=other.read_text())
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
