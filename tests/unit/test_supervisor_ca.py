"""supervisorCaPem (item 11): the Supervisor's certificate verified against a given CA
instead of skipping verification, for the login and in the kubeconfig. Against the local
FAKE of /wcp/login (``tests/unit/fake_wcp.py``)."""
from __future__ import annotations

import base64

import pytest
import yaml

from components.cluster.supervisor_access import SupervisorLoginError, login_kubeconfig
from tests.kube.pki import self_signed_pem
from tests.unit.fake_wcp import PASSWORD, USER, serve_fake_wcp


@pytest.fixture(scope="module")
def supervisor(tmp_path_factory):
    with serve_fake_wcp(tmp_path_factory.mktemp("wcp-ca")) as served:
        yield served


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
    other, _ = self_signed_pem(tmp_path, "other")
    with pytest.raises(SupervisorLoginError, match="cannot reach the Supervisor"):
        login_kubeconfig(address, USER, PASSWORD, "dask", insecure=True, ca_pem=other.read_text())
