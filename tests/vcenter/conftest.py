"""A real vCenter simulator (govmomi's vcsim) for the vCenter-facing providers.

The session fixture builds vcsim with ``scripts/build_vcsim.sh`` (a no-op when the
cached binary is current), starts it on a free 127.0.0.1 port with a TLS
certificate and an enforced login, and stops it at the end. A build failure
fails the tests that need it, with the script's output.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.vcenter.simulator import Vcsim, running_vcsim


@pytest.fixture(scope="session")
def vcsim(tmp_path_factory) -> Iterator[Vcsim]:
    with running_vcsim(tmp_path_factory.mktemp("vcsim")) as simulator:
        yield simulator


@pytest.fixture
def fake_api_password_not_logged(api, caplog):
    """For the modules whose ``api`` fixture is a fake of vCenter's REST API: nothing the
    provider logs, at any level, holds the password it logged in with."""
    caplog.set_level(logging.DEBUG)
    yield
    assert api.password not in caplog.text
