"""A caption describes what its figure draws, and nothing it does not: the dashed linear-scaling
line only with more than one worker count, the faint dots only where a count has several runs,
the shaded busy period only where a worker was busy over more than one sample. Real reports are
rendered from records written here; each figure is read back from the drawing itself."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from tests.report.support import figures_kept
from workloads.report import render


@pytest.fixture
def drawn(monkeypatch) -> dict[str, Figure]:
    """Every figure the report saves, by file name (saved as it always is)."""
    return figures_kept(monkeypatch)


def _images_run(workers: int, per_second: float, utilization: str | None = None) -> dict:
    record = {"benchmark": "images", "status": "succeeded", "started_at": "2026-12-01T10:00:00Z",
              "config": {"workers": workers, "device": "cpu", "profile": "smoke"}, "phases": {"infer": 2.0},
              "metrics": {"images_per_second": per_second}}
    if utilization:
        record["artifacts"] = {"utilization": utilization}
    return record


def _results(directory: Path, *records: dict, samples: list[dict] | None = None) -> Path:
    directory.mkdir(parents=True)
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if samples is not None:
        (directory / "utilization").mkdir()
        (directory / "utilization" / "run1.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    return directory


def _captions(report: Path) -> dict[str, str]:
    """The page's figure captions by figure title."""
    page = report.read_text(encoding="utf-8")
    found = re.findall(r"<figcaption><strong>(.*?)\.</strong> (.*?)</figcaption>", page, re.S)
    return {html.unescape(title): html.unescape(text) for title, text in found}


def _throughput_caption(report: Path) -> str:
    [caption] = [text for title, text in _captions(report).items() if title.startswith("Image classification: ")
                 and "by number of Dask workers" in title]
    return caption


def _dashed_lines(figure: Figure) -> int:
    return sum(line.get_linestyle() == "--" for axes in figure.axes for line in axes.lines)


def _dots(figure: Figure) -> int:
    return sum(len(axes.collections) for axes in figure.axes)


def test_one_worker_count_draws_no_scaling_line_and_the_caption_names_none(tmp_path, drawn):
    report = render(_results(tmp_path / "r", _images_run(2, 10.0)), output=tmp_path / "out")
    caption = _throughput_caption(report)
    assert _dashed_lines(drawn["images-throughput.png"]) == 0 and _dots(drawn["images-throughput.png"]) == 0
    assert "dashed" not in caption.lower() and "linear scaling" not in caption
    assert "dots" not in caption
    assert "Runs at one worker count only: sweep several (--workers 1,2,4) to see how it scales." in caption


def test_a_sweep_draws_the_scaling_line_and_repeated_runs_as_dots_and_the_caption_says_so(tmp_path, drawn):
    records = [_images_run(1, 10.0), _images_run(2, 18.0), _images_run(2, 19.0)]
    report = render(_results(tmp_path / "r", *records), output=tmp_path / "out")
    caption = _throughput_caption(report)
    assert _dashed_lines(drawn["images-throughput.png"]) == 1 and _dots(drawn["images-throughput.png"]) == 1
    assert "Dashed: perfect linear scaling from the smallest worker count." in caption
    assert "Faint dots: each run's value where a worker count has several runs." in caption


def _sample(t: float, cpu: float) -> dict:
    return {"t": t, "worker": "w1", "address": "tcp://127.0.0.1:1", "nthreads": 1, "cpu": cpu,
            "memory": 1 << 30, "gpu_utilization": None, "gpu_memory": None, "gpu_memory_total": None}


def _utilization(tmp_path: Path, drawn: dict[str, Figure], cpus: list[float]) -> tuple[str, Figure]:
    """The caption and the figure of one run's utilization, sampled once a second at ``cpus``."""
    results = _results(tmp_path / "r", _images_run(1, 10.0, utilization="utilization/run1.jsonl"),
                       samples=[_sample(float(t), cpu) for t, cpu in enumerate(cpus)])
    captions = _captions(render(results, output=tmp_path / "out"))
    [caption] = [text for title, text in captions.items() if title.startswith("Utilization of run #1")]
    return caption, drawn["utilization-run1.png"]


def _shaded(figure: Figure) -> int:
    return sum(len(axes.patches) for axes in figure.axes)


@pytest.mark.parametrize("cpus", [[1.0, 2.0, 1.5], [1.0, 90.0, 1.5]], ids=["never-busy", "busy-in-one-sample"])
def test_three_samples_without_a_busy_period_to_see_shade_nothing_and_say_nothing_of_it(tmp_path, drawn, cpus):
    caption, figure = _utilization(tmp_path, drawn, cpus)
    assert _shaded(figure) == 0
    assert "shaded" not in caption.lower() and "busy period" not in caption
    assert "shaded" not in figure.axes[0].get_title().lower()
    assert "GPU" not in caption  # a CPU-only run has no GPU panel either


def test_three_busy_samples_shade_the_busy_period_and_the_caption_says_so(tmp_path, drawn):
    caption, figure = _utilization(tmp_path, drawn, [80.0, 90.0, 85.0])
    assert _shaded(figure) == len(figure.axes) == 2  # CPU and memory, each shaded
    assert "Shaded: the busy period, from the first to the last sample in which a worker was busy" in caption
    assert "shaded: busy period" in figure.axes[0].get_title()
