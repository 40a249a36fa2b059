"""The tables of measured numbers in docs/benchmarks.md quote committed result files: each
column names its file under docs/results/, the results table is ``dask-tkg bench table`` of
those files (each cell the file's value, spread and verdict), and the bounds table is what
each file recorded about its figures' limits. ``python -m tests.docs.tables`` writes both."""
from __future__ import annotations

import json
import re

from bench import registry
from tests.docs import tables
from tests.docs.tables import BOUNDS, DOC, REPO, RESULTS

CELL = re.compile(r"^(?P<value>[-\d.,]+) \((?P<low>[-\d.,]+)-(?P<high>[-\d.,]+)\)(?P<missed> MISSED)?$")


def _rows(markers: tuple[str, str]) -> tuple[list[str], list[list[str]]]:
    block = tables.block(DOC.read_text(encoding="utf-8"), markers)
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in block.splitlines()
            if line.strip().startswith("|")]
    return rows[0], rows[2:]


def test_every_column_names_a_committed_result_file():
    text = DOC.read_text(encoding="utf-8")
    files = tables.columns(text)
    assert files, "the results table names no result file"
    for file in files:
        path = REPO / file
        assert path.is_file(), f"{file} is quoted by {DOC.relative_to(REPO)} but not in the repository"
        assert path.stat().st_size < 200_000, f"{file}: result files are kept small"
    header, _ = _rows(BOUNDS)
    assert [cell.strip("`") for cell in header[3:]] == files, "the bounds table's columns are the results table's"


def test_the_tables_are_what_their_files_give():
    text = DOC.read_text(encoding="utf-8")
    assert tables.render(text) == text, "run: python -m tests.docs.tables"


def test_every_cell_is_the_files_value_spread_and_verdict():
    """Read back independently of the generator: every figure of the suite has a row, with
    its goal, and each cell is its file's record."""
    header, body = _rows(RESULTS)
    figures = registry.figures()
    results = [{r["name"]: r for r in json.loads((REPO / cell.strip("`")).read_text())} for cell in header[2:]]
    assert [row[0].strip("`") for row in body] == list(figures)
    for row in body:
        name = row[0].strip("`")
        assert row[1] == str(figures[name].goal), f"{name}: goal {row[1]} is not the suite's {figures[name].goal}"
        for cell, result in zip(row[2:], results, strict=True):
            if cell == "-":
                assert name not in result or result[name].get("value") is None
                continue
            record, match = result[name], CELL.match(cell)
            assert match, f"{name}: cell {cell!r} is not 'value (low-high)[ MISSED]'"
            assert float(match["value"].replace(",", "")) == float(f"{record['value']:.3g}"), (name, cell)
            low, high = record["spread"]
            assert (float(match["low"]), float(match["high"])) == (float(f"{low:.3g}"), float(f"{high:.3g}")), \
                (name, cell)
            assert bool(match["missed"]) == (record["holds"] is False), (name, cell, record["holds"])


def test_a_changed_file_makes_the_table_stale(tmp_path, monkeypatch):
    """The check can fail: a result file whose value moves is no longer what the table says."""
    text = DOC.read_text(encoding="utf-8")
    first = tables.columns(text)[0]
    records = json.loads((REPO / first).read_text())
    records[0]["value"] = records[0]["value"] * 2
    copy = tmp_path / "docs" / "results" / "changed.json"
    copy.parent.mkdir(parents=True)
    copy.write_text(json.dumps(records))
    monkeypatch.setattr(tables, "REPO", tmp_path)
    for file in tables.columns(text)[1:]:
        (tmp_path / file).write_text((REPO / file).read_text())
    changed = text.replace(f"`{first}`", "`docs/results/changed.json`")
    assert tables.render(changed) != changed


def test_the_documents_quote_no_measured_number_outside_the_tables():
    """Prose gives no measured figure of a result file: every number in docs/benchmarks.md
    outside the generated tables is a setting, a goal or a version, never a value of the
    committed results (three significant digits, as the tables print them)."""
    text = DOC.read_text(encoding="utf-8")
    for markers in (RESULTS, BOUNDS):
        text = text.replace(tables.block(text, markers), "")
    measured = set()
    for file in tables.columns(DOC.read_text(encoding="utf-8")):
        for record in json.loads((REPO / file).read_text()):
            for value in [record.get("value"), *(record.get("spread") or [])]:
                if isinstance(value, (int, float)) and not float(value).is_integer():
                    measured.add(f"{value:.3g}")
    goals = {str(spec.goal).split()[-1] for spec in registry.figures().values()}
    quoted = set(re.findall(r"(?<![\w.-])\d+\.\d+(?![\w.])", text)) & (measured - goals)
    assert not quoted, f"measured values in prose: {sorted(quoted)}"
