"""The terminal summary table and the plain-text progress lines."""
from __future__ import annotations

import io

from workloads.observe import progress
from workloads.runs import summary


def record(status, **extra):
    base = {"benchmark": "images", "status": status, "config": {"device": "cpu", "workers": 2},
            "cluster": {"workers": 2}, "phases": {"list": 1.0, "infer": 2.5},
            "metrics": {"images_per_second": 10.123456, "accuracy": None, "images_failed": 3, "correct": 5}}
    base.update(extra)
    return base


def test_table_rows_headlines_and_errors():
    text = summary.render([
        record("succeeded"),
        record("failed", error="preflight failed on 1 of 2 workers:\n  tcp://w1: missing package 'x'" + "!" * 80,
               unfinished_phases={"score": 0.5}),
    ], {"images": ("images_per_second", "accuracy", "images_failed")})
    lines = text.splitlines()
    assert lines[0].split() == ["benchmark", "workers", "device", "status", "seconds", "headline"]
    assert lines[2].split()[:5] == ["images", "2", "cpu", "succeeded", "3.5"]
    assert lines[2].endswith("images_per_second=10.12, accuracy=n/a, images_failed=3")
    assert lines[3].split()[3:5] == ["failed", "4"]
    assert "preflight failed on 1 of 2 workers: tcp://w1: missing package 'x'!!" in lines[3]
    assert lines[3].endswith("!…")  # one line, cut at 100 characters
    default = summary.headline(record("succeeded"))  # no headline list: the numeric metrics
    assert default == "images_per_second=10.12, images_failed=3, correct=5"
    assert summary.render([]) == "no runs"


def test_progress_lines_when_not_on_a_terminal(client):
    futures = client.map(lambda x: x, range(20), pure=False)
    stream = io.StringIO()
    done = list(progress.track(futures, "things", total_units=40, units_of=lambda f: 2, stream=stream))
    assert len(done) == 20
    lines = stream.getvalue().splitlines()
    assert lines[-1] == "things: 40/40 (100%)"
    assert len(lines) == 10


def test_progress_waits_on_the_futures_own_client_loop(client):
    """A second client in the process (the runner's, beside a notebook's default one):
    its futures must be awaited on its own loop, or a future.result() that has to wait
    again (a lost worker) fails with "bound to a different event loop"."""
    from distributed import Client

    with Client(client.scheduler.address, set_as_default=False) as other:
        assert other.loop is not client.loop  # the case: two loops in one process
        futures = other.map(lambda x: x, range(4), pure=False)
        assert len(list(progress.track(futures, "things", stream=io.StringIO()))) == 4
        for future in futures:
            assert future._state._event._loop is other.loop.asyncio_loop
