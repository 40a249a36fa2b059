"""A benchmark is one folder behind the registry: a third one, kept in
``tests/workloads/third_benchmark/`` (protocol module, profiles, bench package) and
registered by one line, runs through the runner on a local Dask cluster (its preflight
check included), appears in the report's tables and figures, and in the bench suite."""
from __future__ import annotations

import json
from pathlib import Path

import dask
import pytest

from bench import cli as bench_cli
from bench import registry
from workloads import run
from workloads.runs import benchmarks, results

from .third_benchmark import benchmark as third

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def registered(monkeypatch, tmp_path):
    """The third benchmark's one registry line (and a cache of this test's own)."""
    monkeypatch.setitem(benchmarks.BENCHMARKS, "third", "tests.workloads.third_benchmark.benchmark")
    with dask.config.set({"tkg.cache": str(tmp_path / "cache")}):
        yield

def local_run(tmp_path, *extra: str) -> int:
    return run.main(["--local", "--benchmark", "third", "--profile", "smoke", "--workers", "1,2", "--device", "cpu",
                     "--dashboard-address", ":0", "--output", str(tmp_path / "out"), "--no-performance-report",
                     *extra])

def test_it_runs_through_the_runner_and_shows_in_the_report(registered, tmp_path, capsys):
    assert local_run(tmp_path) == 0, capsys.readouterr().err
    records = results.read_records(tmp_path / "out")
    assert [(r["benchmark"], r["status"], r["config"]["workers"]) for r in records] == [
        ("third", "succeeded", 1), ("third", "succeeded", 2)]
    assert all(r["metrics"]["numbers"] == 400 and r["metrics"]["error"] == 0 for r in records)
    assert all(r["config"]["data_generated"] for r in records)
    out = capsys.readouterr().out
    assert "numbers_per_second=" in out  # the terminal summary shows its headline metrics
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    figures = {p.name for p in (tmp_path / "out" / "figures").glob("*.png")}
    assert {"third-throughput.png", "third-phases.png", "quality.png"} <= figures
    assert "Sum of squares: numbers/s by number of Dask workers" in page
    assert "Sum of squares: time per phase" in page
    assert "Absolute error of the sum against n(n+1)(2n+1)/6." in page
    assert "numbers_per_second" in page  # its key metrics in the runs table

def test_its_preflight_check_runs_on_the_resolved_device(registered, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(third, "REFUSE", "third: this worker is refused")
    assert local_run(tmp_path, "--no-report") == 2
    err = capsys.readouterr().err
    assert "preflight failed on 1 of 1 workers" in err and "third: this worker is refused" in err

def test_it_is_in_the_bench_suite(registered, tmp_path, capsys):
    assert "third_chunks_vs_whole" in registry.figures()
    with pytest.raises(SystemExit):
        bench_cli.main(["--help"])
    helped = capsys.readouterr().out
    assert "third_chunks_vs_whole" in helped and "\n  third-sizes " in helped
    assert bench_cli.main(["third-sizes", "--numbers", "7"]) == 0
    assert capsys.readouterr().out == "numbers: 7\n"
    code = bench_cli.main(["--quick", "--repeats", "3", "--only", "third_chunks_vs_whole", "--output",
                           str(tmp_path / "bench"), "--data-dir", str(tmp_path / "data")])
    assert code == 0, capsys.readouterr().out
    [written] = (tmp_path / "bench").glob("*.json")
    [figure] = json.loads(written.read_text())
    assert figure["name"] == "third_chunks_vs_whole" and figure["holds"] is True

def test_its_data_is_declared_for_the_data_dir_check():
    data = benchmarks.data(third)
    assert data is not None and data.directory == "numbers" and [s.name for s in data.sources] == ["numbers"]


THIRD = {"third": "tests.workloads.third_benchmark.benchmark"}  # its one registry line, for the program's process


def test_its_dataset_reaches_the_data_job_and_the_layout():
    """Its dataset.json alone puts its file in the data Job's arguments and datasetLayout: no
    line of the program, the Job or prepare.py names it."""
    from tests.program.graph import run_program

    graph = run_program("reference-dev", mock={"benchmarks": THIRD})
    assert graph.raw["error"] is None, graph.raw.get("traceback")
    args = graph.named("dataset-job").manifest()["spec"]["template"]["spec"]["containers"][0]["args"]
    at = args.index("numbers")
    assert args[at - 1:at + 3] == ["--fetch", "numbers", "numbers/values.txt", "https://data.example.org/numbers/values.txt"]
    assert graph.raw["outputs"]["datasetLayout"]["numbers"] == "/ml-share/numbers/values.txt"
    assert graph.raw["outputs"]["datasetLayout"]["taxi"] == "/ml-share/taxi"  # the others' keys stay


def test_its_packages_are_among_the_lock_inputs(registered):
    """Its worker.in is gathered with the base's: the lock's inputs hold its package, so the
    offline check calls the committed lock stale until it is regenerated."""
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import lock_worker_env
    finally:
        sys.path.pop(0)
    assert "sympy==1.14.0" in lock_worker_env.requirements("cu13")
    assert "sympy==1.14.0" in lock_worker_env.requirements("cpu")
    assert lock_worker_env.main(["--check"]) == 1
