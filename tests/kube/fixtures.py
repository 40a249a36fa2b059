"""The pytest fixtures and collection hooks of the kube-apiserver stand-in
(:mod:`tests.kube.apiserver`). A folder's ``conftest.py`` imports them by name, which
registers them for its tests (``tests/apiserver``, ``tests/operator``, ``tests/render``).

Fixtures
  ``kube_apiserver`` (session) -> :class:`KubeAPIServer`: ``url``, ``token`` (an admin
      in ``system:masters``), ``api_client`` (``kubernetes.client.ApiClient``),
      ``kubeconfig`` (path), ``ca_file``, ``users`` (extra non-admin tokens).
  ``tkc_crd`` (session) -> dict: the TanzuKubernetesCluster CRD as the server holds
      it, serving v1alpha2 (VMware's generated schema, read unchanged from
      ``../shared``) and v1alpha3 (the project's schema) from one object.
  ``capi_crds`` (session) -> dict: Cluster API v1.10.10's Cluster, ClusterClass and
      MachineDeployment CRDs (upstream files, installed unchanged), as the server holds
      them, by kind.
  ``operator_crds`` (session) -> dict: the Dask operator chart's CRDs, by kind.
  ``kube_namespace`` (function) -> str: a fresh namespace for one test.

Hooks
  A test that uses ``kube_apiserver`` gets the ``apiserver`` mark. If the binaries are
  missing, they are built once before the first test runs (:mod:`tests.kube.binaries`),
  so the build is not charged to one test's timeout; a failed build fails every test
  that needs the server, with the build log's tail.
"""
from __future__ import annotations

import re
import secrets
import subprocess
import sys
import time
from typing import Iterator

import pytest

from tests.kube.apiserver import KubeAPIServer, start_kube_apiserver
from tests.kube.binaries import (
    BIN_DIR,
    BUILD_LOG,
    BUILD_SCRIPT,
    REPO,
    KubeBuildError,
    binaries_present,
    ensure_binaries,
)
from tests.kube.crds import CAPI_CRDS, install_crd, load_crd, load_tkc_crd
from tests.kube.rest import apply_manifest

FIXTURE_NAME = "kube_apiserver"

_build_error: str | None = None


def _needs_server(item: pytest.Item) -> bool:
    return FIXTURE_NAME in getattr(item, "fixturenames", ()) or item.get_closest_marker("apiserver") is not None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if FIXTURE_NAME in getattr(item, "fixturenames", ()) and item.get_closest_marker("apiserver") is None:
            item.add_marker(pytest.mark.apiserver)


def pytest_collection_finish(session):
    """Build the binaries before any test runs, so the build is not charged to one test's timeout."""
    global _build_error
    if session.config.option.collectonly or binaries_present():
        return
    if not any(_needs_server(item) for item in session.items):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else (lambda s: print(s, file=sys.stderr))
    say(f"kube-apiserver/etcd not in {BIN_DIR}: running {BUILD_SCRIPT.relative_to(REPO)} "
        f"(several minutes; log {BUILD_LOG})")
    started = time.monotonic()
    try:
        ensure_binaries()
    except KubeBuildError as exc:
        _build_error = str(exc)
        say(f"kube-apiserver build FAILED after {time.monotonic() - started:.0f} s (see {BUILD_LOG})")
    else:
        say(f"kube-apiserver built in {time.monotonic() - started:.0f} s")


@pytest.fixture(scope="session")
def kube_apiserver(tmp_path_factory) -> Iterator[KubeAPIServer]:
    """A real kube-apiserver v1.20.2 + etcd on 127.0.0.1 for the whole session (admin token auth, RBAC)."""
    if _build_error is not None:
        pytest.fail(_build_error, pytrace=False)
    try:
        ensure_binaries()
    except KubeBuildError as exc:
        pytest.fail(str(exc), pytrace=False)
    server = None
    errors = []
    for _attempt in range(2):  # a free port may be taken between probing and binding
        workdir = tmp_path_factory.mktemp("kube-apiserver")
        try:
            server = start_kube_apiserver(workdir)
            break
        except (RuntimeError, TimeoutError, subprocess.CalledProcessError) as exc:
            detail = exc.stderr.decode(errors="replace") if isinstance(exc, subprocess.CalledProcessError) else ""
            errors.append(f"{exc}\n{detail}".strip())
    if server is None:
        pytest.fail("could not start etcd + kube-apiserver:\n" + "\n\n".join(errors), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tkc_crd(kube_apiserver: KubeAPIServer) -> dict:
    """The TanzuKubernetesCluster CRD (v1alpha2 storage + v1alpha3), installed and served."""
    return install_crd(kube_apiserver.api_client, load_tkc_crd())


@pytest.fixture(scope="session")
def capi_crds(kube_apiserver: KubeAPIServer) -> dict[str, dict]:
    """Cluster API's Cluster, ClusterClass and MachineDeployment CRDs, installed and served, by kind.

    The 1.20 server takes all three unchanged: none uses a schema feature newer than 1.20
    (``x-kubernetes-validations`` appears in ClusterClass only as the name of a property of
    its variable schemas, not as a rule). Only v1beta1 is served; the old versions are
    listed with ``served: false``, so no conversion webhook is needed.
    """
    held = [install_crd(kube_apiserver.api_client, load_crd(file)) for file in CAPI_CRDS]
    return {crd["spec"]["names"]["kind"]: crd for crd in held}


@pytest.fixture(scope="session")
def operator_crds(kube_apiserver: KubeAPIServer) -> dict[str, dict]:
    """kind -> the Dask operator's CRD as the server holds it (DaskCluster, DaskWorkerGroup, ...),
    from the pinned dask-kubernetes-operator chart's ``crds/``."""
    from tests.operator.support import chart_crds

    return {crd["spec"]["names"]["kind"]: install_crd(kube_apiserver.api_client, crd) for crd in chart_crds()}


_NS_UNSAFE = re.compile(r"[^a-z0-9-]+")


def namespace_for(test_name: str, length: int) -> str:
    """A fresh namespace name after the test's name: its first ``length`` safe characters and a random suffix."""
    base = _NS_UNSAFE.sub("-", test_name.lower()).strip("-")[:length].strip("-") or "t"
    return f"{base}-{secrets.token_hex(3)}"


@pytest.fixture
def kube_namespace(kube_apiserver: KubeAPIServer, request) -> str:
    """A fresh namespace named after the test. It is left behind: without a
    controller-manager a deleted namespace never finishes terminating."""
    name = namespace_for(request.node.name, 48)
    apply_manifest(kube_apiserver.api_client,
                   {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name
