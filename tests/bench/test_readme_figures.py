"""The README's benchmark results table quotes committed result files: each column names
its file under docs/results/, and each cell is that file's value (spread, verdict)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from bench import cli
from bench.figures import _short

REPO = Path(__file__).resolve().parents[2]
TABLE_START = "<!-- bench-results -->"
TABLE_END = "<!-- /bench-results -->"
CELL = re.compile(r"^(?P<value>[-\d.,]+) \((?P<low>[-\d.,]+)-(?P<high>[-\d.,]+)\)(?P<missed> MISSED)?$")


def readme_table() -> tuple[list[str], list[list[str]]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert TABLE_START in text and TABLE_END in text, "README has no bench-results table"
    block = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in block.splitlines()
            if line.strip().startswith("|")]
    header, body = rows[0], [row for row in rows[2:]]
    return header, body


def test_every_column_names_a_committed_result_file():
    header, _ = readme_table()
    files = [re.fullmatch(r"`(docs/results/[^`]+\.json)`", cell) for cell in header[2:]]
    assert files and all(files), header
    for match in files:
        path = REPO / match.group(1)
        assert path.is_file(), f"{path} is quoted by the README but not in the repository"
        assert path.stat().st_size < 200_000, f"{path}: result files are kept small"


def test_every_cell_is_the_files_value_spread_and_verdict():
    header, body = readme_table()
    results = [{r["name"]: r for r in json.loads((REPO / cell.strip("`")).read_text())} for cell in header[2:]]
    assert {row[0].strip("`") for row in body} == set(cli.FIGURES)
    for row in body:
        name = row[0].strip("`")
        assert row[1] == cli.FIGURES[name][2], f"{name}: goal {row[1]} is not the suite's {cli.FIGURES[name][2]}"
        for cell, result in zip(row[2:], results):
            if cell == "-":
                assert name not in result
                continue
            record = result[name]
            match = CELL.match(cell)
            assert match, f"{name}: cell {cell!r} is not 'value (low-high)[ MISSED]'"
            assert match["value"] == _short(record["value"]), (name, cell, record["value"])
            assert (match["low"], match["high"]) == tuple(_short(v) for v in record["spread"]), (name, cell)
            assert bool(match["missed"]) == (record["holds"] is False), (name, cell, record["holds"])
