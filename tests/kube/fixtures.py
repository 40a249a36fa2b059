"""The pytest fixtures and collection hooks of the kube-apiserver stand-ins
(:mod:`tests.kube.apiserver`), one server per build (:mod:`tests.kube.binaries`). A folder's
``conftest.py`` imports them by name, which registers them for its tests (``tests/apiserver``,
``tests/operator``, ``tests/render``).

Fixtures
  ``kube_apiserver`` (session) -> :class:`KubeAPIServer` of the current stacks' build (1.33):
      ``url``, ``token`` (an admin in ``system:masters``), ``api_client``
      (``kubernetes.client.ApiClient``), ``kubeconfig`` (path), ``ca_file``, ``users`` (extra
      non-admin tokens), ``version`` (its ``/version``), ``release``.
  ``paper_apiserver`` (session) -> the same, of the paper's stacks' build (1.20).
  ``apiserver_for`` (function) -> ``pick(tkr)``: the server a stack asking for that TKR or VKr
      runs on (tests parametrized over stacks of both kinds).
  ``tkc_crd`` (session) -> dict: the TanzuKubernetesCluster CRD as the paper's server holds
      it, serving v1alpha2 (VMware's generated schema, read unchanged from ``../shared``) and
      v1alpha3 (the project's schema) from one object.
  ``capi_crds`` (session) -> dict: Cluster API v1.10.10's Cluster, ClusterClass and
      MachineDeployment CRDs (upstream files, installed unchanged) on the current server, by kind.
  ``operator_crds`` (session) -> dict: the Dask operator chart's CRDs on the current server, by kind.
  ``kube_namespace``, ``paper_namespace`` (function) -> str: a fresh namespace on that server.

Hooks
  A test that uses a server fixture gets the ``apiserver`` mark. Missing binaries are built
  once before the first test runs, so no test's timeout pays for a build; a failed build fails
  every test that needs that server, with the build log's tail.
"""
from __future__ import annotations

import re
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from tests.kube.apiserver import KubeAPIServer, start_kube_apiserver
from tests.kube.binaries import CONTROL_PLANE, CURRENT, PAPER, REPO, KubeBuildError, KubeRelease, release_for_stack
from tests.kube.crds import CAPI_CRDS, install_crd, load_crd, load_tkc_crd
from tests.kube.rest import apply_manifest
from tests.kube.versions import record

# The fixtures that start a server, and the build each runs.
SERVER_FIXTURES = {"kube_apiserver": CURRENT, "paper_apiserver": PAPER, "apiserver_for": None}

_build_errors: dict[str, str] = {}


def _releases_needed(item: pytest.Item) -> set[KubeRelease]:
    names = set(getattr(item, "fixturenames", ()))
    if "apiserver_for" in names or (item.get_closest_marker("apiserver") is not None
                                    and not names & set(SERVER_FIXTURES)):
        return {CURRENT, PAPER}
    return {release for name, release in SERVER_FIXTURES.items() if name in names and release is not None}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if (set(getattr(item, "fixturenames", ())) & set(SERVER_FIXTURES)
                and item.get_closest_marker("apiserver") is None):
            item.add_marker(pytest.mark.apiserver)


def pytest_collection_finish(session):
    """Build what the selected tests need before any runs, so no test's timeout pays for a build."""
    if session.config.option.collectonly:
        return
    needed = set().union(*(_releases_needed(item) for item in session.items)) if session.items else set()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else (lambda s: print(s, file=sys.stderr))
    for release in sorted(needed, key=lambda r: r.key):
        if not release.missing(CONTROL_PLANE):
            continue
        say(f"Kubernetes {release.version} not in {release.bin_dir}: running "
            f"{release.build_script.relative_to(REPO)} (several minutes; log {release.build_log})")
        started = time.monotonic()
        try:
            release.ensure(CONTROL_PLANE)
        except KubeBuildError as exc:
            _build_errors[release.key] = str(exc)
            say(f"Kubernetes {release.version} build FAILED after {time.monotonic() - started:.0f} s")
        else:
            say(f"Kubernetes {release.version} built in {time.monotonic() - started:.0f} s")


def serve(release: KubeRelease, tmp_path_factory) -> Iterator[KubeAPIServer]:
    """A real kube-apiserver of ``release`` + etcd on 127.0.0.1 (admin token auth, RBAC)."""
    if release.key in _build_errors:
        pytest.fail(_build_errors[release.key], pytrace=False)
    try:
        release.ensure(CONTROL_PLANE)
    except KubeBuildError as exc:
        pytest.fail(str(exc), pytrace=False)
    server = None
    errors = []
    for _attempt in range(2):  # a free port may be taken between probing and binding
        workdir = tmp_path_factory.mktemp(f"kube-apiserver-{release.key}")
        try:
            server = start_kube_apiserver(release, workdir)
            break
        except (RuntimeError, TimeoutError, subprocess.CalledProcessError) as exc:
            detail = exc.stderr.decode(errors="replace") if isinstance(exc, subprocess.CalledProcessError) else ""
            errors.append(f"{exc}\n{detail}".strip())
    if server is None:
        pytest.fail(f"could not start etcd + kube-apiserver {release.version}:\n" + "\n\n".join(errors),
                    pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kube_apiserver(tmp_path_factory) -> Iterator[KubeAPIServer]:
    """The current stacks' API server (the default VKr's minor, :data:`tests.kube.binaries.CURRENT`)."""
    yield from serve(CURRENT, tmp_path_factory)


@pytest.fixture(scope="session")
def paper_apiserver(tmp_path_factory) -> Iterator[KubeAPIServer]:
    """The paper's stacks' API server (Kubernetes 1.20, :data:`tests.kube.binaries.PAPER`)."""
    yield from serve(PAPER, tmp_path_factory)


@pytest.fixture
def apiserver_for(request) -> Callable[..., KubeAPIServer]:
    """``apiserver_for(stack, config)``: the server of the build that stack (a stack file plus
    config overrides) runs on, recorded as the version this test ran on."""
    def pick(stack: str, config: dict | None = None) -> KubeAPIServer:
        release = release_for_stack(stack, config)
        server = request.getfixturevalue("kube_apiserver" if release is CURRENT else "paper_apiserver")
        record(request.node, server.version["gitVersion"])
        return server

    return pick


@pytest.fixture(scope="session")
def tkc_crd(paper_apiserver: KubeAPIServer) -> dict:
    """The TanzuKubernetesCluster CRD (v1alpha2 storage + v1alpha3), installed and served by the
    paper's server: TanzuKubernetesClusters are the paper's stacks' (vSphere 7, TKR 1.20)."""
    return install_crd(paper_apiserver.api_client, load_tkc_crd())


@pytest.fixture(scope="session")
def capi_crds(kube_apiserver: KubeAPIServer) -> dict[str, dict]:
    """Cluster API's Cluster, ClusterClass and MachineDeployment CRDs, installed and served, by kind.

    On the current stacks' server (Cluster API objects are theirs). None of the three carries a
    CEL rule for the API server to enforce: ``x-kubernetes-validations`` appears in the
    ClusterClass CRD only as the name of a property of its variables' schemas (which Cluster
    API's webhook, not the API server, evaluates). Only v1beta1 is served; the old versions are
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


def fresh_namespace(server: KubeAPIServer, request) -> str:
    """A fresh namespace named after the test. It is left behind: without a
    controller-manager a deleted namespace never finishes terminating."""
    name = namespace_for(request.node.name, 48)
    apply_manifest(server.api_client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture
def kube_namespace(kube_apiserver: KubeAPIServer, request) -> str:
    """A fresh namespace on the current stacks' server."""
    return fresh_namespace(kube_apiserver, request)


@pytest.fixture
def paper_namespace(paper_apiserver: KubeAPIServer, request) -> str:
    """A fresh namespace on the paper's stacks' server."""
    return fresh_namespace(paper_apiserver, request)
