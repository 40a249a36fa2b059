"""``--compare``: runs matched by benchmark + device + workers + dataframe + profile,
ratio = this / other, with hand-computed expectations."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from workloads.report import render
from workloads.report.command import main
from workloads.report.runs import compare, load

from .support import BASELINE, FIXTURES


def _record(benchmark, device, workers, phases, metrics, *, status="succeeded", dataframe=None, profile="smoke"):
    if dataframe:
        metrics = {"backend": dataframe, **metrics}
    return {"benchmark": benchmark, "status": status,
            "config": {"profile": profile, "workers": workers, "device": device},
            "phases": phases, "metrics": metrics, "started_at": "2026-11-29T10:00:00Z"}


def _write(directory: Path, records: list[dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return directory


@pytest.fixture
def two_sets(tmp_path):
    this = _write(tmp_path / "this", [
        _record("images", "cpu", 2, {"list": 1.0, "infer": 4.0}, {"images_per_second": 20.0}),
        _record("images", "cpu", 2, {"list": 1.0, "infer": 2.0}, {"images_per_second": 30.0}),
        _record("images", "cpu", 2, {"list": 9.0}, {"images_per_second": 1000.0}, status="failed"),  # ignored
        _record("images", "cuda", 4, {"infer": 1.0}, {"images_per_second": 500.0}),
        _record("taxi", "cuda", 7, {"load": 20.0, "train": 25.0},
                {"load_rows_per_second": 1.0e6, "train_rows_per_second": 4.0e5}, dataframe="cudf"),
    ])
    other = _write(tmp_path / "other", [
        _record("images", "cpu", 2, {"list": 2.0, "infer": 8.0}, {"images_per_second": 10.0}),
        _record("images", "cpu", 2, {"list": 2.0, "infer": 8.0}, {"images_per_second": 99.0}, profile="small"),
        _record("taxi", "cuda", 7, {"load": 40.0, "train": 20.0},
                {"load_rows_per_second": 5.0e5, "train_rows_per_second": 5.0e5}, dataframe="cudf"),
        _record("taxi", "cuda", 7, {"load": 80.0, "train": 30.0}, {}, dataframe="pandas"),
    ])
    return this, other


def test_ratios_are_this_over_other_with_the_right_direction(two_sets):
    this, other = two_sets
    result = compare(load(this).runs, load(other).runs)
    got = {(r.key[0], r.measure): (round(r.ratio, 6), r.better, r.n_this, r.n_other) for r in result.ratios}
    assert got == {
        # images cpu 2 workers smoke: this = mean of two runs (20, 30 -> 25 images/s; list 1, 1; infer 4, 2 -> 3;
        # totals 5, 3 -> 4), other = one run (10 images/s; list 2; infer 8; total 10)
        ("images", "images_per_second"): (2.5, True, 2, 1),
        ("images", "phase list"): (0.5, True, 2, 1),
        ("images", "phase infer"): (0.375, True, 2, 1),
        ("images", "total time"): (0.4, True, 2, 1),
        # taxi cuda cudf 7 workers: rows/s higher is better, seconds lower is better
        ("taxi", "load_rows_per_second"): (2.0, True, 1, 1),
        ("taxi", "train_rows_per_second"): (0.8, False, 1, 1),
        ("taxi", "phase load"): (0.5, True, 1, 1),
        ("taxi", "phase train"): (1.25, False, 1, 1),
        ("taxi", "total time"): (0.75, True, 1, 1),
    }
    assert next(r.key for r in result.ratios) == ("images", "cpu", 2, None, "smoke")
    assert result.only_here == [("images", "cuda", 4, None, "smoke")]
    assert result.only_there == [("images", "cpu", 2, None, "small"), ("taxi", "cuda", 7, "pandas", "smoke")]


def test_equal_values_are_neither_better_nor_worse(tmp_path):
    same = [_record("images", "cpu", 1, {"infer": 3.0}, {"images_per_second": 7.0})]
    result = compare(load(_write(tmp_path / "a", same)).runs, load(_write(tmp_path / "b", same)).runs)
    assert {r.ratio for r in result.ratios} == {1.0}
    assert {r.better for r in result.ratios} == {None}


def test_the_page_shows_the_ratios_and_says_which_way_is_better(two_sets, tmp_path):
    this, other = two_sets
    page = render(this, compare=other, output=tmp_path / "out").read_text()
    assert "Ratio = this / other" in page
    assert "higher is better" in page and "lower is better" in page
    assert '<td class="num better">2.500</td>' in page
    assert '<td class="num worse">1.250</td>' in page
    assert "Only in this set: images · cuda · 4 workers · smoke." in page
    assert (tmp_path / "out" / "figures" / "compare.png").stat().st_size > 10_000


def test_fixture_comparison_from_the_command_line(tmp_path):
    assert main([str(FIXTURES), "--compare", str(BASELINE), "--output", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    # images cuda 4 workers: this = mean(597.3, 611.0) = 604.15, other = 560.0 -> 1.079
    assert "1.079" in page
    assert (tmp_path / "figures" / "compare.png").is_file()


def test_nothing_in_common_says_so(tmp_path):
    a = _write(tmp_path / "a", [_record("images", "cpu", 1, {"infer": 1.0}, {"images_per_second": 1.0})])
    b = _write(tmp_path / "b", [_record("images", "cuda", 1, {"infer": 1.0}, {"images_per_second": 1.0})])
    page = render(a, compare=b, output=tmp_path / "out").read_text()
    assert "No configuration ran successfully in both sets." in page
    assert not (tmp_path / "out" / "figures" / "compare.png").exists()
