"""``--resume``: configurations already recorded as succeeded are skipped; failed ones,
and any configuration that differs in benchmark, profile, device, worker count or
benchmark options, run again."""
from __future__ import annotations

import pytest

from workloads import run
from workloads.cluster.session import ClusterSession
from workloads.runs import benchmarks, results

from . import fakes
from .support import cli


@pytest.fixture
def flaky(monkeypatch):
    monkeypatch.setattr(benchmarks, "BENCHMARKS", {"flaky": "tests.reliability.fakes"})
    monkeypatch.setattr(fakes, "SWITCH", fakes.Switch())
    monkeypatch.setattr(fakes, "RUNS", [])
    return fakes


def sweep(cluster, tmp_path, *extra):
    return cli(cluster, tmp_path / "data", tmp_path / "out", "--benchmark", "flaky", *extra)


def test_a_sweep_runs_only_what_has_not_succeeded(cluster, tmp_path, flaky, capsys):
    code, first = sweep(cluster, tmp_path, "--workers", "1")
    assert code == 0 and [r["config"]["workers"] for r in first] == [1]

    code, second = sweep(cluster, tmp_path, "--workers", "1,2", "--resume")
    assert code == 0 and flaky.RUNS == [1, 2]
    assert [(r["config"]["workers"], r["status"]) for r in second] == [(2, "succeeded")]
    assert "flaky: 1 worker(s), profile smoke: skipped (--resume), succeeded at" in capsys.readouterr().out

    code, third = sweep(cluster, tmp_path, "--workers", "1,2", "--resume")
    assert code == 0 and third == [] and flaky.RUNS == [1, 2]  # nothing left to do


def test_a_failed_configuration_is_run_again(cluster, tmp_path, flaky):
    flaky.SWITCH.fail_next = 1
    code, first = sweep(cluster, tmp_path, "--workers", "1,2")
    assert code == 1 and [(r["config"]["workers"], r["status"]) for r in first] == [(1, "failed"), (2, "succeeded")]

    code, second = sweep(cluster, tmp_path, "--workers", "1,2", "--resume")
    assert code == 0 and [(r["config"]["workers"], r["status"]) for r in second] == [(1, "succeeded")]
    assert flaky.RUNS == [1, 2, 1]


@pytest.mark.parametrize("change", [["--flaky-rounds", "4"], ["--profile", "small"], ["--data-dir", "elsewhere"]],
                         ids=["benchmark option", "profile", "data dir (a benchmark option)"])
def test_another_configuration_is_not_skipped(cluster, tmp_path, flaky, change):
    sweep(cluster, tmp_path, "--workers", "1")
    if change[0] == "--data-dir":
        change = [change[0], str(tmp_path / change[1])]
    code, again = sweep(cluster, tmp_path, "--workers", "1", "--resume", *change)
    assert code == 0 and [r["status"] for r in again] == ["succeeded"]


def test_a_local_sweep_starts_no_cluster_for_what_is_done(cluster, tmp_path, flaky, monkeypatch):
    """The first run was on another cluster (the worker addresses are not part of the
    configuration); with an explicit device nothing is started for worker count 1."""
    sweep(cluster, tmp_path, "--workers", "1")
    (tmp_path / "data").mkdir(exist_ok=True)  # a local run's --data-dir must exist (checked before any cluster)
    started = []
    monkeypatch.setattr(ClusterSession, "use_local", lambda self, plan: started.append(plan) or plan.n_workers)
    code = run.main(["--local", "--benchmark", "flaky", "--workers", "1", "--resume", "--device", "cpu",
                     "--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "out")])
    assert code == 0 and started == []


def test_what_the_same_configuration_means():
    base = {"profile": "smoke", "device": "cpu", "workers": 2, "endpoint": "local", "max_lost_workers": 1,
            "benchmark": {"data_dir": "/d", "rounds": (1, 2), "workers": ["tcp://a:1"]}}
    key = results.config_key("taxi", base)
    same = {**base, "endpoint": "stack", "max_lost_workers": 0,
            "benchmark": {"rounds": [1, 2], "data_dir": "/d", "workers": ["tcp://b:2"]}}
    assert results.config_key("taxi", same) == key  # where it ran, the runner's policy, addresses, tuple/list
    for other in ({**base, "profile": "small"}, {**base, "device": "cuda"}, {**base, "workers": 1},
                  {**base, "benchmark": {**base["benchmark"], "rounds": [1, 3]}}):
        assert results.config_key("taxi", other) != key
    assert results.config_key("images", base) != key


def test_a_torn_last_line_loses_only_itself(cluster, tmp_path, flaky):
    """A runner killed mid-write leaves half a line: --resume still reads the rest, and the
    next record starts a line of its own instead of being glued to the torn one."""
    sweep(cluster, tmp_path, "--workers", "1")
    path = tmp_path / "out" / results.RESULTS_FILE
    with open(path, "a") as fh:
        fh.write('{"benchmark": "flaky", "status": "succ')
    code, again = sweep(cluster, tmp_path, "--workers", "1,2", "--resume")
    assert code == 0 and [r["config"]["workers"] for r in again] == [2]
    lines = path.read_text().splitlines()
    assert len(lines) == 3 and lines[1].endswith('"status": "succ')
    assert [r["config"]["workers"] for r in results.read_records(tmp_path / "out")] == [1, 2]
