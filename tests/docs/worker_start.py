"""The worker-start table of docs/dask.md ("The Python environment"), generated from the committed
measurement docs/results/worker-start.json (tests/cluster/test_prepared_environment.py writes it
with DASK_TKG__MEASURE=1).

Usage: python -m tests.docs.worker_start [--check]
"""
from __future__ import annotations

import json
import sys

from tests.docs.generated import REPO, check_or_rewrite, replace_block

DOC = REPO / "docs" / "dask.md"
RESULTS = REPO / "docs" / "results" / "worker-start.json"
MARKERS = ("<!-- worker-start -->", "<!-- /worker-start -->")


def _mb(value: int | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0 bytes"
    return f"{value / 1e6:,.1f} MB" if value >= 1e6 else f"{value / 1e3:,.1f} kB"


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def table(record: dict) -> str:
    p, i = record["prepared"], record["image_with_extra_pip_packages"]
    lock = record["lock"]
    rows = [
        "| | `prepared` (environment on the claim) | `image` + `extraPipPackages` (pip at start) |",
        "|---|---|---|",
        f"| once per lock change: the environment Job | {_s(p['job_seconds'])}, {_mb(p['job_bytes'])} fetched | - |",
        f"| first worker: pod created to joined | {_s(p['first_worker_seconds'])}, nothing fetched"
        f" | {_s(i['first_worker_seconds'])}, {_mb(i['first_worker_bytes'])} fetched |",
        f"| added worker: pod created to joined | {_s(p['added_worker_seconds'])},"
        f" {_mb(p['added_worker_bytes'])} fetched ({p['added_worker_requests']} requests)"
        f" | {_s(i['added_worker_seconds'])}, {_mb(i['added_worker_bytes'])} fetched"
        f" ({i['added_worker_requests']} requests) |",
    ]
    if p.get("job_rerun_seconds") is not None:
        rows.append(f"| the Job again, same lock | {_s(p['job_rerun_seconds'])}, nothing fetched | - |")
    note = (f"\nCPU flavour of the lock ({lock['packages']} wheels, {_mb(lock['wheel_bytes'])}), one real"
            f" Kubernetes 1.33 node,\nindex on the cluster's link; measured {record['measured_at']}"
            " (`docs/results/worker-start.json`).")
    return "\n".join(rows) + "\n" + note


def render(text: str) -> str:
    return replace_block(text, MARKERS, table(json.loads(RESULTS.read_text(encoding="utf-8"))), DOC)


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (argv if argv is not None else sys.argv[1:])
    return check_or_rewrite(DOC, render(DOC.read_text(encoding="utf-8")), check,
                            "out of date: run python -m tests.docs.worker_start", "from docs/results/worker-start.json")


if __name__ == "__main__":
    sys.exit(main())
