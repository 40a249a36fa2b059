"""Pulumi.yaml's pointers into the documents lead somewhere: each names a file of the
repository and, in quotes, a section heading that file has. Sections move (the README's
deployment details went to docs/deploy.md), and a description is what `pulumi config` users
read first."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PULUMI_YAML = REPO / "Pulumi.yaml"
# README, README.md, docs/<name>.md, policy/README.md; then optionally ", <section>" up to ")"
# or " (<section>)".
POINTER = re.compile(r"\b((?:docs|policy)/[\w.-]+\.md|README(?:\.md)?)\b(?:,\s*([^)]*)|\s+\(([^)]*)\))?")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)


def pointers(text: str) -> list[tuple[int, str, str | None]]:
    """(line, file, the section text after the comma or None) of every pointer in ``text``."""
    found = []
    for number, line in enumerate(text.replace('\\"', '"').splitlines(), 1):
        for match in POINTER.finditer(line):
            found.append((number, match[1], match[2] if match[2] is not None else match[3]))
    return found


def problems(text: str) -> list[str]:
    out = []
    for number, name, section in pointers(text):
        path = REPO / ("README.md" if name == "README" else name)
        where = f"Pulumi.yaml:{number}: {name}"
        if not path.is_file():
            out.append(f"{where}: no such file")
            continue
        quoted = re.fullmatch(r"\s*[\"'](.+?)[\"']\s*", section or "")
        if quoted is None:
            out.append(f"{where}: names no section in quotes ({section!r}); say which heading, e.g. "
                       f"({name}, \"<heading>\")")
            continue
        headings = [h.strip("`") for h in HEADING.findall(path.read_text(encoding="utf-8"))]
        if quoted[1] not in headings:
            out.append(f"{where}: has no section {quoted[1]!r}")
    return out


def test_every_pointer_of_pulumi_yaml_names_a_section_that_exists():
    assert pointers(PULUMI_YAML.read_text(encoding="utf-8")), "no pointer found: the pattern is wrong"
    assert problems(PULUMI_YAML.read_text(encoding="utf-8")) == []


def test_the_pointer_check_can_fail():
    text = ('# see (README, "Defaults, and why") and (see README)\n'
            'description: "x (docs/deploy.md, \\"The vCenter account\\") (docs/nowhere.md, \\"A\\")"\n'
            'description: "the role in docs/deploy.md (\\"The vCenter account\\"), naming any it lacks"\n')
    found = problems(text)
    assert any("README: has no section 'Defaults, and why'" in p for p in found)
    assert any("README: names no section in quotes" in p for p in found)
    assert any("docs/nowhere.md: no such file" in p for p in found)
    assert not any("The vCenter account" in p for p in found)
