"""Each closed choice is compared in one place and each well-known name written once (issue 53):
``daskBackend`` and ``workerEnvironment`` through ``DaskSpec.on_operator`` / ``DaskSpec.prepared``
(settings/model.py), the Dask pods' prepared environment reached from one module of the Dask
floor (podspec.py), and ``nvidia.com/gpu`` and the Dask operator's labels in workloads/contract.py
only. A second spelling is how a backend or role drifts from the other."""
from __future__ import annotations

import ast

from components.settings.model import Backend, WorkerEnvironment
from tests.import_graph import REPO, import_graph

CHOICES = {member.value for member in (*Backend, *WorkerEnvironment)}
WELL_KNOWN = {"nvidia.com/gpu", "dask.org/cluster-name", "dask.org/component"}


def sources(*folders: str) -> dict[str, ast.Module]:
    return {str(path.relative_to(REPO)): ast.parse(path.read_text(encoding="utf-8"))
            for folder in folders for path in sorted((REPO / folder).rglob("*.py"))}


def compared_choices(tree: ast.Module) -> list[str]:
    """``x.backend == "operator"``-like comparisons: an attribute ``backend``/``environment``
    against one of the choices' spellings."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = [s.attr for s in sides if isinstance(s, ast.Attribute) and s.attr in ("backend", "environment")]
            spelt = [s.value for s in sides if isinstance(s, ast.Constant) and s.value in CHOICES]
            if named and spelt:
                found.append(f"line {node.lineno}: {named[0]} against {spelt[0]!r}")
    return found


def written(tree: ast.Module, names: set[str]) -> list[str]:
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in names]


def test_no_module_compares_a_backend_or_environment_by_its_spelling():
    trees = {**sources("components", "workloads"), "__main__.py": ast.parse((REPO / "__main__.py").read_text())}
    found = {path: hits for path, tree in trees.items()
             if (hits := compared_choices(tree)) and path != "components/settings/model.py"}
    assert found == {}


def test_the_well_known_names_are_written_once_in_the_contract():
    places = {path: hits for path, tree in sources("components", "workloads").items()
              if (hits := written(tree, WELL_KNOWN))}
    assert places == {"workloads/contract.py": sorted(WELL_KNOWN, key=["nvidia.com/gpu", "dask.org/cluster-name",
                                                                        "dask.org/component"].index)}


def test_only_podspec_of_the_dask_floor_reaches_the_prepared_environment():
    graph = import_graph(REPO, ("components",))
    reaching = {name for name, imported in graph.items()
                if name.startswith("components.dask.") and "components.kube.prepared_env" in imported}
    assert reaching == {"components.dask.podspec"}


def test_a_comparison_by_spelling_is_found():
    tree = ast.parse('if s.dask.backend != "operator" or d.environment == "prepared":\n    pass\n')
    assert compared_choices(tree) == ["line 1: backend against 'operator'", "line 1: environment against 'prepared'"]
    assert compared_choices(ast.parse("ok = s.dask.on_operator and d.prepared\n")) == []


def test_a_second_spelling_is_found():
    assert written(ast.parse('GPU = "nvidia.com/gpu"\nx = f"requests.{GPU}"\n'), WELL_KNOWN) == ["nvidia.com/gpu"]
