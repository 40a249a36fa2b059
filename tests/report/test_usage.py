"""``dask-tkg usage`` over a team's collected records (tests/report/usage_records.py: three people,
written by the runner's record writer): GPU-hours held and busy per person, per week and per run,
the numbers computed here by hand, at a rate and without one; the CSV files and the page say the
same; a run without ``gpu_usage`` is named as not recorded, never counted as zero; a busy time
not measured reads ``not measured``, never 0; a bad path, a bad line and a bad rate are one line each."""
from __future__ import annotations

import csv
import json
import re
from html import unescape
from pathlib import Path

import dask.config
import pytest

from workloads import cli
from workloads.core.commands import PROG_ENV
from workloads.report import usage
from workloads.runs.results import RESULTS_FILE, append_record

from .usage_records import RUNS, record, write_team

H = 3600.0


@pytest.fixture
def team(tmp_path) -> dict[str, Path]:
    return write_team(tmp_path / "team")


def run_usage(capsys, *argv: str) -> tuple[int, str, str]:
    code = usage.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def text(html: str) -> str:
    """The page's words, tags dropped and spaces joined, as a reader sees them."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_per_person_hand_computed_at_a_rate(team, tmp_path, capsys, monkeypatch):
    """Through ``dask-tkg usage`` itself, over two directories and one results.jsonl."""
    monkeypatch.setenv(PROG_ENV, "dask-tkg")  # the command sets it; monkeypatch restores it
    out_dir = tmp_path / "out"
    code = cli.main(["usage", str(team["alice"].parent), str(team["bob"].parent), str(team["carol"]),
                     "--rate", "2.5", "--currency", "EUR", "--output", str(out_dir)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    people = {row["person"]: row for row in rows(out_dir / "usage-people.csv")}
    assert list(people) == ["alice", "bob", "carol"]
    # alice: 7200 + 5400 s held, 3600 + 1800 busy; bob: 14400 held, busy not measured; carol: 1800 + 0, 1440 busy
    expected = {"alice": (2, 2, 2, (7200 + 5400) / H, (600 + 300) / H, (4800 + 4500) / H, (1800 + 600) / H,
                          (3600 + 1800) / H, (3600 + 1800) / (7200 + 5400), (7200 + 5400) / H * 2.5),
                "bob": (1, 0, 4, 4.0, 1200 / H, 3.0, 2400 / H, None, None, 10.0),
                "carol": (2, 1, 1, 0.5, 120 / H, 1500 / H, 180 / H, 0.4, 0.8, 1.25)}
    for person, (runs, measured, gpus, held, waiting, working, idle, busy, ratio, cost) in expected.items():
        row = people[person]
        assert (int(row["runs"]), int(row["busy_measured_runs"]), int(row["most_gpus"])) == (runs, measured, gpus)
        for column, value in (("held_gpu_hours", held), ("waiting_gpu_hours", waiting), ("working_gpu_hours", working),
                              ("idle_gpu_hours", idle), ("busy_gpu_hours", busy), ("busy_of_held", ratio),
                              ("cost", cost)):
            expected_cell = "" if value is None else pytest.approx(value, abs=5e-7)  # the CSV has 6 decimals
            assert (row[column] if value is None else float(row[column])) == expected_cell, (person, column)
        assert row["currency"] == "EUR"
    assert people["alice"]["held_gpu_hours"] == "3.5" and people["alice"]["cost"] == "8.75"
    assert "alice: 3.50 GPU-hours held, 1.50 busy (43% of held), 2 run(s), 8.75 EUR" in out.splitlines()
    assert "bob: 4.00 GPU-hours held, busy not measured, 1 run(s), 10.00 EUR" in out.splitlines()
    assert "carol: 0.50 GPU-hours held, 0.40 busy (80% of the 0.50 held where measured), 2 run(s), 1.25 EUR" in out
    assert out.splitlines()[-1] == f"usage: {out_dir / 'usage.html'}"


def test_per_week_and_person_hand_computed(team, tmp_path, capsys):
    """ISO weeks of each run's start in UTC: carol's Sunday-evening run at UTC-1 is Monday, week 50."""
    code, _, _ = run_usage(capsys, *(team[p] for p in ("alice", "bob", "carol")), "--rate", "2.5",
                           "--output", tmp_path)
    assert code == 0
    weeks = [(r["week"], r["person"], float(r["held_gpu_hours"]), r["busy_gpu_hours"], float(r["cost"]))
             for r in rows(tmp_path / "usage-weeks.csv")]
    assert weeks == [("2026-W49", "alice", 2.0, "1.0", 5.0), ("2026-W49", "bob", 4.0, "", 10.0),
                     ("2026-W49", "carol", 0.5, "0.4", 1.25), ("2026-W50", "alice", 1.5, "0.5", 3.75),
                     ("2026-W50", "carol", 0.0, "", 0.0)]
    from workloads.report.usage_data import load

    totals = {t.key: t for t in load([str(team[p]) for p in ("alice", "bob", "carol")]).weeks()}
    assert (totals["2026-W49"].held / H, totals["2026-W49"].busy / H) == pytest.approx((6.5, 1.4))
    assert totals["2026-W49"].ratio == pytest.approx(1.4 / 2.5)  # bob's 4 GPU-hours measured no busy time
    assert (totals["2026-W50"].held / H, totals["2026-W50"].ratio) == pytest.approx((1.5, 0.5 / 1.5))


def test_every_run_is_a_row_and_the_older_record_is_not_recorded(team, tmp_path, capsys):
    code, out, _ = run_usage(capsys, team["alice"], team["bob"], team["carol"], "--rate", "2.5",
                             "--output", tmp_path)
    assert code == 0
    runs = rows(tmp_path / "usage-runs.csv")
    assert [(r["person"], r["run"], r["week"]) for r in runs] == [
        ("alice", "2", "2026-W49"), ("alice", "3", "2026-W50"), ("bob", "1", "2026-W49"),
        ("carol", "1", "2026-W49"), ("carol", "2", "2026-W50")]
    assert runs[2]["busy_gpu_hours"] == "" and runs[2]["busy_source"] == "" and runs[0]["busy_source"] == "nvml"
    assert (runs[4]["source"], float(runs[4]["held_gpu_hours"])) == ("local", 0.0)
    line = (f"note: 1 run(s) without gpu_usage (recorded before GPU usage was): not recorded, left out of every"
            f" number here rather than counted as zero ({team['alice']} #1)")
    assert out.splitlines()[0] == line
    html = text((tmp_path / "usage.html").read_text(encoding="utf-8"))
    assert line.removeprefix("note: ") in html


def test_the_page_shows_the_same_numbers_and_busy_not_measured(team, tmp_path, capsys):
    run_usage(capsys, team["alice"], team["bob"], team["carol"], "--rate", "2.5", "--currency", "EUR",
              "--output", tmp_path)
    html = (tmp_path / "usage.html").read_text(encoding="utf-8")
    words = text(html)
    assert "5 runs of 3 people" in words and "Rate: 2.5 EUR per GPU-hour held" in words
    people = text(html.split('id="people-table"')[1].split("</table>")[0])
    assert "alice 2 2 2 3.50 0.25 2.58 0.67 1.50 43% 8.75 EUR" in people
    assert "bob 1 0 4 4.00 0.33 3.00 0.67 not measured not measured 10.00 EUR" in people
    assert "carol 2 1 1 0.50 0.03 0.42 0.05 0.40 80% 1.25 EUR" in people
    assert html.count("data:image/png;base64,") == 2
    assert "Busy time not measured for bob: held only." in words
    for name in ("usage-people.csv", "usage-weeks.csv", "usage-runs.csv"):
        assert f'<a href="{name}">' in html


def test_without_a_rate_no_cost_anywhere(team, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DASK_TKG__USAGE__GPU_HOUR_RATE", raising=False)
    dask.config.refresh()
    code, out, _ = run_usage(capsys, team["bob"], "--output", tmp_path)
    assert code == 0 and "bob: 4.00 GPU-hours held, busy not measured, 1 run(s)" in out.splitlines()
    assert "cost" not in rows(tmp_path / "usage-people.csv")[0] and "EUR" not in out
    assert "Rate: no rate set" in text((tmp_path / "usage.html").read_text(encoding="utf-8"))
    assert "<th>cost</th>" not in (tmp_path / "usage.html").read_text(encoding="utf-8")


def test_the_rate_defaults_to_the_runners_setting(team, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DASK_TKG__USAGE__GPU_HOUR_RATE", "3")
    monkeypatch.setenv("DASK_TKG__USAGE__CURRENCY", "CHF")
    dask.config.refresh()
    try:
        code, out, _ = run_usage(capsys, team["bob"], "--output", tmp_path)
    finally:
        monkeypatch.undo()
        dask.config.refresh()
    assert code == 0 and "bob: 4.00 GPU-hours held, busy not measured, 1 run(s), 12.00 CHF" in out


def test_the_default_output_is_the_first_results_directory(team, capsys):
    code, out, _ = run_usage(capsys, team["carol"], team["bob"], "--rate", "0")
    assert code == 0 and out.splitlines()[-1] == f"usage: {team['carol'].parent / 'usage.html'}"
    assert (team["carol"].parent / "usage-figures" / "usage-people.png").is_file()


def test_a_path_that_is_no_results_is_one_line(team, tmp_path, capsys):
    other = tmp_path / "notes.txt"
    other.write_text("x\n")
    for path, said in ((other, f"error: {other} holds no run records (notes.txt line 1 is not valid JSON (a torn last"
                                " line: a run still writing, or one cut short); skipped)"),
                       (tmp_path / "gone", f"error: {tmp_path / 'gone'} does not exist: name a results directory, or"
                                           f" a file of run records ({RESULTS_FILE}, or a team's collected one)"),
                       (tmp_path, f"error: no {RESULTS_FILE} in {tmp_path}: run `python -m workloads.run` first"
                                  " (or name the results directory)")):
        code, out, err = run_usage(capsys, team["bob"], path, "--output", tmp_path / "out")
        assert (code, out, err) == (2, "", said + "\n")
    assert not (tmp_path / "out").exists()


def test_a_teams_collected_file_of_any_name_is_read(team, tmp_path, capsys):
    """A team gathers each person's records into one file of their own (``alice.jsonl``): it is
    read as a results.jsonl is, and the page goes beside it."""
    collected = tmp_path / "collected"
    collected.mkdir()
    alice = collected / "alice.jsonl"
    alice.write_bytes(team["alice"].read_bytes())
    code, out, err = run_usage(capsys, alice, "--rate", "2.5", "--currency", "EUR")
    assert (code, err) == (0, ""), err
    assert "alice: 3.50 GPU-hours held, 1.50 busy (43% of held), 2 run(s), 8.75 EUR" in out.splitlines()
    assert out.splitlines()[-1] == f"usage: {collected / 'usage.html'}"


def test_an_unreadable_line_is_one_note_and_the_rest_counts(team, tmp_path, capsys):
    with team["bob"].open("a", encoding="utf-8") as fh:
        fh.write('{"benchmark": "images", "gpu_us')  # a run still writing
    code, out, _ = run_usage(capsys, team["bob"], "--rate", "1", "--output", tmp_path)
    assert code == 0
    assert out.splitlines()[0] == (f"note: {team['bob']}: {RESULTS_FILE} line 2 is not valid JSON (a torn last line:"
                                   " a run still writing, or one cut short); skipped")
    assert "bob: 4.00 GPU-hours held, busy not measured, 1 run(s), 4.00 EUR" in out


@pytest.mark.parametrize("rate", ["-1", "nan", "two"])
def test_a_rate_that_is_no_price_is_one_line(team, tmp_path, capsys, rate):
    code, out, err = run_usage(capsys, team["bob"], "--rate", rate, "--output", tmp_path)
    assert (code, out) == (2, "")
    assert err == f"error: --rate is {rate!r}: give the price of one GPU-hour, a number of 0 or more (0: no cost)\n"


def test_docs_say_what_the_command_prints(team, tmp_path, capsys):
    """docs/dask.md, "GPU-hours: held and busy": its example's lines are this fixture's, as printed."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "dask.md").read_text(encoding="utf-8")
    documented = re.findall(r"^# ((?:alice|bob): .+)$", doc, flags=re.MULTILINE)
    _, out, _ = run_usage(capsys, team["alice"].parent, team["bob"].parent, team["carol"], "--rate", "2.5",
                          "--currency", "EUR", "--output", tmp_path)
    assert len(documented) == 2 and all(line in out.splitlines() for line in documented), documented
    _, _, err = run_usage(capsys, tmp_path / "usage.html")
    assert "usage.html holds no run records (usage.html line 1 is not valid JSON" in err
    assert "error: --rate is '-1': give the price of one GPU-hour, " in doc
    assert "`1 run(s) without gpu_usage (recorded before GPU usage was): not recorded, left out of every number" in doc


def test_a_setting_that_is_no_price_is_one_line_naming_it(team, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DASK_TKG__USAGE__GPU_HOUR_RATE", "ten")
    dask.config.refresh()
    try:
        code, out, err = run_usage(capsys, team["bob"], "--output", tmp_path)
    finally:
        monkeypatch.undo()
        dask.config.refresh()
    assert (code, out) == (2, "")
    assert err == ("error: the setting tkg.usage.gpu_hour_rate (DASK_TKG__USAGE__GPU_HOUR_RATE) is 'ten': give the"
                   " price of one GPU-hour, a number of 0 or more (0: no cost)\n")


def test_a_missing_utilization_file_is_no_note_here(team, tmp_path, capsys):
    """A team's collected records come without their utilization files, which the usage report does not read."""
    lines = team["bob"].read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0]) | {"artifacts": {"utilization": "utilization/run-1.jsonl"}}
    team["bob"].write_text(json.dumps(record) + "\n", encoding="utf-8")
    code, out, _ = run_usage(capsys, team["bob"], "--rate", "0", "--output", tmp_path)
    assert code == 0 and out.splitlines()[0] == "bob: 4.00 GPU-hours held, busy not measured, 1 run(s)"


def test_a_run_whose_gpu_seconds_were_not_read_is_left_out_not_zero(team, tmp_path, capsys):
    """The runner writes None where it could not read the pods (no kubeconfig for them), its note saying why."""
    unread = record(RUNS["bob"][0] | {"held_gpu_seconds": None, "waiting_gpu_seconds": None,
                                      "working_gpu_seconds": None, "idle_gpu_seconds": None,
                                      "note": "no kubeconfig for the pods: held GPUs not read"})
    append_record(team["bob"].parent, unread)
    code, out, _ = run_usage(capsys, team["bob"], "--rate", "1", "--output", tmp_path)
    assert code == 0
    assert out.splitlines()[:2] == [
        f"note: 1 run(s) whose GPU-seconds the runner could not read (no kubeconfig for the pods: held GPUs not read):"
        f" left out of every number here rather than counted as zero ({team['bob']} #2)",
        "bob: 4.00 GPU-hours held, busy not measured, 1 run(s), 4.00 EUR"]
    assert len(rows(tmp_path / "usage-runs.csv")) == 1
