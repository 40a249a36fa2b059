"""``dask-tkg bench`` (``python -m bench``): the JSON it writes, its table, that a missed
goal is reported, and every subcommand's ``--help``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import cli, registry, results, suite
from bench.figures import Figure, Goal, Measurement
from workloads.core.commands import PROG_ENV

REPO = Path(__file__).resolve().parents[2]


def test_every_figure_has_a_group_goal_and_both_sides():
    assert list(registry.figures()) == ["images_pipeline_vs_model", "images_dask_vs_plain_loop",
                                        "images_dask_vs_naive_loop", "images_scaling_2x1_vs_1x1", "images_bf16_vs_fp32",
                                        "taxi_load_vs_pyarrow", "taxi_train_dask_vs_single",
                                        "taxi_peak_memory_vs_frame", "taxi_scale_default_vs_quick"]
    for name, spec in registry.figures().items():
        fig = registry.make_figure(name)
        assert spec.group in ("images", "taxi") and str(fig.goal) == str(Goal.parse(spec.goal))
        assert fig.goal.op in (">=", "<=") and fig.numerator.unit == fig.denominator.unit == spec.unit
        assert fig.holds is None


def test_a_figure_definition_is_frozen():
    spec = registry.figures()["taxi_load_vs_pyarrow"]
    with pytest.raises(AttributeError):
        spec.goal = ">= 0"


def test_profiles_are_data_with_both_sizes():
    profiles = registry.load_profiles()
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
    monkeypatch.setattr(suite, "measure", _fake_measure("missed"))
    assert cli.main(["--quick", "--only", "taxi_load_vs_pyarrow", "--output", str(tmp_path), *check]) == code
    out = capsys.readouterr().out
    assert "MISSED" in out and "0 of 1 goals hold; MISSED: taxi_load_vs_pyarrow" in out
    [written] = tmp_path.glob("*.json")
    [record] = json.loads(written.read_text())
    assert record["holds"] is False and record["value"] == 0.5 and record["run"]["profile"] == "quick"


def test_a_figure_that_could_not_be_measured_fails_the_run(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(suite, "measure", _fake_measure("error"))
    assert cli.main(["--quick", "--only", "taxi_load_vs_pyarrow", "--output", str(tmp_path)]) == 1
    assert "error: RuntimeError: no cluster" in capsys.readouterr().out
    [written] = tmp_path.glob("*.json")
    assert json.loads(written.read_text())[0]["holds"] is None


def test_results_are_never_overwritten(tmp_path):
    first = results.write([], {}, tmp_path)
    second = results.write([], {}, tmp_path)
    assert first != second and json.loads(second.read_text()) == []


def test_results_default_to_a_folder_in_the_current_directory(monkeypatch, tmp_path, capsys):
    """Outside the package, beside the runner's results/; the committed ones are written to
    docs/results/ by ``make bench`` (--output)."""
    monkeypatch.setattr(suite, "measure", _fake_measure("missed"))
    monkeypatch.chdir(tmp_path)
    assert cli.build_parser().parse_args([]).output == str(Path("results") / "bench")
    assert cli.main(["--quick", "--only", "taxi_load_vs_pyarrow"]) == 0
    [written] = (tmp_path / "results" / "bench").glob("*.json")
    assert f"written to {Path('results') / 'bench' / written.name}" in capsys.readouterr().out
    assert "--output docs/results" in (REPO / "Makefile").read_text()


def _subcommand_id(command: str) -> str:
    return f"bench-{command}"  # a bare "gpu" id would read as the gpu marker (tests/conftest.py)


@pytest.mark.parametrize("command", sorted(cli.all_commands()), ids=_subcommand_id)
def test_every_subcommand_has_its_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m bench {command} ")


def test_the_measuring_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "DASK_TKG__CACHE" in out and "DASK_TKG_CACHE" not in out
    for command in cli.all_commands():
        assert f"\n  {command} " in out


@pytest.mark.parametrize("command", ["gpu", "compare", "taxi-limits"], ids=_subcommand_id)
def test_through_dask_tkg_the_help_names_dask_tkg_bench(command, monkeypatch, capsys):
    """``dask-tkg bench <sub>`` shows itself by that name (workloads.cli sets it for the
    subcommand it dispatches to)."""
    monkeypatch.setenv(PROG_ENV, "dask-tkg bench")
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    assert capsys.readouterr().out.startswith(f"usage: dask-tkg bench {command} ")


@pytest.mark.parametrize("argv, usage", [(["bench", "gpu", "--help"], "usage: dask-tkg bench gpu "),
                                         (["bench", "--help"], "usage: dask-tkg bench ")],
                         ids=["bench-gpu-help", "bench-help"])
def test_the_project_command_dispatches_to_the_suite(argv, usage, tmp_path):
    """From a directory outside the checkout, as a user runs it (.venv/bin/dask-tkg puts
    the checkout on PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(PROG_ENV, None)
    result = subprocess.run([sys.executable, "-m", "workloads.cli", *argv], check=False, cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(usage)


def test_python_m_bench_gpu_help_runs_outside_the_checkout(tmp_path):
    """What bench/gpu.sh starts on the GPU machine (no dask-tkg command there)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(PROG_ENV, None)
    result = subprocess.run([sys.executable, "-m", "bench", "gpu", "--help"], check=False, cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m bench gpu ") and "--cpu-dry-run" in result.stdout


@pytest.mark.slow
def test_quick_run_of_one_cheap_figure_writes_the_schema(tmp_path):
    """The real thing, end to end: ``--quick --only taxi_load_vs_pyarrow`` (one repetition)."""
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "taxi_load_vs_pyarrow", "--repeats", "1",
         "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out")],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=600)
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
