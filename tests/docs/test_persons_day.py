"""What a person needs after ``make run`` is written down, and written as the code says it.

README.md: where the project's command is after ``make run`` (``.venv/bin/dask-tkg``, off ``PATH``
until the venv is activated), every subcommand in its ``--help`` line, and how much disk
``make run``'s venv takes, kept near what the pinned packages install (their RECORD sizes here).

docs/dask.md, "A person's day": the login (where its address is: the team's document), the
``use-context`` step, the token's lifetime, and ``dask-tkg dashboard``, whose documented lines
are the ones workloads/cluster/dashboard.py prints for the same cases.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.setup.runner_install import closure
from workloads import cli
from workloads.cluster import api_answers, dashboard
from workloads.core.errors import EndpointError

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
DASK_DOC = (REPO / "docs" / "dask.md").read_text(encoding="utf-8")
DISK = re.compile(r"`\.venv` takes ([\d.]+) GB")
TOLERANCE = 0.15  # pins move; the README's number is "about"


def section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of the same or a higher level."""
    level = heading.split(" ")[0]
    start = text.index(f"\n{heading}\n")
    ends = [m.start() for m in re.finditer(rf"\n#{{1,{len(level)}}} ", text[start + 1:])]
    return text[start: start + 1 + ends[0]] if ends else text[start:]


def requirements() -> list[str]:
    lines = (REPO / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def test_the_readme_says_where_the_command_is_after_make_run():
    assert "The project's command is `.venv/bin/dask-tkg`, not on `PATH` until `. .venv/bin/activate`" in README


def test_the_readmes_help_line_names_every_subcommand():
    [line] = [line for line in README.splitlines() if line.startswith("dask-tkg --help")]
    listed = [word.strip() for word in line.split("#", 1)[1].split("|")]
    assert listed == list(cli.SUBCOMMANDS)


def test_the_readme_says_what_make_run_downloads_and_installs():
    """The disk number against what requirements.txt's packages install here (their RECORD sizes)."""
    said = DISK.search(README)
    assert said and "The first `make run` downloads about" in README, "the README says nothing of make run's size"
    installed, unmet = closure(requirements())
    assert not unmet, unmet
    size = sum(f.size or 0 for dist in installed.values() for f in dist.files or ()) / 1e9
    assert abs(float(said[1]) - size) <= TOLERANCE * size, f"the README says {said[1]} GB; installed: {size:.2f} GB"


@pytest.fixture(scope="module")
def day() -> str:
    return section(DASK_DOC, "### A person's day")


def test_a_persons_day_covers_login_context_token_and_dashboard(day):
    for needed in ("kubectl vsphere login --server", "`supervisorServer`", "kubectl config use-context",
                   "about 10 hours", "dask-tkg dashboard"):
        assert needed in day, needed


def refusal(names: list[str], given: str | None) -> str:
    with pytest.raises(EndpointError) as caught:
        dashboard.pick(names, given, "dask-alice")
    return f"error: {caught.value}"


def test_the_documented_dashboard_lines_are_the_commands_own(day):
    flat = " ".join(day.split())  # the lines as the document wraps them
    assert dashboard.url_line("dask-alice", "dask-3f9a1c", "http://127.0.0.1:40215/status") in flat
    assert f"error: {api_answers.EXPIRED}; ..." in flat
    assert refusal(["dask-3f9a1c"], "dask-gone") in flat
    assert refusal(["dask-3f9a1c", "dask-7be210"], None) in flat
    assert refusal([], None) in flat
