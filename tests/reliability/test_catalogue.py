"""RELIABILITY.md keeps its promises: every row of its tables names a test that exists
(and, for a parametrized one, a parameter id or case the test defines) and that contains
the row's expected message; the bad inputs are counted by code path; no row of "Data
lost" says anything but 0; and the generated parts are those the tables give."""
from __future__ import annotations

import re

import pytest

from . import catalogue
from .catalogue import DOC, REPO

# Summaries: the rows of the other tables name the tests.
SUMMARIES = {"How the runner behaves under faults", "Summary"}


@pytest.fixture(scope="module")
def rows() -> list[catalogue.Row]:
    return [row for row in catalogue.rows() if row.table not in SUMMARIES]


def test_every_row_names_a_test_that_exists(rows):
    checked = 0
    for row in rows:
        assert row.tests, f"RELIABILITY.md:{row.line}: row {row.id} names no test"
        for path, name, parameter, case in row.tests:
            text = (REPO / path).read_text(encoding="utf-8")
            assert re.search(rf"^(async )?def {name}\(", text, re.M), f"{path}::{name} does not exist"
            if parameter:
                assert f'"{parameter}"' in text, f"{path}::{name}[{parameter}]: no such parameter id"
            if case:
                catalogue.strings_of_test(path, name, case)  # raises for a case that is not there
            checked += 1
    assert checked > 150


def test_every_named_test_contains_the_rows_expected_message(rows):
    """A row whose expected cell quotes a message (in backticks or quotes) names only tests
    that hold it; a row that quotes nothing states an outcome (``not listed``), which the
    test asserts as values, and is counted: most rows must quote."""
    unasserted, quoting = [], 0
    for row in rows:
        quoting += bool(catalogue.message_fragments(catalogue.expected_message(row)))
        unasserted += [f"RELIABILITY.md:{row.line}: {row.id}: {problem}" for problem in catalogue.missing_from_tests(row)]
    assert not unasserted, "\n".join(unasserted)
    inputs = catalogue.bad_inputs(rows)
    assert sum(bool(catalogue.message_fragments(catalogue.expected_message(r))) for r in inputs) >= 0.9 * len(inputs)
    assert quoting > 150


def test_the_message_check_can_fail():
    """A row quoting a message its test does not hold is caught; placeholders are not
    required literally, f-string values and regular-expression escapes are read through."""
    strings = catalogue.strings_of_test("tests/reliability/test_bad_inputs.py",
                                        "test_an_unreachable_scheduler_names_the_address_tried")
    assert catalogue.contains(strings, "cannot reach the scheduler at")
    assert catalogue.contains(strings, "within 2 s")
    assert not catalogue.contains(strings, "cannot reach the scheduler in time")
    assert catalogue.message_fragments("`cannot reach <address> within 2 s: ...`") == ["cannot reach", "within 2 s"]
    row = catalogue.Row(catalogue.BAD_INPUTS, "x", {
        "#": "X1", "expected": "`no such message anywhere`",
        "test": "`tests/reliability/test_bad_inputs.py::test_an_unreachable_scheduler_names_the_address_tried`"}, 1)
    assert catalogue.missing_from_tests(row) == [
        "tests/reliability/test_bad_inputs.py::test_an_unreachable_scheduler_names_the_address_tried"
        " lacks ['no such message anywhere']"]


def test_bad_inputs_are_counted_by_code_path(rows):
    inputs = catalogue.bad_inputs(rows)
    assert all(row.cells.get("code path") for row in inputs), [r.id for r in inputs if not r.cells.get("code path")]
    assert len({row.id for row in inputs}) == len(inputs) >= 100
    counts = catalogue.counts(catalogue.rows())
    assert counts["code_paths"] < counts["bad_inputs"]  # literal variants of one path count once
    families = {row.table for row in inputs}
    assert len(families) >= 4 and all(sum(r.table == f for r in inputs) >= 5 for f in families)
    stated = re.search(r"(\d+) inputs in all, in (\d+) families; (\d+) distinct by code path",
                       DOC.read_text(encoding="utf-8"))
    assert stated and tuple(map(int, stated.groups())) == (counts["bad_inputs"], counts["families"],
                                                          counts["code_paths"])


def test_nothing_is_lost(rows):
    lost = [row for row in rows if row.section == "Data lost"]
    assert len(lost) >= 10 and all(row.cells["lost"] == "0" for row in lost)


def test_the_generated_parts_are_up_to_date():
    """The summary and counts as ``python -m tests.reliability.catalogue`` writes them
    (the figures table depends on the last measured run and is not compared)."""
    text = DOC.read_text(encoding="utf-8")
    assert catalogue.render(text, None) == text, "run: python -m tests.reliability.catalogue"


def test_a_row_with_a_missing_column_is_named():
    """A row appended with the old four columns under the five of a bad-input table (no
    code path) is an error naming its line and the columns, not a row silently misread."""
    text = "## Bad inputs tried\n\n### X\n\n| # | bad input | expected | code path | test |\n|---|---|---|---|---|\n" \
           "| X1 | something | `message` | `tests/a.py::test_b` |\n"
    with pytest.raises(ValueError, match=r"^RELIABILITY.md:7: 4 cells under 5 columns \(#, bad input, expected, "
                                         r"code path, test\)$"):
        catalogue.rows(text)
