"""vCenter's certificate (issue 37, item 9): ``vcenterCaPem`` is the CA the program's own vCenter
sessions verify against, and ``vsphere:allowUnverifiedSsl`` is refused at preview unless
``acknowledgeUnverifiedTls`` says it is meant, and then warns, naming what goes unchecked
(docs/reliability.md, V5-V7, SV46)."""
from __future__ import annotations

import asyncio

import pytest

from components.settings import DictSource, SettingsError, load
from components.settings.trust import unverified_tls_warning
from components.vsphere.access import VCenterAccess
from tests.unit.support import PROVIDER, SITE

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def settings(provider=PROVIDER, **overrides):
    """``SITE`` (an unverified vCenter acknowledged, for the warnings' tests) with ``overrides``."""
    return load(DictSource({**SITE, "acknowledgeUnverifiedTls": True, **overrides}, provider))


def test_a_vcenter_ca_that_is_not_pem_fails_at_preview():
    with pytest.raises(SettingsError) as info:
        settings(vcenterCaPem="vcenter.example.crt")
    assert "dask-tkg:vcenterCaPem: must be PEM text" in str(info.value)


@pytest.fixture
def event_loop_of_its_own():
    """``pulumi.Output.secret`` makes futures on the current event loop; an earlier test's
    ``asyncio.run`` leaves the main thread without one, so this test brings its own."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()


def test_the_vcenter_ca_reaches_every_dynamic_resource(event_loop_of_its_own):
    s = settings(vcenterCaPem=PEM)
    assert s.vsphere.ca_pem == PEM
    access = VCenterAccess(s.vsphere.server, s.vsphere.user, s.vsphere.password, s.vsphere.insecure, s.vsphere.ca_pem)
    assert access.inputs()["ca_pem"] == PEM
    assert VCenterAccess("vc", "u", "p").inputs()["ca_pem"] is None  # unset: the system trust store


def test_verified_certificates_give_no_warning():
    assert unverified_tls_warning(settings()) is None


def test_allow_unverified_ssl_is_refused_unless_acknowledged():
    with pytest.raises(SettingsError) as refused:
        load(DictSource({**SITE}, {**PROVIDER, "vsphere:allowUnverifiedSsl": "true"}))
    message = str(refused.value)
    assert "dask-tkg:acknowledgeUnverifiedTls: vsphere:allowUnverifiedSsl is true and nothing says it is meant" \
        in message, message


def test_allow_unverified_ssl_names_everything_left_unchecked():
    warning = unverified_tls_warning(settings({**PROVIDER, "vsphere:allowUnverifiedSsl": "true"}))
    assert warning.startswith("vsphere:allowUnverifiedSsl is true:")
    assert "vCenter's certificate goes unchecked for the vSphere provider" in warning
    assert "and for the program's own vCenter sessions" in warning
    assert "the Supervisor's certificate goes unchecked: the vCenter password goes to it by Basic auth" in warning
    assert "insecure-skip-tls-verify" in warning
    assert "vcenterCaPem" in warning and "supervisorCaPem" in warning and "SSL_CERT_FILE" in warning


def test_with_both_cas_only_the_provider_stays_unchecked():
    warning = unverified_tls_warning(settings({**PROVIDER, "vsphere:allowUnverifiedSsl": "true"},
                                              vcenterCaPem=PEM, supervisorCaPem=PEM))
    assert "vCenter's certificate goes unchecked for the vSphere provider" in warning
    assert "program's own vCenter sessions" not in warning and "Supervisor" not in warning


def test_a_given_supervisor_kubeconfig_is_not_a_login():
    warning = unverified_tls_warning(settings({**PROVIDER, "vsphere:allowUnverifiedSsl": "true"},
                                              supervisorKubeconfig="apiVersion: v1\nkind: Config\n"))
    assert "Basic auth" not in warning
