"""The command line: sweeps, dispatch, failure records, and one end-to-end local run."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workloads import run
from workloads.runs import benchmarks, results

from .fakes import tiny
from .support import COLOUR_MODEL

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fakes(monkeypatch):
    """Two registered benchmarks, both the tiny fake module."""
    monkeypatch.setattr(benchmarks, "BENCHMARKS", {"alpha": "tests.workloads.fakes.tiny",
                                                   "beta": "tests.workloads.fakes.tiny"})
    return tiny


def cli(client, tmp_path, *extra) -> tuple[int, list[dict]]:
    code = run.main(["--scheduler-address", client.scheduler.address, "--data-dir", str(tmp_path / "data"),
                     "--output", str(tmp_path / "out"), "--device", "cpu", *extra])
    return code, results.read_records(tmp_path / "out")


def test_parser_takes_every_registered_benchmark_without_clashes():
    modules, _ = run.import_benchmarks()
    parser = run.build_parser(modules, {})
    assert "images" in modules
    args = parser.parse_args(["--benchmark", "images", "--workers", "1,2", "--image-batch", "4"])
    assert args.workers == [1, 2] and args.image_batch == 4
    with pytest.raises(SystemExit):
        parser.parse_args(["--workers", "0"])


def test_all_dispatches_every_benchmark(client, tmp_path, fakes, capsys):
    code, records = cli(client, tmp_path, "--benchmark", "all")
    assert code == 0
    assert [r["benchmark"] for r in records] == ["alpha", "beta"]
    assert all(r["status"] == "succeeded" and r["metrics"]["value"] == 49 for r in records)
    out = capsys.readouterr().out
    assert "value=49" in out and "2 record(s) appended" in out


def test_sweep_on_a_remote_cluster_restricts_each_run(client, workers, tmp_path, data_root):
    code, records = cli(client, tmp_path, "--benchmark", "images", "--workers", "1,2", "--data-dir",
                        str(data_root), "--model", COLOUR_MODEL, "--image-batch", "3")
    assert code == 0
    assert [r["config"]["workers"] for r in records] == [1, 2]
    assert [r["cluster"]["workers"] for r in records] == [1, 2]
    assert [r["cluster"]["workers_connected"] for r in records] == [2, 2]
    assert list(records[0]["metrics"]["images_per_worker"]) == [workers[0]]
    assert records[0]["config"]["benchmark"]["workers"] == [workers[0]]
    assert records[1]["config"]["benchmark"]["workers"] == []  # the whole cluster: no restriction
    assert records[0]["metrics"]["correct"] == records[1]["metrics"]["correct"] > 0
    for record in records:
        assert record["versions"]["distributed"] and record["versions"]["torch"]
        assert record["hardware"]["cpu_count"] >= 1 and record["cluster"]["kind"] == "remote"
        assert "://" in record["cluster"]["scheduler"] and record["started_at"].endswith("Z")


def test_a_failing_run_is_recorded_with_its_phases(client, tmp_path, fakes):
    code, records = cli(client, tmp_path, "--benchmark", "alpha", "--fake-mode", "fail")
    assert code == 1
    (record,) = records
    assert record["status"] == "failed" and record["error"] == "RuntimeError: boom"
    assert list(record["phases"]) == ["work"] and list(record["unfinished_phases"]) == ["after"]


def test_an_interrupted_run_is_recorded_and_exits_130(client, tmp_path, fakes):
    code, records = cli(client, tmp_path, "--benchmark", "beta", "--fake-mode", "interrupt")
    assert code == 130
    (record,) = records
    assert record["status"] == "interrupted" and list(record["phases"]) == ["work"]


def test_failed_preflight_is_one_error_and_a_failed_record(client, workers, tmp_path, fakes, monkeypatch, capsys):
    monkeypatch.setattr(fakes, "REQUIRED_PACKAGES", ("numpy", "no_such_package_here"))
    code, records = cli(client, tmp_path, "--benchmark", "alpha")
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("error: preflight failed on 2 of 2 workers") == 1
    assert all(w in err for w in workers) and "missing package 'no_such_package_here'" in err
    (record,) = records
    assert record["status"] == "failed" and "no_such_package_here" in record["error"]


def test_too_few_workers_times_out_clearly(client, tmp_path, fakes, capsys):
    code, records = cli(client, tmp_path, "--benchmark", "alpha", "--workers", "3", "--wait-timeout", "1")
    assert code == 2
    assert "only 2 of 3 workers" in capsys.readouterr().err
    assert records[0]["status"] == "failed"


def test_earlier_records_are_kept(client, tmp_path, fakes):
    cli(client, tmp_path, "--benchmark", "alpha")
    first = (tmp_path / "out" / "results.jsonl").read_text()
    cli(client, tmp_path, "--benchmark", "beta")
    after = (tmp_path / "out" / "results.jsonl").read_text()
    assert after.startswith(first) and len(after.splitlines()) == 2


def test_remote_without_a_data_dir_is_refused(client, tmp_path, capsys):
    code = run.main(["--scheduler-address", client.scheduler.address, "--benchmark", "images",
                     "--output", str(tmp_path)])
    assert code == 2 and "pass --data-dir" in capsys.readouterr().err


def test_local_smoke_sweep_end_to_end(tmp_path, data_root, manifest):
    """The real command in a fresh process: a local cluster restarted per worker count,
    broken files counted, the summary printed."""
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "workloads.run", "--local", "--benchmark", "images", "--profile", "smoke",
         "--data-dir", str(data_root), "--workers", "1,2", "--dashboard-address", ":0",
         "--model", COLOUR_MODEL, "--output", str(out)],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "DASK_TKG_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dashboard: http://" in done.stdout
    assert "benchmark  workers  device  status" in done.stdout
    records = results.read_records(out)
    assert [r["cluster"]["local"]["n_workers"] for r in records] == [1, 2]
    assert [r["cluster"]["threads_per_worker"] for r in records] == [2, 1]
    total = len(manifest["files"])
    for record in records:
        metrics = record["metrics"]
        assert record["status"] == "succeeded"
        assert (metrics["images_total"], metrics["images_failed"], metrics["images_converted"]) == (total, 3, 3)
        assert metrics["images_scored"] == total - 3 and metrics["accuracy"] > 0.8
        assert record["config"]["data_generated"] is False
        assert set(record["phases"]) >= {"list", "load_model", "infer"}
    assert not (tmp_path / "cache").exists()  # a given data dir is never generated into
