"""docs/reliability.md keeps its promises: every row of its tables names a test that exists
(and, for a parametrized one, a parameter id or case the test defines) and that contains
the row's expected message; the bad inputs are counted by code path; no row of "Data
lost" says anything but 0; and the generated parts are those the tables and the committed
figures file give, regenerated without losing a row."""
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
        assert row.tests, f"{catalogue.DOC_NAME}:{row.line}: row {row.id} names no test"
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
        unasserted += [f"{catalogue.DOC_NAME}:{row.line}: {row.id}: {problem}"
                       for problem in catalogue.missing_from_tests(row)]
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
    """The summary, the counts and the figures as ``python -m tests.reliability.catalogue`` writes
    them from the tables and the committed figures file (what ``--check`` compares)."""
    text = DOC.read_text(encoding="utf-8")
    assert catalogue.render(text, None) == text, "run: python -m tests.reliability.catalogue"
    figures = catalogue.load_figures(catalogue.FIGURES)
    assert figures is not None, f"{catalogue.FIGURES.relative_to(REPO)} is committed with the document"
    assert catalogue.render(text, figures) == text, "run: python -m tests.reliability.catalogue"
    assert catalogue.main(["--check"]) == 0


def test_the_document_quotes_the_committed_figures():
    """Every number of the figures table is the committed file's, rounded as shown."""
    figures = catalogue.load_figures(catalogue.FIGURES)
    written = {catalogue._label(row): catalogue._cells(row)[1] for row in catalogue._block_rows(DOC.read_text())}
    assert set(written) == {label for label, _, _ in catalogue.FIGURE_ROWS}
    for label, value, _ in catalogue.FIGURE_ROWS:
        assert written[label] == value(figures), label
    assert catalogue.FIGURES.is_relative_to(REPO / "docs" / "results")


def test_regenerating_loses_no_row():
    """A figure the file lacks keeps the document's row, a row written by hand between the
    markers stays in its place, and a second regeneration changes nothing."""
    text = DOC.read_text(encoding="utf-8")
    figures = catalogue.load_figures(catalogue.FIGURES)
    hand = ("| a figure kept by hand | 1.00 s"
            " | `tests/reliability/test_interrupts.py::test_a_lost_scheduler_fails_the_run_naming_it` |")
    begin, end = catalogue.FIGURES_BLOCK
    head, rest = text.split(begin + "\n", 1)
    block, tail = rest.split(end, 1)
    lines = block.splitlines()
    with_hand = head + begin + "\n" + "\n".join([*lines[:3], hand, *lines[3:]]) + "\n" + end + tail
    partial = {key: value for key, value in figures.items() if key != "taxi_kill"}
    once = catalogue.render(with_hand, partial)
    assert once == with_hand  # the taxi rows kept as written, the hand row in its place
    assert catalogue.render(once, partial) == once
    assert catalogue.render(with_hand, {}) == with_hand


def test_record_takes_a_runs_figures_over_the_committed_ones():
    """``--record``: what the run measured replaces the committed value, the rest is kept."""
    committed = {"images_kill": {"recovery_s": 1.0}, "SIGINT_process_ended_after_s": 2.0}
    assert catalogue.merge(committed, {"SIGINT_process_ended_after_s": 0.5}) == {
        "images_kill": {"recovery_s": 1.0}, "SIGINT_process_ended_after_s": 0.5}
    with pytest.raises(SystemExit) as refused:  # --record writes: never with --check
        catalogue.main(["--record", "test-artifacts/reliability-figures.json", "--check"])
    assert refused.value.code == 2

def test_a_row_with_a_missing_column_is_named():
    """A row appended with the old four columns under the five of a bad-input table (no
    code path) is an error naming its line and the columns, not a row silently misread."""
    text = "## Bad inputs tried\n\n### X\n\n| # | bad input | expected | code path | test |\n|---|---|---|---|---|\n" \
           "| X1 | something | `message` | `tests/a.py::test_b` |\n"
    with pytest.raises(ValueError, match=r"^docs/reliability.md:7: 4 cells under 5 columns \(#, bad input, expected, "
                                         r"code path, test\)$"):
        catalogue.rows(text)
