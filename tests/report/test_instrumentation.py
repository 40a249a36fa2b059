"""``instrument()``: the performance report and the utilization file on a real cluster,
kept when the block raises; and nothing it does can fail the run."""
from __future__ import annotations

import contextlib
import json
import time
import types

import pytest

from workloads.observe.instrumentation import instrument, make_run_id

from .support import burn_everywhere


def test_leaves_a_performance_report_and_utilization(dask_client, tmp_path):
    with instrument(dask_client, tmp_path, "images-20261129T101500Z-w2", interval=0.5) as inst:
        burn_everywhere(dask_client, 1.5)
        assert inst.metrics == {}  # filled in when the block ends
    assert inst.artifacts == {"utilization": "utilization/images-20261129T101500Z-w2.jsonl",
                              "performance_report": "reports/images-20261129T101500Z-w2-performance.html"}
    report = (tmp_path / inst.artifacts["performance_report"]).read_text()
    assert "Dask Performance Report" in report and len(report) > 100_000  # Bokeh inline: opens offline
    lines = (tmp_path / inst.artifacts["utilization"]).read_text().splitlines()
    assert lines and {json.loads(line)["worker"] for line in lines} == {"0", "1"}
    assert set(inst.metrics["workers"]) == {"0", "1"} and inst.metrics["samples"] == len(lines)
    assert inst.notes == []


def test_keeps_what_was_measured_when_the_block_raises(dask_client, tmp_path):
    with pytest.raises(ZeroDivisionError), instrument(dask_client, tmp_path, "taxi-x-w2", interval=0.5) as inst:
        burn_everywhere(dask_client, 1.0)
        dask_client.submit(lambda: 1 / 0).result()
    assert (tmp_path / inst.artifacts["performance_report"]).stat().st_size > 100_000
    assert (tmp_path / inst.artifacts["utilization"]).read_text().strip()
    assert inst.metrics["samples"] > 0


def test_never_overwrites_an_earlier_runs_files(dask_client, tmp_path):
    with instrument(dask_client, tmp_path, "same id", performance_report=False) as first:
        pass
    with instrument(dask_client, tmp_path, "same id", performance_report=False) as second:
        pass
    assert first.artifacts == {"utilization": "utilization/same-id.jsonl"}
    assert second.artifacts == {"utilization": "utilization/same-id-2.jsonl"}


class BrokenClient:
    """A client whose every call to the cluster fails."""

    status = "running"
    scheduler = types.SimpleNamespace(identity=None)

    def sync(self, *args, **kwargs):
        raise OSError("Timed out trying to connect to tcp://10.0.0.1:8786")

    def as_current(self):
        return contextlib.nullcontext()


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_a_cluster_that_cannot_report_cannot_fail_the_run(tmp_path, error):
    with pytest.raises(error), instrument(BrokenClient(), tmp_path, "r1", interval=0.05) as inst:
        raise error("the run's own error")
    assert "performance_report" not in inst.artifacts
    assert inst.artifacts == {"utilization": "utilization/r1.jsonl"}
    assert any(note.startswith("performance report not started: OSError") for note in inst.notes)
    assert inst.metrics["samples"] == 0 and inst.metrics["balance"] is None
    assert "Timed out" in inst.metrics["errors"][0]


def test_a_block_that_succeeds_on_a_broken_cluster_still_succeeds(tmp_path):
    """The block's own work finishes and nothing is raised at its end although neither
    the report nor the sampler could reach the scheduler; each failure is noted, and no
    report is claimed that was not written."""
    finished = []
    with instrument(BrokenClient(), tmp_path, "r2", interval=0.05) as inst:
        time.sleep(0.3)  # several sampling intervals: the sampler tries and fails meanwhile
        finished.append("block")
    finished.append("after the block")
    assert finished == ["block", "after the block"]
    timed_out = "OSError: Timed out trying to connect to tcp://10.0.0.1:8786"
    assert inst.notes == [f"performance report not started: {timed_out}",
                          f"utilization: polling the scheduler failed: {timed_out}"]
    assert inst.artifacts == {"utilization": "utilization/r2.jsonl"}
    assert inst.metrics["samples"] == 0 and inst.metrics["errors"] == [f"polling the scheduler failed: {timed_out}"]


def test_run_ids_are_file_names():
    assert make_run_id("images", 2, "2026-11-29T21:53:20Z") == "images-20261129T215320Z-w2"
    assert make_run_id("taxi").startswith("taxi-")
