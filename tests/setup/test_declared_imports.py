"""Every distribution the runner (``workloads/``) imports is declared in pyproject.toml's own
``[project] dependencies``, not only reached through another package's requirements.

tests/setup/test_runner_install.py checks that ``pip install .`` installs each import, through
any chain of requirements; that passes while an import arrives by chance (``kr8s`` only through
dask-kubernetes, ``tornado`` only through distributed and bokeh), and a release of those that
drops or loosens it breaks the runner with no change here. Here each import's distribution
(``importlib.metadata.packages_distributions``) must be named in pyproject.toml itself.
"""
from __future__ import annotations

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = {"workloads", "bench", "components"}
# Imports made only on GPU machines, each from the gpu extra (requirements-gpu.txt), not installed here.
GPU_EXTRA = {"cudf": "cudf-cu12", "dask_cudf": "dask-cudf-cu12", "dask_cuda": "dask-cuda"}
# Imports made only where they exist, never needed: the module, and what the runner does without it.
OPTIONAL = {"nvidia": "nvImageCodec (GPU JPEG decoding); without it the images benchmark decodes with torchvision.io"}


def runner_imports(root: Path = REPO / "workloads") -> dict[str, set[str]]:
    """Top-level third-party modules imported anywhere under ``root`` (module level or in a
    function), with the files that import each."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
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


def declared(pyproject_text: str) -> tuple[set[str], set[str]]:
    """The canonical names of ``[project] dependencies`` and of every optional list."""
    project = tomllib.loads(pyproject_text)["project"]
    optional = [r for extra in project.get("optional-dependencies", {}).values() for r in extra]
    return ({canonicalize_name(Requirement(r).name) for r in project["dependencies"]},
            {canonicalize_name(Requirement(r).name) for r in optional})


def undeclared(imports: dict[str, set[str]], providers: dict[str, list[str]], pyproject_text: str) -> list[str]:
    """Each imported module whose distribution pyproject.toml does not name, with its importers."""
    required, optional = declared(pyproject_text)
    missing = []
    for module, files in sorted(imports.items()):
        if module in OPTIONAL:
            continue
        if module in GPU_EXTRA:
            if canonicalize_name(GPU_EXTRA[module]) not in optional:
                missing.append(f"{module} ({GPU_EXTRA[module]}, the gpu extra)")
            continue
        names = {canonicalize_name(d) for d in providers.get(module, [])}
        if not names & required:
            missing.append(f"{module} (distribution {', '.join(sorted(names)) or '?'}; imported by"
                           f" {', '.join(sorted(files))})")
    return missing


def test_every_distribution_the_runner_imports_is_declared_in_pyproject():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    missing = undeclared(runner_imports(), metadata.packages_distributions(), text)
    assert missing == [], "imported by workloads/ but not in pyproject.toml [project] dependencies: " + "; ".join(
        missing)


def test_an_import_reached_only_through_another_package_is_named():
    text = '[project]\ndependencies = ["distributed==1"]\n[project.optional-dependencies]\ngpu = ["dask-cuda==2"]\n'
    imports = {"tornado": {"workloads/a.py"}, "distributed": {"workloads/a.py"}, "dask_cuda": {"workloads/b.py"},
               "nvidia": {"workloads/c.py"}}
    providers = {"tornado": ["tornado"], "distributed": ["distributed"]}
    assert undeclared(imports, providers, text) == ["tornado (distribution tornado; imported by workloads/a.py)"]


def test_the_lists_above_stay_true():
    """The GPU modules are not installed here (else they would be checked as requirements), and
    the optional one is imported somewhere."""
    providers = metadata.packages_distributions()
    imports = runner_imports()
    assert [m for m in GPU_EXTRA if m in providers] == []
    assert set(GPU_EXTRA) | set(OPTIONAL) <= set(imports)
