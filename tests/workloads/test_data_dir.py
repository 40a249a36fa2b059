"""``--data-dir`` is checked before a local cluster starts: a root that does not exist is one
clear error naming it and what each chosen benchmark expects under it, no cluster is started
and no record is written (before, the cluster started and each benchmark's workers printed
a DatasetError traceback)."""
from __future__ import annotations

import pytest

from workloads import run
from workloads.cluster import local
from workloads.core.errors import WorkloadError
from workloads.runs import benchmarks, results
from workloads.runs.sweep import EXIT_SETUP


@pytest.fixture
def started(monkeypatch) -> list[object]:
    """Every local cluster the runner tries to start (none is: the spy refuses)."""
    calls: list[object] = []

    def spy(plan, **_):
        calls.append(plan)
        raise WorkloadError("the spy refuses to start a cluster")

    monkeypatch.setattr(local, "start", spy)
    return calls


def test_a_missing_data_dir_is_refused_before_a_local_cluster_starts(tmp_path, started, capsys):
    missing = tmp_path / "no-such-data"
    code = run.main(["--local", "--data-dir", str(missing), "--output", str(tmp_path / "out"), "--no-report"])
    err = capsys.readouterr().err
    assert code == EXIT_SETUP
    assert started == [], "a local cluster was started for a data directory that does not exist"
    assert f"--data-dir {missing} does not exist" in err
    assert "dogs/Images/<wnid>-<breed>/*.jpg" in err and "taxi/ (or taxi-csv/)" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / results.RESULTS_FILE).exists()


def test_the_message_names_only_the_chosen_benchmarks_layout(tmp_path, started, capsys):
    code = run.main(["--local", "--benchmark", "images", "--data-dir", str(tmp_path / "nope"),
                     "--output", str(tmp_path / "out"), "--no-report"])
    err = capsys.readouterr().err
    assert code == EXIT_SETUP and started == []
    assert "dogs/Images" in err and "taxi" not in err


def test_a_data_dir_that_is_a_file_is_refused(tmp_path, started, capsys):
    afile = tmp_path / "data.tar"
    afile.write_bytes(b"")
    code = run.main(["--local", "--benchmark", "images", "--data-dir", str(afile),
                     "--output", str(tmp_path / "out"), "--no-report"])
    assert code == EXIT_SETUP and started == []
    assert f"--data-dir {afile} is not a directory" in capsys.readouterr().err


def test_every_benchmark_says_what_its_data_root_holds():
    for name in benchmarks.BENCHMARKS:
        data = benchmarks.data(benchmarks.load(name))
        assert data is not None and data.layout.strip(), f"benchmark {name!r} has no DATA layout"
        assert data.layout.startswith(data.directory + "/") and data.sources, name


def test_a_remote_clusters_data_dir_is_the_workers_to_see(tmp_path, client, capsys, monkeypatch):
    """The path is as the workers see it: on a remote cluster it need not exist here."""
    monkeypatch.setattr(benchmarks, "BENCHMARKS", {"alpha": "tests.workloads.fakes.tiny"})
    code = run.main(["--scheduler-address", client.scheduler.address, "--data-dir", str(tmp_path / "elsewhere"),
                     "--output", str(tmp_path / "out"), "--device", "cpu", "--no-report"])
    assert code == 0, capsys.readouterr().err
