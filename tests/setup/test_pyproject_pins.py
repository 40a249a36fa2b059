"""pyproject.toml's pins are requirements*.txt's: one version per package, whichever way it is
installed (`pip install .[program]` or the README's commands, which install the files)."""
from __future__ import annotations

import tomllib
from pathlib import Path

from tests.requirements import pins, pins_of

REPO = Path(__file__).resolve().parents[2]
FILES = ("requirements.txt", "requirements-test.txt", "requirements-gpu.txt")


def pyproject_pins(text: str) -> dict[str, str]:
    """The ``==`` pins of ``[project] dependencies`` and every optional list, by lower-case name."""
    project = tomllib.loads(text)["project"]
    lines = [*project["dependencies"], *(d for extra in project.get("optional-dependencies", {}).values()
                                          for d in extra)]
    return pins_of(lines)


def differences(pyproject_text: str, files: dict[str, dict[str, str]]) -> list[str]:
    """Each pyproject pin that no requirements file holds, or holds at another version."""
    problems = []
    for name, version in sorted(pyproject_pins(pyproject_text).items()):
        held = {f: p[name] for f, p in files.items() if name in p}
        if not held:
            problems.append(f"{name}=={version}: in no requirements file")
        problems += [f"{name}=={version}: {f} pins {v}" for f, v in held.items() if v != version]
    return problems


def test_every_pyproject_pin_is_the_requirements_files_pin():
    files = {name: pins(REPO / name) for name in FILES}
    assert differences((REPO / "pyproject.toml").read_text(), files) == []


def test_a_drifted_or_unlisted_pin_is_named():
    text = '[project]\ndependencies = ["a==1"]\n[project.optional-dependencies]\nx = ["b[y]==2", "c>=3"]\n'
    assert differences(text, {"r.txt": {"a": "1", "b": "2"}}) == []
    assert differences(text, {"r.txt": {"a": "1", "b": "3"}}) == ["b==2: r.txt pins 3"]
    assert differences(text, {"r.txt": {"b": "2"}}) == ["a==1: in no requirements file"]
