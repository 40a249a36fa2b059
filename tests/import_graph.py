"""The project's import graph, as the import-graph tests (tests/test_import_graph.py) and the
docs' and one-place tests read it: every module's imports, wherever they stand, and the
program's floors (the order tests/test_import_graph.py's docstring gives)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


PACKAGES = ("components", "workloads", "bench", "policy")


WORKLOADS_TOP_LEVEL = {"__init__", "run", "cli", "prepare", "contract", "tuning"}


STDLIB_ONLY = ("workloads/contract.py", "workloads/tuning.py", "workloads/prepare.py", "workloads/__init__.py",
               "workloads/runs/__init__.py", "workloads/runs/benchmarks.py", "workloads/runs/datasets.py")


FLOORS = ("components.artifacts", "components.facts", "components.settings", "components.kube",
          "components.vsphere", "components.cluster", "components.addons", "components.dask")


LAYERS = {package: rank for rank, package in enumerate(FLOORS)}


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
            rank, own = layer(module), layer(importer)
            outside = rank is None and module.split(".")[0] in PACKAGES
            if outside or (rank is not None and own is not None and rank > own):
                found.append(f"{importer} -> {module}")
    return found


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The imports between the packages of ``components`` (each module counted in its package)."""
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: dict[str, set[str]] = {}
    for importer, modules in graph.items():
        if importer.startswith("components."):
            packages.setdefault(package(importer), set()).update(
                package(m) for m in modules if m.startswith("components.") and package(m) != package(importer))
    return packages
