"""The project's modules import one another without a cycle and only downward, and ``workloads/``
keeps its top level to the entry points and the modules the Pulumi program imports.

A cycle hidden in a function-level import still couples the two modules both ways (and
``python -m`` of one of them loads the other's copy twice), so every ``import`` counts,
wherever it stands. ``from package import name`` depends on the package's ``__init__``
(the name is looked up there), and on the submodule ``package.name`` where there is one;
``import package.module`` depends on that module. Importing ``a.b.c`` also runs ``a/__init__``
and ``a/b/__init__`` first, so it depends on those packages too, except on the packages the
importer itself lives in (Python has already started them before the importer runs).

The Pulumi program's layers, lowest first (a module imports from its own layer or a lower one):

0. ``components.artifacts`` (the pinned upstream archives and image references, standard
   library only) and the standard-library modules of ``workloads`` the program shares with the
   runner (``STDLIB_ONLY``);
1. ``components.settings``: the stack's settings, their checks, and the upstream facts the
   checks need (chart identities, image and driver facts, ClusterClass variables, placement);
2. the resources: ``components.cluster``, ``components.vsphere``, ``components.addons`` and
   ``components.dask``, which read settings and may use one another;
3. the program, ``__main__.py``, which wires them together (outside the packages checked here).
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("components", "workloads", "bench", "policy")
# what users and the data Job start, and the standard-library modules the Pulumi program imports
WORKLOADS_TOP_LEVEL = {"__init__", "run", "cli", "prepare", "contract", "tuning"}
STDLIB_ONLY = ("workloads/contract.py", "workloads/tuning.py", "workloads/prepare.py", "workloads/__init__.py")
RESOURCES = 2
LAYERS = {"components.artifacts": 0, "components.settings": 1, "components.cluster": RESOURCES,
          "components.vsphere": RESOURCES, "components.addons": RESOURCES, "components.dask": RESOURCES}


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    return {module_name(root, path): path for package in packages for path in (root / package).rglob("*.py")}


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` (at ``path``) imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            if base in modules:
                found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules)
    found.discard(name)
    return found | {package for module in found for package in _packages_run(name, module, modules)}


def _packages_run(importer: str, module: str, modules: dict[str, Path]) -> set[str]:
    """The packages whose ``__init__`` importing ``module`` runs, less those ``importer`` is in."""
    parts = module.split(".")
    ancestors = {".".join(parts[:i]) for i in range(1, len(parts))}
    own = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 2)}
    return {package for package in ancestors - own if package in modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    modules = project_modules(root, packages)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def test_the_project_has_no_import_cycle():
    assert cycles(import_graph(REPO, PACKAGES)) == []


def layer(module: str) -> int | None:
    """``module``'s layer (the module docstring's list); None: outside the program's layers."""
    if module in {module_name(REPO, REPO / relative) for relative in STDLIB_ONLY}:
        return 0
    return next((rank for package, rank in LAYERS.items()
                 if module == package or module.startswith(package + ".")), None)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a module into a higher layer, or from the program into ``workloads`` past its
    standard-library modules (the runner is no part of the program)."""
    found = []
    for importer in sorted(name for name in graph if layer(name) is not None):
        for module in sorted(graph[importer]):
            rank = layer(module)
            outside = rank is None and module.split(".")[0] in PACKAGES
            if outside or (rank is not None and rank > layer(importer)):
                found.append(f"{importer} -> {module}")
    return found


def test_the_program_imports_only_downward():
    assert upward_imports(import_graph(REPO, PACKAGES)) == []


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
             "components.dask.podspec": {"components.settings.model", "workloads.tuning", "workloads.runs"},
             "components.artifacts.images": set()}
    assert upward_imports(graph) == ["components.dask.podspec -> workloads.runs",
                                     "components.settings.checks -> components.cluster",
                                     "components.settings.checks -> components.cluster.manifests"]
