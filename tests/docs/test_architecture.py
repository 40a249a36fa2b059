"""docs/architecture.md draws the floors the import-graph test holds: the same packages, in the same
order, each folder it names there."""
from __future__ import annotations

import re

from tests.import_graph import FLOORS, REPO

PAGE = REPO / "docs" / "architecture.md"
FLOOR_LINE = re.compile(r"^\d+\s+(components/[a-z_]+)/\s", re.M)


def drawn_floors(text: str) -> list[str]:
    """The packages of the drawing's numbered lines, lowest first."""
    return [folder.replace("/", ".") for folder in reversed(FLOOR_LINE.findall(text))]


def test_the_page_draws_the_tested_floors_in_order():
    assert drawn_floors(PAGE.read_text(encoding="utf-8")) == list(FLOORS)


def test_every_folder_the_page_names_exists():
    named = set(re.findall(r"\b((?:components|workloads)/[\w/]+(?:\.py)?)", PAGE.read_text(encoding="utf-8")))
    assert named and {name for name in named if not (REPO / name).exists()} == set()


def test_the_drawing_is_read_lowest_first():
    text = "1  components/settings/   x\n0  components/facts/   y\n"
    assert drawn_floors(text) == ["components.facts", "components.settings"]
