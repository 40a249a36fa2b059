"""``dask-tkg report`` on the fixture results: the figures, the page, and the
awkward inputs (no file, empty file, torn last line, failed runs, missing sidecars, one run)."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from workloads.report import NoResults, render
from workloads.report.command import main

from .support import BASELINE, FIXTURES, PNG_SIGNATURE, png_size

EXPECTED_FIGURES = {"images-throughput.png", "taxi-phases.png", "images-phases.png", "quality.png",
                    "utilization-run2.png", "utilization-run5.png", "utilization-run11.png", "compare.png"}


def fixture_records() -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / "results.jsonl").read_text().splitlines()]


def test_fixture_covers_what_the_report_must_handle():
    records = fixture_records()
    kinds = {(r["benchmark"], r["config"]["device"], r["metrics"].get("backend")) for r in records}
    assert {("images", "cpu", None), ("images", "cuda", None), ("taxi", "cpu", "pandas"),
            ("taxi", "cuda", "pandas"), ("taxi", "cuda", "cudf")} <= kinds
    assert len({r["config"]["workers"] for r in records if r["benchmark"] == "images"}) >= 3
    assert {r["status"] for r in records} == {"succeeded", "failed", "interrupted"}
    sidecars = [r["artifacts"]["utilization"] for r in records if "utilization" in r.get("artifacts", {})]
    assert [s for s in sidecars if not (FIXTURES / s).exists()], "one sidecar is meant to be missing"


def test_every_figure_is_a_sensible_png(rendered):
    figures = rendered.parent / "figures"
    assert {p.name for p in figures.glob("*.png")} == EXPECTED_FIGURES
    for path in figures.glob("*.png"):
        assert path.read_bytes()[:8] == PNG_SIGNATURE
        width, height = png_size(path)
        assert 600 <= width <= 2000, (path.name, width)
        assert 250 <= height <= 3000, (path.name, height)
        assert path.stat().st_size > 10_000, f"{path.name} is suspiciously small"


def test_page_is_self_contained(rendered):
    page = rendered.read_text(encoding="utf-8")
    sources = re.findall(r'<img[^>]*\ssrc="([^"]*)"', page)
    assert len(sources) == len(EXPECTED_FIGURES)
    assert all(src.startswith("data:image/png;base64,") for src in sources)
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "the page must not reference the network"
    assert "<style>" in page


def test_page_lists_every_run_with_its_status_and_errors(rendered):
    page = rendered.read_text(encoding="utf-8")
    rows = re.findall(r'<tr class="row-(succeeded|failed|interrupted)">', page)
    assert rows.count("succeeded") == 10 and rows.count("failed") == 1 and rows.count("interrupted") == 1
    assert "WorkersLostError: 3 of 8 workers left during the run" in page
    assert "interrupted (Ctrl-C)" in page
    assert "train (unfinished)" in page  # the interrupted run's partial phase
    assert "utilization file utilization/images-20261128T092402Z-w4.jsonl is missing" in page
    assert "utilization samples (missing)" in page


def test_links_to_performance_reports_resolve(rendered):
    page = rendered.read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"#]+)">performance report</a>', page)
    assert len(links) == 4
    for link in links:
        assert (rendered.parent / link).resolve().is_file(), link


def test_balance_is_shown_for_sampled_runs(rendered):
    page = rendered.read_text(encoding="utf-8")
    assert page.count("not sampled") == 9  # 12 runs, 3 with samples
    assert re.search(r"balance</span> 0\.\d+ \(gpu\)", page)
    assert re.search(r"balance</span> 0\.\d+ \(cpu\)", page)


def test_cli_writes_the_report_and_says_where(tmp_path, capsys):
    assert main([str(FIXTURES), "--output", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "report.html").is_file()
    assert str(tmp_path / "out" / "report.html") in capsys.readouterr().out
    assert not (tmp_path / "out" / "figures" / "compare.png").exists()


def test_default_output_is_beside_the_results(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURES / "results.jsonl", results)
    assert render(results) == results / "report.html"


@pytest.mark.parametrize("content", [None, "", "\n\n", "not json\n"])
def test_nothing_to_report_exits_2_with_a_clear_message(tmp_path, capsys, content):
    if content is not None:
        (tmp_path / "results.jsonl").write_text(content)
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and str(tmp_path) in err
    assert ("no results.jsonl" in err) if content is None else ("holds no run records" in err)


def test_missing_compare_directory_exits_2(tmp_path, capsys):
    assert main([str(FIXTURES), "--compare", str(tmp_path / "nowhere"), "--output", str(tmp_path / "o")]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_torn_last_line_is_skipped_and_noted(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(FIXTURES, results)
    with open(results / "results.jsonl", "a") as fh:
        fh.write('{"benchmark": "images", "status": "succ')
    page = render(results, output=tmp_path / "out").read_text()
    assert "line 13 is not valid JSON (a torn last line" in page
    assert len(re.findall(r'<tr class="row-(?:succeeded|failed|interrupted)">', page)) == 12


def test_a_single_run_still_makes_sense(tmp_path):
    results = tmp_path / "results"
    (results / "utilization").mkdir(parents=True)
    record = fixture_records()[4]  # images, cuda, 2 workers, with samples
    (results / "results.jsonl").write_text(json.dumps(record) + "\n")
    shutil.copy(FIXTURES / record["artifacts"]["utilization"], results / "utilization")
    report = render(results, output=tmp_path / "out")
    names = {p.name for p in (report.parent / "figures").glob("*.png")}
    assert names == {"images-throughput.png", "images-phases.png", "quality.png", "utilization-run1.png"}
    assert "performance report (missing)" in report.read_text()


def test_only_failed_runs_give_a_page_without_figures(tmp_path):
    failed = [r for r in fixture_records() if r["status"] != "succeeded"]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in failed))
    report = render(tmp_path, output=tmp_path / "out")
    assert list((report.parent / "figures").glob("*.png")) == []
    page = report.read_text()
    assert "<img" not in page and 'id="failures"' in page and "WorkersLostError" in page


def test_rendering_again_replaces_old_figures(tmp_path):
    out = tmp_path / "out"
    render(FIXTURES, compare=BASELINE, output=out)
    render(FIXTURES, output=out, utilization_runs=1)
    assert not (out / "figures" / "compare.png").exists()
    assert {p.name for p in (out / "figures").glob("utilization-*.png")} == {"utilization-run11.png"}


def test_no_results_is_an_exception_for_callers(tmp_path):
    with pytest.raises(NoResults, match=r"no results\.jsonl"):
        render(tmp_path)
