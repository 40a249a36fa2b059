"""``dask-tkg bench compare A.json B.json``: the figure-by-figure change between two result
files; ``dask-tkg bench table FILE.json...``: the README's table of them."""
from __future__ import annotations

import json

from bench import cli, registry, results
from bench.figures import Figure, Goal, Measurement


def _figure(name: str, num: list[float], den: list[float], goal: str = ">= 1.0") -> Figure:
    return Figure(name, name, Goal.parse(goal), Measurement("a", "img/s", num), Measurement("b", "img/s", den))


def test_compare_prints_each_figures_change_spread_and_verdicts(tmp_path, capsys):
    before = results.write([_figure("pipeline", [8, 9, 10], [10, 10, 10]), _figure("gone", [1], [1])], {}, tmp_path,
                           "a-")
    after = results.write([_figure("pipeline", [11, 12, 10], [10, 10, 10]), _figure("new", [3], [1])], {}, tmp_path,
                          "b-")
    assert cli.main(["compare", str(before), str(after)]) == 0
    lines = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines() if line.strip()}
    # pipeline: median ratio 0.9 -> 1.1 (+22.2%), spread 0.8-1 -> 1-1.2, MISSED -> holds
    assert lines["pipeline"][1:] == [">=", "1", "0.9", "1.1", "+22.2%", "0.8-1", "1-1.2", "MISSED", "holds", "10", "->",
                                     "10"]
    assert lines["gone"][3:5] == ["1", "-"] and lines["new"][3:5] == ["-", "3"]
    assert " ".join(lines["A:"]) == f"A: {before} (1 of 2 goals hold)"
    assert " ".join(lines["B:"]) == f"B: {after} (2 of 2 goals hold)"


def test_compare_names_a_file_that_is_not_a_result(tmp_path, capsys):
    good = results.write([_figure("f", [1], [1])], {}, tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "f"}))
    assert cli.main(["compare", str(good), str(bad)]) == 2
    assert f"error: {bad}: expected a list of figures, got dict" in capsys.readouterr().err
    assert cli.main(["compare", str(good), str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err


def test_spread_is_stored_and_printed(tmp_path):
    figure = _figure("f", [8, 12, 10], [10, 10, 10])
    assert figure.spread == (0.8, 1.2)
    [record] = json.loads(results.write([figure], {}, tmp_path).read_text())
    assert record["spread"] == [0.8, 1.2] and record["value"] == 1.0
    from bench.figures import render

    assert "0.8-1.2" in render([figure]).splitlines()[2]


def test_table_has_a_row_per_figure_and_a_column_per_file(tmp_path, capsys):
    first = results.write([_figure("taxi_load_vs_pyarrow", [8, 9, 10], [10, 10, 10], ">= 0.7")], {}, tmp_path, "a-")
    second = results.write([_figure("taxi_load_vs_pyarrow", [5, 6, 7], [10, 10, 10], ">= 0.7")], {}, tmp_path, "b-")
    assert cli.main(["table", str(first), str(second)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"| figure | goal | `{first.as_posix()}` | `{second.as_posix()}` |"
    assert len(lines) == 2 + len(registry.figures())
    assert "| `taxi_load_vs_pyarrow` | >= 0.7 | 0.9 (0.8-1) | 0.6 (0.5-0.7) MISSED |" in lines
    assert "| `images_bf16_vs_fp32` | >= 2.5 | - | - |" in lines


def test_table_names_a_file_that_is_not_a_result(tmp_path, capsys):
    assert cli.main(["table", str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err
