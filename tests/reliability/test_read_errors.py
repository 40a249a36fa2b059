"""I/O errors while the taxi benchmark reads its files, injected in the worker processes
(a worker plugin makes the file's reads raise EIO): a few are retried and the run's rows
are the undisturbed run's; errors that do not stop fail the run naming the file and the
byte range. Never a ``succeeded`` record with rows missing."""
from __future__ import annotations

import re

import pytest

from . import faults
from .support import cli, record_figure, recovery_cost, warm_then_calm

TAXI = ["--benchmark", "taxi", "--dataframe", "pandas", "--taxi-block-mib", "1"]
FILE = "yellow_tripdata_2017-06.csv"  # the CSV of the folder's dataset
ROWS = ["rows_raw", "rows_clean", "rows_train", "rows_test", "dropped_by_rule", "dropped_by_reason",
        "problems_by_file", "rmse", "r2"]


@pytest.fixture
def failing_reads(client, faults_dir):
    registered = []

    def register(failures: int | None) -> None:
        faults.reset_read_failures()
        client.register_plugin(faults.FailingTaxiReads(FILE, failures))
        registered.append(faults.FailingTaxiReads.name)

    yield register
    for name in registered:
        client.unregister_worker_plugin(name)
    faults.reset_read_failures()


def test_a_few_io_errors_are_retried_and_no_row_is_lost(cluster, data_root, tmp_path, failing_reads, artifacts_dir):
    calm = warm_then_calm(cluster, data_root, tmp_path, *TAXI, "--workers", "2")

    failing_reads(2)
    code, (hit,) = cli(cluster, data_root, tmp_path, *TAXI, "--workers", "2")
    assert faults.read_failures() == 2, "the fault never fired"
    assert code == 0 and hit["status"] == "succeeded", hit.get("error")
    assert {k: hit["metrics"][k] for k in ROWS} == {k: calm["metrics"][k] for k in ROWS}
    assert "unreadable_chunk" not in hit["metrics"]["dropped_by_reason"]
    record_figure(artifacts_dir, "taxi_read_errors", {
        "failures_injected": 2, "load_s_undisturbed": calm["phases"]["load"],
        "load_s_with_errors": hit["phases"]["load"],
        "recovery_s": recovery_cost(calm, hit, "load")})


def test_io_errors_that_do_not_stop_fail_the_run_naming_the_file_and_byte_range(
        cluster, data_root, tmp_path, failing_reads):
    failing_reads(None)
    code, (record,) = cli(cluster, data_root, tmp_path, *TAXI, "--workers", "2")
    assert faults.read_failures() >= 4
    assert code == 1 and record["status"] == "failed"
    assert re.search(rf"/taxi/{re.escape(FILE)} \[bytes \d+-\d+\]: I/O error on each of 4 attempts, the last: "
                     r"OSError\(5, 'Input/output error'\); stopping rather than going on without these rows",
                     record["error"]), record["error"]
    assert "load" in record["unfinished_phases"]
