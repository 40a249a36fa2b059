"""The README stays a short entry point whose commands work, and the documents' links lead
somewhere: the README is under 160 lines with no line over 150 characters; every command of
its code blocks that starts with ``dask-tkg``, ``python -m`` or ``.venv/bin/``, as written
with ``--help`` added, exits 0; every relative link of README.md and docs/*.md names a file of the
repository (and, with ``#anchor``, one of that file's headings)."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs import tables

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_LINES = 160
MAX_WIDTH = 150
COMMAND_STARTS = ("dask-tkg", "python -m", ".venv/bin/")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^()\s]+)\)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < MAX_LINES, f"README.md has {len(lines)} lines: move details into docs/"


def test_no_readme_line_or_table_row_is_wider_than_150_characters():
    wide = [f"README.md:{n}: {len(line)} characters" for n, line in
            enumerate(README.read_text(encoding="utf-8").splitlines(), 1) if len(line) > MAX_WIDTH]
    assert not wide, wide


def test_no_docs_line_is_wider_than_150_characters():
    """Prose and hand-written tables in docs/ too; the generated tables (one column per result
    file) and the reliability catalogue's rows (each names its test) may be wider."""
    wide = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        if path == tables.DOC:
            for markers in (tables.RESULTS, tables.BOUNDS):
                text = text.replace(tables.block(text, markers), "")
        for number, line in enumerate(text.splitlines(), 1):
            if len(line) > MAX_WIDTH and not (path.name == "reliability.md" and line.startswith("|")):
                wide.append(f"{path.relative_to(REPO)}:{number}: {len(line)} characters")
    assert not wide, wide


def readme_commands() -> list[str]:
    """The command lines of the README's code blocks that this project's commands start."""
    found = []
    for block in FENCE.findall(README.read_text(encoding="utf-8")):
        for raw in block.splitlines():
            line = raw.strip()
            if line.startswith(COMMAND_STARTS) and line not in found:
                found.append(line)
    return found


def help_argv(line: str) -> list[str] | None:
    """The command as written, with ``--help`` at its end: argparse checks each option and
    value before it (an unknown option, a bad choice, two options that exclude each other)
    and stops at ``--help``. None where the program is not there (the launcher before
    ``make run``)."""
    words = shlex.split(line, comments=True)
    if words[0] == "python" or (words[0].startswith(".venv/bin/python") and words[1:2] == ["-m"]):
        program = sys.executable if words[0] == "python" else str(REPO / words[0])
        assert words[1] == "-m" and len(words) > 2, line
        return [program, *words[1:], "--help"] if Path(program).exists() else None
    script = REPO / ".venv" / "bin" / "dask-tkg" if words[0] == "dask-tkg" else REPO / words[0]
    return [str(script), *words[1:], "--help"] if script.exists() else None


def test_the_readme_names_commands_to_check():
    starts = {line.split()[0] for line in readme_commands()}
    assert {"dask-tkg", "python", ".venv/bin/python"} <= starts, starts


@pytest.mark.parametrize("line", readme_commands())
def test_every_readme_command_answers_help(line):
    argv = help_argv(line)
    if argv is None:
        pytest.skip(f"{line.split()[0]} is not there: `make run` links .venv/bin/dask-tkg and makes .venv")
    done = subprocess.run(argv, check=False, cwd=REPO, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, \
        f"{shlex.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "usage" in (done.stdout + done.stderr).lower(), f"{shlex.join(argv)} printed no usage"
    # argparse leaves an unknown option for the end, after --help: the help must name each one
    unknown = [word for word in argv[:-1] if word.startswith("--") and word.split("=")[0] not in done.stdout]
    assert not unknown, f"{line}: {unknown} not among the options of {shlex.join(argv)}"


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        found.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return found


def links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return LINK.findall(text)


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_names_a_file_of_the_repository(path):
    broken = []
    for target in links(path):
        if re.match(r"^[a-z][a-z+.-]*:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.is_relative_to(REPO):
            broken.append(f"{target}: outside the repository")
        elif not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: {resolved.relative_to(REPO)} has no heading #{anchor}")
    assert not broken, f"{path.relative_to(REPO)}: {broken}"


def test_the_link_check_can_fail(tmp_path):
    assert slug("Before the first `pulumi up`") == "before-the-first-pulumi-up"
    assert slug("Settings (`pulumi preview`)") == "settings-pulumi-preview"
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n[gone](missing.md) [here](#a-page) `[not](a-link.md)`\n")
    assert links(page) == ["missing.md", "#a-page"] and anchors(page) == {"a-page"}
