"""RELIABILITY.md keeps its promises: every row of its tables names a test that exists
(and, for a parametrized one, a parameter id the test file defines), the bad-input
catalogue holds at least 25 distinct inputs in the four families, and no row of "Data
lost" says anything but 0."""
from __future__ import annotations

import re

from .conftest import REPO

DOC = REPO / "RELIABILITY.md"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)(?:\[([^\]]+)\])?`")


def sections() -> dict[str, list[list[str]]]:
    """Heading -> the cells of each body row of the tables under it."""
    found: dict[str, list[list[str]]] = {}
    heading = ""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("|") and not re.match(r"^\|[\s|:-]+\|$", line):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            found.setdefault(heading, []).append(cells)
    return {name: rows[1:] for name, rows in found.items()}  # less each table's header


def test_every_row_names_a_test_that_exists():
    checked = 0
    for heading, rows in sections().items():
        if heading == "How the runner behaves under faults":
            continue  # a summary; the rows below name the tests
        for cells in rows:
            references = REFERENCE.findall(cells[-1])
            assert references, f"{heading}: row {cells[0]} names no test"
            for path, name, parameter in references:
                text = (REPO / path).read_text(encoding="utf-8")
                assert re.search(rf"^(async )?def {name}\(", text, re.M), f"{path}::{name} does not exist"
                if parameter:
                    assert f'"{parameter}"' in text, f"{path}::{name}[{parameter}]: no such parameter id"
                checked += 1
    assert checked > 100


def test_at_least_25_distinct_bad_inputs_in_four_families():
    catalogue = {name: rows for name, rows in sections().items()
                 if name in ("Image files (the images benchmark)", "Taxi files (the taxi benchmark)",
                             "Stack outputs and the cluster address", "Settings (`pulumi preview`)")}
    assert len(catalogue) == 4 and all(len(rows) >= 5 for rows in catalogue.values())
    rows = [cells for family in catalogue.values() for cells in family]
    assert len({cells[0] for cells in rows}) == len(rows) >= 25
    assert len({cells[1] for cells in rows}) >= 25
    stated = re.search(r"(\d+) in all, in four families", DOC.read_text(encoding="utf-8"))
    assert stated and int(stated.group(1)) == len(rows)


def test_nothing_is_lost():
    rows = sections()["Data lost"]
    assert rows and all(cells[1] == "0" for cells in rows)
