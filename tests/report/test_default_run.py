"""The report and the console of the default run (``python -m workloads.run``: a local
cluster, the smoke profile, CPU): a throughput axis whose labels tell its ticks apart below
5 images/s, an accuracy panel that says why it holds no figure, the console's reason beside
``accuracy=n/a``, and a title that says where the runs ran.

``fixtures/local-smoke`` holds the two records that command wrote on a 2-core machine
(images 5.5 images/s, random weights; taxi on pandas), with their utilization samples; the
performance reports are left out (1.7 MB each)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from workloads.report import figures, render
from workloads.report.runs import Run
from workloads.runs import summary

from .support import FIXTURES

LOCAL_SMOKE = FIXTURES / "local-smoke"
RANDOM_WEIGHTS = "pass --weights"  # the benchmark's own reason (workloads/images/benchmark.py)


def local_records() -> list[dict]:
    return [json.loads(line) for line in (LOCAL_SMOKE / "results.jsonl").read_text().splitlines()]


@pytest.fixture
def drawn(monkeypatch) -> list[Figure]:
    """The figures the report functions draw, drawn once more so their tick labels exist."""
    made: list[Figure] = []
    save = figures._save

    def keep(figure: Figure, path: Path) -> Path:
        made.append(figure)
        return save(figure, path)

    monkeypatch.setattr(figures, "_save", keep)
    return made


def images_run(number: int, workers: int, per_second: float, **metrics) -> Run:
    return Run(number, {"benchmark": "images", "status": "succeeded",
                        "config": {"workers": workers, "device": "cpu", "profile": "smoke"},
                        "metrics": {"images_per_second": per_second, **metrics}})


def visible_y_labels(figure: Figure) -> list[tuple[float, str]]:
    figure.canvas.draw()
    axes = figure.axes[0]
    low, high = axes.get_ylim()
    ticks = [t for t in axes.get_yticks() if low <= t <= high]
    return list(zip(ticks, axes.yaxis.get_major_formatter().format_ticks(ticks), strict=True))


@pytest.mark.parametrize("per_second", [(2.1, 3.9), (0.35, 0.6), (4.2,)])
def test_a_slow_throughput_axis_has_one_label_per_tick(tmp_path, drawn, per_second):
    runs = [images_run(i + 1, i + 1, value) for i, value in enumerate(per_second)]
    assert figures.throughput(runs, "images", tmp_path / "t.png") is not None
    labels = visible_y_labels(drawn[-1])
    texts = [text for _, text in labels]
    assert len(set(texts)) == len(texts), f"labels repeat: {texts}"
    for tick, text in labels:
        assert float(text.replace(",", "")) == pytest.approx(tick), (tick, text)


def test_a_fast_throughput_axis_keeps_whole_numbers_with_separators(tmp_path, drawn):
    runs = [images_run(1, 1, 1500.0), images_run(2, 2, 2900.0)]
    figures.throughput(runs, "images", tmp_path / "t.png")
    texts = [text for _, text in visible_y_labels(drawn[-1])]
    assert "1,000" in texts and all("." not in t for t in texts), texts


def axes_texts(figure: Figure) -> str:
    figure.canvas.draw()
    return "\n".join(t.get_text() for axes in figure.axes for t in [*axes.texts, axes.title])


def test_an_accuracy_panel_without_a_figure_says_why(tmp_path, drawn):
    runs = [Run(i + 1, record) for i, record in enumerate(local_records())]
    assert figures.quality(runs, tmp_path / "q.png") is not None
    text = axes_texts(drawn[-1])
    assert RANDOM_WEIGHTS in text and "random weights" in text
    assert "1.26" in text  # the taxi panel is untouched


def test_a_run_without_accuracy_beside_measured_ones_carries_its_reason(tmp_path, drawn):
    note = "random weights: accuracy is not meaningful (pass --weights)"
    runs = [images_run(1, 1, 3.0, accuracy=0.67), images_run(2, 1, 3.0, accuracy=None, accuracy_note=note)]
    figures.quality(runs, tmp_path / "q.png")
    text = axes_texts(drawn[-1])
    assert "67.0 %" in text and RANDOM_WEIGHTS in text


def test_the_console_says_why_accuracy_is_not_a_number():
    images = local_records()[0]
    line = summary.headline(images, ("images_per_second", "accuracy", "images_failed"))
    assert re.search(r"accuracy=n/a \(random weights[^)]*pass --weights", line), line


def test_a_local_run_is_titled_as_local(tmp_path):
    page = render(LOCAL_SMOKE, output=tmp_path).read_text(encoding="utf-8")
    [title] = re.findall(r"<h1>(.*?)</h1>", page)
    assert "vSphere" not in title and "Tanzu" not in title
    assert title.startswith("A local Dask cluster (host vm)")
    assert RANDOM_WEIGHTS in page  # the runs table gives the reason too


def test_a_stacks_runs_keep_the_platforms_title(tmp_path):
    page = render(FIXTURES, output=tmp_path).read_text(encoding="utf-8")
    [title] = re.findall(r"<h1>(.*?)</h1>", page)
    assert title == "Dask on vSphere with Tanzu: benchmark report"


def test_runs_from_several_places_name_each(tmp_path):
    records = [*local_records()[:1], json.loads((FIXTURES / "results.jsonl").read_text().splitlines()[0])]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    page = render(tmp_path, output=tmp_path / "out").read_text(encoding="utf-8")
    [title] = re.findall(r"<h1>(.*?)</h1>", page)
    assert "a local Dask cluster (host vm)" in title and "Dask on vSphere with Tanzu" in title


def test_the_docs_and_the_helps_name_where_the_report_is(tmp_path):
    """``results/report.html``, beside ``results.jsonl`` (docs/running.md said
    ``results/report/report.html``; the runner's ``--report`` and ``dask-tkg report --output``
    helps said the same)."""
    from workloads import run
    from workloads.report.command import build_parser

    results = tmp_path / "results"
    results.mkdir()
    (results / "results.jsonl").write_text((LOCAL_SMOKE / "results.jsonl").read_text())
    assert render(results).relative_to(tmp_path).as_posix() == "results/report.html"
    running = (Path(__file__).resolve().parents[2] / "docs" / "running.md").read_text(encoding="utf-8")
    mentions = re.findall(r"`(results/[^`]*report\.html)`", running)
    assert mentions and set(mentions) == {"results/report.html"}, mentions
    runner_help = " ".join(run.build_parser({}, {}).format_help().split())
    assert "<output>/report.html" in runner_help and "report/report.html" not in runner_help
    report_help = " ".join(build_parser().format_help().split())
    assert "RESULTS_DIR/report" not in report_help and "default: RESULTS_DIR, beside results.jsonl" in report_help
