"""`pip install .` gives a runner that drives a stack: every package the runner imports comes
with the wheel's requirements, and the installed wheel, in a venv holding nothing else, runs
the port-forward path's imports and both commands' ``--help`` (before, ``kubernetes`` was
only in the test extra and the port-forward to a ClusterIP scheduler failed with
ModuleNotFoundError).

No network: the wheel is built and installed with ``--no-index``, its dependencies linked in
from this venv (tests/setup/runner_install.py says how and why that is what pip would give)."""
from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from .runner_install import REPO, clean_env, closure, install_offline, run, runtime_requirements

PROJECT_PACKAGES = ("workloads", "bench")
# Imports the runner makes only where they exist, each with where it comes from instead.
OPTIONAL_IMPORTS = {
    "cudf": "the gpu extra (requirements-gpu.txt): the taxi benchmark's cuDF backend",
    "dask_cudf": "the gpu extra: the taxi benchmark's cuDF backend",
    "dask_cuda": "the gpu extra: a local CUDA cluster",
    "nvidia": "nvImageCodec, GPU JPEG decoding; without it the images benchmark decodes with torchvision.io",
}
# The port-forward path (workloads/cluster/port_forward.py) and the operator backend's scaling
# (workloads/cluster/scaling.py), imported as they import them.
PORT_FORWARD_IMPORTS = """
import workloads.cluster.port_forward as forward
from kubernetes import config
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import portforward
import kubernetes.client, kubernetes.config
import workloads.cluster.scaling
kubeconfig = '''
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: dask}}]
current-context: x
'''
client = forward.api_client(kubeconfig)
print(type(client).__module__, forward.__file__)
"""


def third_party_imports() -> dict[str, set[str]]:
    """Top-level modules outside the standard library that workloads/ and bench/ import
    (at module level or inside functions), with the files that import each."""
    found: dict[str, set[str]] = {}
    for package in PROJECT_PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for top in {name.split(".")[0] for name in names}:
                    if top not in sys.stdlib_module_names and top not in PROJECT_PACKAGES:
                        found.setdefault(top, set()).add(path.relative_to(REPO).as_posix())
    return found


def test_every_package_the_runner_imports_is_a_requirement_of_the_wheel():
    installed, unmet = closure(runtime_requirements())
    assert not unmet, unmet
    providers = metadata.packages_distributions()
    missing = []
    for module, files in sorted(third_party_imports().items()):
        if module in OPTIONAL_IMPORTS:
            continue
        names = {canonicalize_name(d) for d in providers.get(module, [])}
        if not names & set(installed):
            missing.append(f"{module} (distribution {', '.join(sorted(names)) or '?'}; imported by "
                           f"{', '.join(sorted(files))})")
    assert not missing, "imported by the runner but not installed by `pip install .`: " + "; ".join(missing)


def test_the_optional_imports_are_not_requirements():
    """The list above stays true: an optional import that became a requirement leaves it."""
    installed, _ = closure(runtime_requirements())
    providers = metadata.packages_distributions()
    required = [m for m in OPTIONAL_IMPORTS if m != "nvidia"
                and {canonicalize_name(d) for d in providers.get(m, [])} & set(installed)]
    assert required == []


@pytest.fixture(scope="module")
def installed_bin(tmp_path_factory) -> Path:
    return install_offline(tmp_path_factory.mktemp("wheel"))


def test_the_installed_wheel_runs_the_port_forward_imports(installed_bin, tmp_path):
    out = run([str(installed_bin / "python"), "-I", "-c", PORT_FORWARD_IMPORTS], tmp_path)
    module, where = out.split()
    assert module.startswith("kubernetes.client")
    assert Path(where).is_relative_to(installed_bin.parent), f"the checkout leaked in: {where}"


@pytest.mark.parametrize("command", [["dask-tkg", "run", "--help"], ["python", "-I", "-m", "workloads.run", "--help"],
                                     ["dask-tkg", "report", "--help"]], ids=" ".join)
def test_the_installed_commands_answer_help(installed_bin, tmp_path, command):
    out = run([str(installed_bin / command[0]), *command[1:]], tmp_path)
    assert "usage:" in out and ("--data-dir" in out or "RESULTS_DIR" in out)


def test_the_installed_venv_holds_no_test_only_package(installed_bin, tmp_path):
    """What the venv would not have after `pip install .`: pytest and the Pulumi SDK."""
    probe = "import importlib.util as u; print([m for m in ('pytest', 'pulumi') if u.find_spec(m)])"
    assert run([str(installed_bin / "python"), "-I", "-c", probe], tmp_path).strip() == "[]"
    assert clean_env().get("PYTHONNOUSERSITE") == "1"
