"""docs/dask.md's worker-start table quotes docs/results/worker-start.json, the measurement
tests/cluster/test_prepared_environment.py records (``python -m tests.docs.worker_start`` writes
the table)."""
from __future__ import annotations

import json

from tests.docs import worker_start


def test_the_worker_start_table_is_what_the_result_file_gives():
    text = worker_start.DOC.read_text(encoding="utf-8")
    assert worker_start.render(text) == text, "run: python -m tests.docs.worker_start"


def test_the_result_file_holds_both_ways_figures():
    record = json.loads(worker_start.RESULTS.read_text(encoding="utf-8"))
    prepared, image = record["prepared"], record["image_with_extra_pip_packages"]
    assert prepared["added_worker_bytes"] == 0 and prepared["added_worker_requests"] == 0
    assert prepared["first_worker_seconds"] < 60 and prepared["added_worker_seconds"] < 60
    for key in ("first_worker_seconds", "added_worker_seconds", "first_worker_bytes", "added_worker_bytes"):
        assert image[key] is not None, key
