"""vcenterCaPem (issue 37, item 9): the program's own vCenter sessions (vim/SPBM/vSAN over SOAP,
and REST) verify vCenter's certificate against the given CA, even where
``vsphere:allowUnverifiedSsl`` stays on for the bridged provider. Against vcsim's TLS."""
from __future__ import annotations

import pytest

from components.vsphere.providers.session import VCenterError, rest_session, vcenter
from tests.kube.pki import self_signed_pem

pytestmark = pytest.mark.vcsim


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory) -> str:
    cert, _ = self_signed_pem(tmp_path_factory.mktemp("other-ca"), "other-ca")
    return cert.read_text()


def test_a_wrong_ca_is_refused_even_with_insecure(vcsim, other_ca):
    with pytest.raises(VCenterError, match="not trusted"), vcenter(vcsim.connection(insecure=True, ca_pem=other_ca)):
        pass


def test_the_right_ca_is_verified_with_insecure_on(vcsim):
    with vcenter(vcsim.connection(insecure=True)) as si:  # vcsim.connection carries vcsim's own CA
        assert si.content.about.apiVersion


def test_rest_sessions_verify_the_ca_even_with_insecure(vcsim, other_ca):
    with pytest.raises(VCenterError, match=r"cannot reach vCenter .*SSLError"):
        rest_session(vcsim.connection(insecure=True, ca_pem=other_ca))
    # vcsim serves no /api/session: past TLS, the right CA gets the REST answer itself
    with pytest.raises(VCenterError, match="does not serve POST /api/session"):
        rest_session(vcsim.connection(insecure=True))
