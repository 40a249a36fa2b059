"""Held against busy in the run report (issue 52): each run whose cluster held a GPU is drawn as
its held GPU-seconds (waiting, working, idle stacked) above its busy ones, so an idle cluster
shows; a run that held none is a line of words, not an empty figure; the caption says only what
is drawn. Reports are rendered from records written here; the figure is read back from the
drawing itself."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from tests.report.support import figures_kept
from workloads.report import figures, render

TITLE = "GPU held and busy per run"


@pytest.fixture
def drawn(monkeypatch) -> dict[str, Figure]:
    """Every figure the report saves, by file name (saved as it always is)."""
    return figures_kept(monkeypatch)


def usage(held: float | None, waiting: float = 0.0, working: float = 0.0, busy: float | None = None,
          note: str = "held: the GPUs each pod requests") -> dict:
    return {"person": "alice", "source": "pods" if held else "none", "note": note, "gpus": 2 if held else 0,
            "held_gpu_seconds": held, "waiting_gpu_seconds": waiting, "working_gpu_seconds": working,
            "idle_gpu_seconds": None if held is None else held - waiting - working, "busy_gpu_seconds": busy,
            "busy_source": None if busy is None else "nvml",
            "window": {"start": "2026-12-01T10:00:00.000Z", "end": "2026-12-01T10:05:00.000Z"}}


def record(benchmark: str, gpu: dict | None, status: str = "succeeded") -> dict:
    found = {"benchmark": benchmark, "status": status, "started_at": "2026-12-01T10:00:00Z",
             "config": {"workers": 2, "device": "cuda", "profile": "smoke", "endpoint": "own-cluster"},
             "phases": {"work": 20.0}, "metrics": {}}
    return found if gpu is None else {**found, "gpu_usage": gpu}


def report(tmp_path: Path, *records: dict) -> tuple[Path, str]:
    directory = tmp_path / "results"
    directory.mkdir()
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    page = render(directory)
    return page, page.read_text(encoding="utf-8")


def caption(page: str) -> str | None:
    found = re.findall(r"<figcaption><strong>(.*?)\.</strong> (.*?)</figcaption>", page, re.S)
    return next((html.unescape(text) for title, text in found if html.unescape(title) == TITLE), None)


def bars(figure: Figure) -> list[tuple[float, float, float]]:
    """(y, left, width) of every bar drawn with a width."""
    (axes,) = figure.axes
    return sorted((round(p.get_y() + p.get_height() / 2, 2), p.get_x(), p.get_width()) for p in axes.patches
                  if isinstance(p, Rectangle) and p.get_width() > 0)


def test_each_run_that_held_a_gpu_shows_held_split_above_busy(tmp_path, drawn):
    _, page = report(tmp_path, record("images", usage(300.0, waiting=30.0, working=120.0, busy=60.0)),
                     record("taxi", usage(400.0, waiting=10.0, working=20.0, busy=4.0), status="interrupted"))
    figure = drawn["gpu-held-busy.png"]
    # run 1 (row 0): waiting, working, idle stacked above busy; run 2 (row 1): mostly idle
    assert bars(figure) == [(-0.19, 0.0, 30.0), (-0.19, 30.0, 120.0), (-0.19, 150.0, 150.0), (0.19, 0.0, 60.0),
                            (0.81, 0.0, 10.0), (0.81, 10.0, 20.0), (0.81, 30.0, 370.0), (1.19, 0.0, 4.0)]
    (axes,) = figure.axes
    texts = [t.get_text() for t in axes.texts]
    assert "300 GPU-s held, 2 GPU(s) at most" in texts and "60 GPU-s busy (20 % of held)" in texts
    assert "4 GPU-s busy (1 % of held)" in texts
    assert axes.get_xlabel() == "GPU-seconds"
    assert [t.get_text() for t in axes.get_yticklabels()][1].endswith("(interrupted)")
    words = caption(page)
    assert words is not None and "stacked as waiting, working and idle" in words and "The lower bar: busy" in words
    assert "not measured" not in words and "latest" not in words
    assert "No GPU held" not in page


def test_busy_not_measured_is_written_where_its_bar_would_be_and_the_caption_says_so(tmp_path, drawn):
    _, page = report(tmp_path, record("taxi", usage(7200.0, waiting=100.0, working=1000.0)))
    (axes,) = drawn["gpu-held-busy.png"].axes
    assert "busy not measured" in [t.get_text() for t in axes.texts]
    assert axes.get_xlabel() == "GPU-minutes" and len(bars(drawn["gpu-held-busy.png"])) == 3
    words = caption(page)
    assert words is not None and "\u201cbusy not measured\u201d" in words and "The lower bar" not in words


def test_runs_that_held_nothing_are_a_line_not_an_empty_figure(tmp_path, drawn):
    cpu = "no GPU: a local cluster of CPU workers (--device cpu); nothing held; busy not measured (no GPU held)"
    _, page = report(tmp_path, record("images", usage(0.0, note=cpu)), record("taxi", usage(0.0, note=cpu)),
                     record("taxi", usage(None, note="held not measured: no kubeconfig to read its pods with")),
                     record("images", None))  # a record from before gpu_usage: neither drawn nor named
    assert "gpu-held-busy.png" not in drawn and caption(page) is None
    assert '<section id="gpu"><h2>GPU held and busy</h2>' in page
    assert f"<strong>No GPU held by runs #1, #2</strong>: {html.escape(cpu)}." in page
    assert ("<strong>GPU held not known for run #3</strong>: held not measured: no kubeconfig to read its pods"
            " with.") in page
    assert "#4" not in page.split('<section id="gpu">')[1].split("</section>")[0]


def test_no_section_without_a_gpu_usage(tmp_path, drawn):
    _, page = report(tmp_path, record("images", None))
    assert 'id="gpu"' not in page and "gpu-held-busy.png" not in drawn


def test_only_the_latest_runs_are_drawn_and_the_caption_says_how_many(tmp_path, drawn, monkeypatch):
    monkeypatch.setattr(figures, "HELD_RUNS", 2)
    _, page = report(tmp_path, *(record("taxi", usage(100.0 + i, busy=1.0)) for i in range(3)))
    (axes,) = drawn["gpu-held-busy.png"].axes
    assert [t.get_text().split(" ")[0] for t in axes.get_yticklabels()] == ["#2", "#3"]
    words = caption(page)
    assert words is not None and words.endswith("The latest 2 runs that held a GPU.")
