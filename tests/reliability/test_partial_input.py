"""A run that goes without some of its input says so everywhere a person looks: a taxi month cut
short, images that do not decode. The runner's command line on the folder's real cluster, real
files broken the way they break, the record, the console and the rendered report read back;
``--require-all-files`` turns the same input into a failed run that names it."""
from __future__ import annotations

import html
import logging
import re
from pathlib import Path

import pytest

from workloads import run
from workloads.images import synthetic as synth_images
from workloads.runs import results
from workloads.taxi import synthetic as synth_taxi

MONTHS = ["2019-01.parquet", "2019-02.parquet", "2019-03.parquet"]
CUT = "yellow_tripdata_2019-02.parquet"
ROWS = 3_000
COLOUR_MODEL = "workloads.images.synthetic:colour_classifier"
LISTED = 10  # failed images the warning and the report name (the record keeps 50)
BROKEN_IMAGES = LISTED + 2  # more than they name: they say how many more


def _taxi_months(root: Path) -> Path:
    """Three real Parquet months, the middle one cut in half as a copy interrupted mid-file leaves it."""
    synth_taxi.generate(root, MONTHS, ROWS)
    month = root / "taxi" / CUT
    data = month.read_bytes()
    month.write_bytes(data[: len(data) // 2])
    return root


def _dogs_with_broken_images(root: Path) -> tuple[Path, int, str]:
    """A generated dogs tree and ``BROKEN_IMAGES`` JPEGs cut short beside the images of its
    first breed; the total, and how the broken files' paths begin."""
    synth_images.generate(root / "dogs", breeds=2, images_per_breed=3, seed=11)
    folder = sorted((root / "dogs" / "Images").iterdir())[0]
    good = sorted(folder.glob("*.jpg"))[0].read_bytes()
    prefix = f"{folder.name}/{folder.name.split('-')[0]}_9"
    for i in range(BROKEN_IMAGES):
        (folder.parent / f"{prefix}{i:02d}.jpg").write_bytes(good[: len(good) // 2])
    return root, 2 * 3 + BROKEN_IMAGES, prefix


def _cli(client, root: Path, out: Path, *extra: str) -> tuple[int, dict]:
    code = run.main(["--scheduler-address", client.scheduler.address, "--data-dir", str(root), "--output", str(out),
                     "--device", "cpu", "--no-performance-report", *extra])
    (record,) = results.read_records(out)
    return code, record


def _status_row(stdout: str, benchmark: str) -> str:
    """The summary table's row of the benchmark."""
    (row,) = [line for line in stdout.splitlines() if line.startswith(benchmark + " ")]
    return row


def _warnings(caplog, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == logging.WARNING]


def _skipped_section(out: Path) -> str:
    """The report's "Input left out" section, as text."""
    page = (out / "report.html").read_text(encoding="utf-8")
    found = re.search(r'<section id="skipped">(.*?)</section>', page, re.S)
    assert found, "the report has no section for the input left out"
    return html.unescape(found.group(1))


def _cells(section: str) -> list[tuple[str, str]]:
    return re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", section)


def test_a_truncated_parquet_month_is_named_in_the_status_a_warning_and_the_report(client, tmp_path, caplog, capsys):
    caplog.set_level(logging.INFO)
    root, out = _taxi_months(tmp_path / "data"), tmp_path / "out"
    code, record = _cli(client, root, out, "--benchmark", "taxi")
    assert code == 0 and record["status"] == "succeeded"
    metrics = record["metrics"]
    assert metrics["rows_raw"] == 2 * ROWS  # the two whole months: nothing else lost
    skipped = metrics["skipped_input"]
    assert {k: skipped[k] for k in ("what", "verb", "total", "count")} == {"what": "files", "verb": "skipped",
                                                                          "total": 3, "count": 1}
    [item] = skipped["items"]
    reason = item["reason"]
    assert item["name"] == CUT and reason.startswith("unreadable_file: not readable as Parquet: ")
    console = capsys.readouterr().out
    assert "succeeded, 1 of 3 files skipped" in _status_row(console, "taxi")
    assert "taxi: succeeded, 1 of 3 files skipped in " in console  # the line the sweep says as the run ends
    assert _warnings(caplog, "workloads.taxi.benchmark") == [
        f"taxi: 1 of 3 files skipped, their rows left out of this run: {CUT} ({reason})"]
    section = _skipped_section(out)
    assert "1 of 3 files skipped" in section and _cells(section) == [(CUT, reason)]


def test_require_all_files_fails_the_run_on_the_truncated_month_before_training(client, tmp_path, capsys):
    root, out = _taxi_months(tmp_path / "data"), tmp_path / "out"
    code, record = _cli(client, root, out, "--benchmark", "taxi", "--require-all-files")
    assert code == 1 and record["status"] == "failed"
    assert record["error"].startswith("DatasetError: 1 of 3 files skipped and --require-all-files is set: "
                                      f"{CUT} (unreadable_file: not readable as Parquet: ")
    assert "load" in record["unfinished_phases"] and "train" not in record["phases"]
    assert "1 of 3 files skipped and --require-all-files is set" in _status_row(capsys.readouterr().out, "taxi")


def test_images_that_fail_to_decode_are_named_in_the_status_a_warning_and_the_report(client, tmp_path, caplog,
                                                                                     capsys):
    caplog.set_level(logging.INFO)
    (root, total, prefix), out = _dogs_with_broken_images(tmp_path / "data"), tmp_path / "out"
    code, record = _cli(client, root, out, "--benchmark", "images", "--model", COLOUR_MODEL, "--image-batch", "4")
    assert code == 0 and record["status"] == "succeeded"
    metrics = record["metrics"]
    assert metrics["images_failed"] == BROKEN_IMAGES and metrics["images_scored"] == total - BROKEN_IMAGES
    items = [(i["name"], i["reason"]) for i in metrics["skipped_input"]["items"]]
    assert len(items) == BROKEN_IMAGES and all(name.startswith(prefix) for name, _ in items)
    assert all(reason.startswith("truncated image") for _, reason in items)
    row = _status_row(capsys.readouterr().out, "images")
    assert f"succeeded, {BROKEN_IMAGES} of {total} images failed" in row
    named = "; ".join(f"{name} ({reason})" for name, reason in items[:LISTED])
    assert _warnings(caplog, "workloads.images.benchmark") == [
        f"images: {BROKEN_IMAGES} of {total} images failed, left out of the scores: {named}; and 2 more"]
    section = _skipped_section(out)
    assert f"{BROKEN_IMAGES} of {total} images failed" in section
    assert _cells(section) == items[:LISTED]
    assert "And 2 more images not named here" in section


def test_require_all_files_fails_the_run_on_images_that_do_not_decode(client, tmp_path):
    (root, total, prefix), out = _dogs_with_broken_images(tmp_path / "data"), tmp_path / "out"
    code, record = _cli(client, root, out, "--benchmark", "images", "--model", COLOUR_MODEL, "--image-batch", "4",
                        "--require-all-files")
    assert code == 1 and record["status"] == "failed"
    assert record["error"].startswith(f"DatasetError: {BROKEN_IMAGES} of {total} images failed and"
                                      f" --require-all-files is set: {prefix}00.jpg (truncated image")
    assert record["error"].endswith("; and 2 more")


@pytest.mark.parametrize("flag, expected", [((), False), (("--require-all-files",), True),
                                            (("--no-require-all-files",), False)])
def test_the_flag_reaches_both_benchmarks_configs(tmp_path, flag, expected):
    modules, _ = run.import_benchmarks()
    args = run.build_parser(modules, {}).parse_args(list(flag))
    configs = [module.make_config(args, {}, tmp_path, "cpu") for module in modules.values()]
    assert [config.require_all_files for config in configs] == [expected] * len(configs)
