"""Each default is written once, in ``Pulumi.yaml``: ``pulumi config`` shows it, the CLI applies
it, and the settings reader applies the same block under the unit-test mocks
(``components/settings/schema.py``). A field of ``components/settings/model.py`` that the
readers fill from a setting gives no default of its own: a second copy drifts (the model once
said ``daskBackend`` ``helm`` and ``podSecurityDefault`` empty, while Pulumi.yaml said
``operator`` and ``baseline``)."""
from __future__ import annotations

import ast
from pathlib import Path

from components.settings.schema import project

SETTINGS = Path(__file__).resolve().parents[2] / "components" / "settings"


def field_defaults(source: str) -> dict[tuple[str, str], str]:
    """(dataclass, field) -> the default it is written with, for every field that has one."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                        and statement.value is not None and _gives_a_default(statement.value)):
                    found[(node.name, statement.target.id)] = ast.unparse(statement.value)
    return found


def _gives_a_default(value: ast.expr) -> bool:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "field":
        return any(keyword.arg in ("default", "default_factory") for keyword in value.keywords)
    return True


def settings_read(sources: list[str], classes: set[str], declared: set[str]) -> dict[tuple[str, str], list[str]]:
    """(dataclass, field) -> the declared settings whose value a reader passes to that field."""
    found: dict[tuple[str, str], list[str]] = {}
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes:
                for keyword in node.keywords:
                    keys = [c.value for call in ast.walk(keyword.value) if isinstance(call, ast.Call)
                            for c in call.args[:1] if isinstance(c, ast.Constant) and c.value in declared]
                    if keys and keyword.arg is not None:
                        found[(node.func.id, keyword.arg)] = keys
    return found


def written_twice(model: str, readers: list[str], declared: set[str]) -> list[str]:
    defaults = field_defaults(model)
    read = settings_read(readers, {cls for cls, _ in defaults}, declared)
    return [f"{cls}.{name} = {defaults[(cls, name)]} (the default of {', '.join(read[(cls, name)])} in Pulumi.yaml)"
            for cls, name in sorted(set(defaults) & set(read))]


def test_no_setting_has_a_second_default_in_the_model():
    readers = [path.read_text() for path in sorted(SETTINGS.glob("*.py")) if path.name != "model.py"]
    declared = set(project()[1])
    assert written_twice((SETTINGS / "model.py").read_text(), readers, declared) == []


def test_a_default_written_twice_is_named():
    model = ("@dataclass\nclass Spec:\n    name: str\n    backend: str = 'helm'\n"
             "    secret: Any = field(default=None, repr=False)\n    shown: Any = field(repr=False)\n")
    reader = "def read(r):\n    return Spec(name=r('name'), backend=r.one_of('daskBackend', 'a'), secret=r('key'))\n"
    assert written_twice(model, [reader], {"name", "daskBackend", "key"}) == [
        "Spec.backend = 'helm' (the default of daskBackend in Pulumi.yaml)",
        "Spec.secret = field(default=None, repr=False) (the default of key in Pulumi.yaml)"]
