"""Test helpers live in modules a reader finds by name, not in ``conftest.py`` nor in another
test module.

A ``conftest.py`` is pytest's plugin for its folder: pytest imports it itself, under its
own rules, to register fixtures and hooks. A test that also imports helpers from it ties
itself to that plugin's module name and load order, and hides the helpers where nobody
looks for a library (``tests/apiserver/conftest.py`` once held the stand-in's binaries,
PKI, processes and REST client for 21 files). Fixtures are what a conftest holds; the
helpers are in ``tests/kube/`` and beside the tests that use them.

A test module is a set of tests: one that imports helpers from another runs that module's
imports and module-level code for its own sake, and a reader of the helper's home sees tests,
not a library (``people.py`` once took its pod-spec changes from ``test_default_image.py``, and
16 files their settings sites from ``tests/unit/test_settings.py``). Shared helpers live in
each folder's ``support.py`` or a module named for its concern.

``ALLOWED`` names imports from a conftest that are accepted (none now); an entry whose
import is gone fails too, so that the list never holds a stale exception.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# importer -> the conftest module it may import from (none: helpers live in support modules)
ALLOWED: set[tuple[str, str]] = set()


def _imported_modules(path: Path, repo: Path) -> set[str]:
    """Every module ``path`` imports (and every name it imports from one, which may be a
    module too), relative imports resolved against its package."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = list(path.relative_to(repo).with_suffix("").parts[:-1])
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _imports(repo: Path, target) -> set[tuple[str, str]]:
    """(importer, module) for each Python file under ``repo``/tests and each module it imports
    for which ``target(module, importer's own module)`` names a module."""
    pairs = set()
    for path in sorted((repo / "tests").rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        own = ".".join(path.relative_to(repo).with_suffix("").parts)
        for module in _imported_modules(path, repo):
            found = target(module, own)
            if found is not None:
                pairs.add((path.relative_to(repo).as_posix(), found))
    return pairs


def conftest_imports(repo: Path = REPO) -> set[tuple[str, str]]:
    """(importer, conftest module) for each Python file under ``repo``/tests that imports from a conftest."""
    return _imports(repo, lambda module, own: module if module.split(".")[-1] == "conftest" else None)


def _test_module(module: str, repo: Path) -> str | None:
    """The test module (``tests/.../test_*.py``) ``module`` is or lies in, if any."""
    parts = module.split(".")
    for i, part in enumerate(parts, start=1):
        if part.startswith("test_") and repo.joinpath(*parts[:i]).with_suffix(".py").is_file():
            return ".".join(parts[:i])
    return None


def imports_of_test_modules(repo: Path = REPO) -> set[tuple[str, str]]:
    """(importer, test module) for each Python file under ``repo``/tests that imports from another test module."""
    def other_test_module(module: str, own: str) -> str | None:
        found = _test_module(module, repo)
        return found if found != own else None

    return _imports(repo, other_test_module)


def test_no_test_imports_from_a_conftest():
    found = conftest_imports()
    new, gone = sorted(found - ALLOWED), sorted(ALLOWED - found)
    assert new == [], f"import these from a helper module, not from a conftest: {new}"
    assert gone == [], f"these no longer import from a conftest: drop them from ALLOWED: {gone}"


def tree(root: Path, files: dict[str, str]) -> Path:
    """``root`` with ``tests/area/<name>`` holding each text of ``files``."""
    package = root / "tests" / "area"
    package.mkdir(parents=True)
    for name, text in files.items():
        (package / name).write_text(text)
    return root


def test_the_check_sees_absolute_relative_and_conftest_to_conftest_imports(tmp_path):
    tree(tmp_path, {"conftest.py": "from tests.kube.fixtures import kube_apiserver\nfrom ..x.conftest import y\n",
                    "test_a.py": "from .conftest import HELPER\n",
                    "test_b.py": "from tests.other.conftest import thing\n",
                    "test_c.py": "from tests.other import conftest\n",
                    "other.py": "from tests.kube.rest import api_request\n"})
    assert conftest_imports(tmp_path) == {("tests/area/conftest.py", "tests.x.conftest"),
                                          ("tests/area/test_a.py", "tests.area.conftest"),
                                          ("tests/area/test_b.py", "tests.other.conftest"),
                                          ("tests/area/test_c.py", "tests.other.conftest")}


def test_no_test_imports_helpers_from_another_test_module():
    found = sorted(imports_of_test_modules())
    assert found == [], f"move these helpers into a support module: {found}"


def test_the_check_sees_test_modules_imported_by_name_or_from(tmp_path):
    tree(tmp_path, {"test_home.py": "HELPER = 1\n",
                    "support.py": "from tests.area.test_home import HELPER\n",
                    "test_a.py": "from .test_home import HELPER\n",
                    "test_b.py": "from tests.area import test_home\n",
                    "test_c.py": "from tests.area.support import HELPER\nimport tests.area.test_home_x\n",
                    "test_d.py": "from tests.area.test_d import itself\n"})
    assert imports_of_test_modules(tmp_path) == {("tests/area/support.py", "tests.area.test_home"),
                                             ("tests/area/test_a.py", "tests.area.test_home"),
                                             ("tests/area/test_b.py", "tests.area.test_home")}
