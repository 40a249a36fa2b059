"""The project's modules import one another without a cycle and only downward, and ``workloads/``
keeps its top level to the entry points and the modules the Pulumi program imports.

A cycle hidden in a function-level import still couples the two modules both ways (and
``python -m`` of one of them loads the other's copy twice), so every ``import`` counts,
wherever it stands. ``from package import name`` depends on the package's ``__init__``
(the name is looked up there), and on the submodule ``package.name`` where there is one;
``import package.module`` depends on that module. Importing ``a.b.c`` also runs ``a/__init__``
and ``a/b/__init__`` first, so it depends on those packages too, except on the packages the
importer itself lives in (Python has already started them before the importer runs).

The Pulumi program's floors, lowest first, in the order it deploys (a module imports from its own
package or a lower floor, never from a package beside it):

0. ``components.artifacts``: the pinned upstream archives, images and the workers' lock (standard
   library only), and the standard-library modules of ``workloads`` the program shares with the
   runner (``STDLIB_ONLY``);
1. ``components.facts``: the upstream facts, each with its source (support matrices, charts',
   images' and ClusterClass facts, registries' endpoints);
2. ``components.settings``: the stack's settings, read and checked against the facts;
3. ``components.kube``: the Kubernetes builders several resources share (pod hardening, pod
   security, NetworkPolicies, exposure, the prepared environment's pod fragments);
4. ``components.vsphere``: VM classes, storage policies, the Supervisor namespace, the file share;
5. ``components.cluster``: the workload cluster on them;
6. ``components.addons``: what runs in the cluster beside Dask (GPU operator, storage, the Jobs);
7. ``components.dask``: Dask itself (either backend) and the team's spaces;
8. the program, ``__main__.py``, which wires them together (outside the packages checked here).
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.import_graph import (
    FLOORS,
    PACKAGES,
    REPO,
    STDLIB_ONLY,
    WORKLOADS_TOP_LEVEL,
    cycles,
    import_graph,
    package_graph,
    upward_imports,
)


def test_the_project_has_no_import_cycle():
    assert cycles(import_graph(REPO, PACKAGES)) == []


def test_the_program_imports_only_downward():
    assert upward_imports(import_graph(REPO, PACKAGES)) == []


def test_no_two_packages_of_components_import_each_other():
    """Directly or through others: the packages' own graph has no cycle, and every package is a floor."""
    packages = package_graph(import_graph(REPO, PACKAGES))
    assert cycles(packages) == []
    assert set(packages) - {"components"} == set(FLOORS)


def test_two_packages_importing_each_other_through_a_third_are_found():
    graph = {"components.kube.a": {"components.dask.b"}, "components.dask.b": {"components.addons.c"},
             "components.addons.c": {"components.kube.d"}, "components.kube.d": set()}
    assert cycles(package_graph(graph)) == [["components.addons", "components.dask", "components.kube"]]


def test_a_package_beside_another_on_no_floor_below_is_named():
    graph = {"components.addons.dataset_job": {"components.dask.exposure"}, "components.dask.exposure": set()}
    assert upward_imports(graph) == ["components.addons.dataset_job -> components.dask.exposure"]


def test_workloads_top_level_holds_only_entry_points_and_the_programs_imports():
    top_level = {path.stem for path in (REPO / "workloads").glob("*.py")}
    assert top_level - WORKLOADS_TOP_LEVEL == set()


def test_the_modules_the_program_and_the_data_job_load_use_the_standard_library_only():
    for relative in STDLIB_ONLY:
        tree = ast.parse((REPO / relative).read_text(encoding="utf-8"))
        roots = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
        roots |= {node.module.split(".")[0] for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and node.module and not node.level}
        assert roots - set(sys.stdlib_module_names) - {"__future__", "workloads"} == set(), relative


def _package(root: Path, files: dict[str, str]) -> Path:
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    root = _package(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from pkg import b\n",
                               "pkg/b.py": "def f():\n    from pkg.a import x\n", "pkg/c.py": "import pkg.a\n"})
    assert cycles(import_graph(root, ("pkg",))) == [["pkg.a", "pkg.b"]]


def test_a_submodule_importing_its_package_that_imports_it_is_a_cycle(tmp_path):
    root = _package(tmp_path, {"pkg/__init__.py": "from .build import load\n",
                               "pkg/build.py": "from pkg import checks\n", "pkg/checks.py": "",
                               "pkg/other.py": "import pkg.checks as checks\n"})
    assert cycles(import_graph(root, ("pkg",))) == [["pkg", "pkg.build"]]


def test_relative_imports_resolve_against_the_module_package(tmp_path):
    root = _package(tmp_path, {"pkg/__init__.py": "", "pkg/sub/__init__.py": "", "pkg/top.py": "",
                               "pkg/sub/a.py": "from ..top import x\nfrom . import b\n", "pkg/sub/b.py": ""})
    assert import_graph(root, ("pkg",))["pkg.sub.a"] == {"pkg.top", "pkg.sub", "pkg.sub.b"}


def test_importing_a_submodule_depends_on_the_packages_it_runs(tmp_path):
    """settings -> build -> checks -> cluster.manifests -> settings.model: importing
    ``settings.model`` runs ``settings/__init__``, which is still importing ``build``."""
    root = _package(tmp_path, {"pkg/__init__.py": "", "pkg/settings/__init__.py": "from .build import load\n",
                               "pkg/settings/build.py": "from pkg.settings import checks\n",
                               "pkg/settings/checks.py": "def f():\n    from pkg.cluster.manifests import x\n",
                               "pkg/settings/model.py": "", "pkg/cluster/__init__.py": "",
                               "pkg/cluster/manifests.py": "from pkg.settings.model import y\n"})
    graph = import_graph(root, ("pkg",))
    assert graph["pkg.settings.checks"] == {"pkg.cluster", "pkg.cluster.manifests"}
    assert graph["pkg.settings.build"] == {"pkg.settings", "pkg.settings.checks"}
    assert cycles(graph) == [["pkg.cluster.manifests", "pkg.settings", "pkg.settings.build", "pkg.settings.checks"]]


def test_an_import_from_a_higher_layer_is_named():
    graph = {"components.settings.checks": {"components.cluster", "components.cluster.manifests",
                                            "components.artifacts.images", "workloads.prepare"},
             "components.dask.podspec": {"components.settings.model", "workloads.tuning", "workloads.runs.results"},
             "components.artifacts.images": set()}
    assert upward_imports(graph) == ["components.dask.podspec -> workloads.runs.results",
                                     "components.settings.checks -> components.cluster",
                                     "components.settings.checks -> components.cluster.manifests"]
