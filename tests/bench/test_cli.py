"""``python -m bench``: the JSON it writes, its table, and that a missed goal is reported."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import cli
from bench.figures import Figure, Goal, Measurement

REPO = Path(__file__).resolve().parents[2]


def test_every_figure_has_a_group_goal_and_both_sides():
    assert list(cli.FIGURES) == ["images_pipeline_vs_model", "images_dask_vs_plain_loop", "images_dask_vs_naive_loop",
                                 "images_scaling_2x1_vs_1x1", "taxi_load_vs_pyarrow", "taxi_train_dask_vs_single",
                                 "taxi_peak_memory_vs_frame", "taxi_scale_default_vs_quick", "images_bf16_vs_fp32"]
    for name in cli.FIGURES:
        fig = cli.make_figure(name)
        assert fig.goal.op in (">=", "<=") and fig.numerator.unit == fig.denominator.unit
        assert fig.holds is None


def test_profiles_are_data_with_both_sizes():
    profiles = cli.load_profiles()
    assert {"quick", "default"} <= set(profiles)
    for profile in profiles.values():
        assert profile["repeats"] >= 1 and {"images", "taxi"} <= set(profile)


def test_unknown_figure_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.build_parser().parse_args(["--only", "nope"])
    assert exit_info.value.code == 2
    assert "unknown figure(s) nope" in capsys.readouterr().err


def _fake_measure(outcome):
    def measure(ctx, names):
        fig = Figure(names[0], "fake", Goal(">=", 0.85), Measurement("a", "img/s", [5.0]),
                     Measurement("b", "img/s", [10.0]))
        if outcome == "error":
            fig.error = "RuntimeError: no cluster"
        return [fig]
    return measure


@pytest.mark.parametrize("check, code", [([], 0), (["--check"], 1)])
def test_a_missed_goal_is_printed_and_written_not_hidden(monkeypatch, tmp_path, capsys, check, code):
    monkeypatch.setattr(cli, "measure", _fake_measure("missed"))
    assert cli.main(["--quick", "--only", "taxi_load_vs_pyarrow", "--output", str(tmp_path)] + check) == code
    out = capsys.readouterr().out
    assert "MISSED" in out and "0 of 1 goals hold; MISSED: taxi_load_vs_pyarrow" in out
    [written] = tmp_path.glob("*.json")
    [record] = json.loads(written.read_text())
    assert record["holds"] is False and record["value"] == 0.5 and record["run"]["profile"] == "quick"


def test_a_figure_that_could_not_be_measured_fails_the_run(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "measure", _fake_measure("error"))
    assert cli.main(["--quick", "--only", "taxi_load_vs_pyarrow", "--output", str(tmp_path)]) == 1
    assert "error: RuntimeError: no cluster" in capsys.readouterr().out
    [written] = tmp_path.glob("*.json")
    assert json.loads(written.read_text())[0]["holds"] is None


def test_results_are_never_overwritten(tmp_path):
    first = cli.write([], {}, tmp_path)
    second = cli.write([], {}, tmp_path)
    assert first != second and json.loads(second.read_text()) == []


@pytest.mark.slow
def test_quick_run_of_one_cheap_figure_writes_the_schema(tmp_path):
    """The real thing, end to end: ``--quick --only taxi_load_vs_pyarrow`` (one repetition)."""
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "taxi_load_vs_pyarrow", "--repeats", "1",
         "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out")],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "taxi_load_vs_pyarrow" in result.stdout and ">= 0.7" in result.stdout
    [written] = (tmp_path / "out").glob("*.json")
    records = json.loads(written.read_text())
    assert isinstance(records, list) and len(records) == 1
    record = records[0]
    assert record["name"] == "taxi_load_vs_pyarrow" and record["goal"] == ">= 0.7"
    assert isinstance(record["holds"], bool) and record["value"] > 0
    for side in ("numerator", "denominator"):
        assert {"name", "value", "unit"} <= set(record[side]) and record[side]["unit"] == "rows/s"
        assert record[side]["value"] > 0 and len(record[side]["samples"]) == 1
    assert record["value"] == pytest.approx(record["numerator"]["value"] / record["denominator"]["value"], rel=1e-3)
    assert record["run"]["profile"] == "quick" and record["run"]["cores"] >= 1
    assert record["notes"]["machine_load"]["other_processes_cores"] is not None
