"""docs/reliability.md's tables read as data, what each row's test must contain, and the
parts of the document computed from the tables and from the measured figures.

The rows are written by hand, in any table (a new family of bad inputs is a new
``###`` table under "Bad inputs tried"); the summary, the bad-input counts and the table
of measured figures are computed here::

    python -m tests.reliability.catalogue                    # rewrite the computed parts in place
    python -m tests.reliability.catalogue --check            # exit 1 when they are out of date
    python -m tests.reliability.catalogue --record [FILE]    # take a measured run's figures first

The figures the document quotes are the committed ``docs/results/reliability-figures.json``.
The fault tests measure them again on every run into ``test-artifacts/reliability-figures.json``
(``conftest.record_figure``, not committed); ``--record`` merges that file into the committed
one: a figure the run measured replaces the committed value, a figure it did not measure keeps
it. A row of the figures table whose value the file cannot give, and a row written by hand
between the markers, is kept as the document has it: regenerating loses nothing.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.docs.generated import check_or_rewrite, replace_block

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "reliability.md"
DOC_NAME = DOC.relative_to(REPO).as_posix()
FIGURES = REPO / "docs" / "results" / "reliability-figures.json"  # committed: what the document quotes
MEASURED = REPO / "test-artifacts" / "reliability-figures.json"  # the last run of the fault tests
BAD_INPUTS = "Bad inputs tried"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)(?:\[([^\]]+)\])?`(?: \(case (\d+)\))?")
# Placeholders in an expected message: <address>, ..., {rule: n}. The literal text
# between them is what a test must contain.
PLACEHOLDER = re.compile(r"<[^<>]*>|\.\.\.|\{[^{}]*\}")
HOLE = "\0"  # where an f-string of a test has a value


@dataclass
class Row:
    section: str  # the ## heading
    table: str  # the nearest heading, ## or ###
    cells: dict[str, str]  # column name -> cell
    line: int  # 1-based, in the document

    @property
    def id(self) -> str:
        return next(iter(self.cells.values()))

    @property
    def tests(self) -> list[tuple[str, str, str, int | None]]:
        """(path, test name, parameter id or "", case number or None) of each named test."""
        cell = list(self.cells.values())[-1]
        return [(path, name, param, int(case) if case else None)
                for path, name, param, case in REFERENCE.findall(cell)]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def rows(text: str | None = None) -> list[Row]:
    """Every body row of every table, with its column names."""
    text = DOC.read_text(encoding="utf-8") if text is None else text
    found, section, table, header = [], "", "", None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            title = line.lstrip("#").strip()
            table, header = title, None
            if not line.startswith("###"):
                section = title
        elif not line.startswith("|"):
            header = None
        elif re.match(r"^\|[\s|:-]+\|$", line):
            continue
        elif header is None:
            header = _cells(line)
        else:
            cells = _cells(line)
            if len(cells) != len(header):
                raise ValueError(f"{DOC_NAME}:{number}: {len(cells)} cells under {len(header)} columns "
                                 f"({', '.join(header)})")
            found.append(Row(section, table, dict(zip(header, cells, strict=True)), number))
    return found


def bad_inputs(all_rows: list[Row]) -> list[Row]:
    return [row for row in all_rows if row.section == BAD_INPUTS]


def expected_message(row: Row) -> str:
    """The cell holding what the row's test must assert."""
    for column in ("expected", "result"):
        if column in row.cells:
            return row.cells[column]
    return ""


def message_fragments(cell: str) -> list[str]:
    """The literal pieces of the messages quoted in ``cell`` (in backticks, or in double
    quotes after a backticked key), placeholders cut out."""
    quoted = re.findall(r"`([^`]+)`", cell) + re.findall(r'"([^"]+)"', re.sub(r"`[^`]*`", "", cell))
    pieces = []
    for quote in quoted:
        if not PLACEHOLDER.search(quote) and len(quote) < 3:
            pieces.append(quote)  # a short value (`L`, `BMP`): a whole string of the test
            continue
        text = quote
        while PLACEHOLDER.search(text):  # nested ones too: {file: {reason: n}}
            text = PLACEHOLDER.sub(HOLE, text)
        pieces += [piece.strip(" ,;:") for piece in text.split(HOLE) if len(piece.strip(" ,;:")) >= 3]
    return pieces


# --- what a test contains --------------------------------------------------------------------

def _module_names(tree: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
    return names


def _strings(node: ast.AST) -> list[str]:
    """The string constants under ``node``; an f-string's values become HOLE."""
    found = []
    for child in ast.walk(node):
        if isinstance(child, ast.JoinedStr):
            found.append("".join(part.value if isinstance(part, ast.Constant) and isinstance(part.value, str)
                                 else HOLE for part in child.values))
        elif isinstance(child, ast.Constant) and isinstance(child.value, str):
            found.append(child.value)
    return found


def _case(function: ast.FunctionDef | ast.AsyncFunctionDef, number: int) -> ast.AST:
    """The ``number``-th (1-based) parameter set of the test's parametrize decorator."""
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "parametrize":
            cases = decorator.args[1]
            if isinstance(cases, (ast.List, ast.Tuple)) and 0 < number <= len(cases.elts):
                return cases.elts[number - 1]
    raise LookupError(f"{function.name} has no parametrize case {number}")


def strings_of_test(path: str, name: str, case: int | None = None) -> list[str]:
    """The strings a test holds: its own (decorators included), those of the module-level
    constants and helpers it names, two levels deep. With ``case``, that parameter set's
    strings instead of the whole decorator's, plus the test body's."""
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    names = _module_names(tree)
    function = names.get(name)
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise LookupError(f"{path}::{name} does not exist")
    if case is not None:
        own: list[ast.AST] = [_case(function, case), *function.body]
    else:
        own = [function]
    found, seen, level = [], set(), own
    for _ in range(3):
        following = []
        for node in level:
            if id(node) in seen:
                continue
            seen.add(id(node))
            found += _strings(node)
            following += [names[n.id] for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in names]
        level = following
    return found


def _unescaped(text: str) -> str:
    """A regular expression's literal text: ``\\(`` -> ``(``."""
    return re.sub(r"\\(.)", r"\1", text)


def contains(strings: list[str], piece: str) -> bool:
    """Whether ``piece`` is in one of ``strings``, read as text or as a regular expression,
    an f-string's values standing for anything."""
    if len(piece) < 3:
        return piece in strings
    for text in strings:
        for candidate in (text, _unescaped(text)):
            if piece in candidate:
                return True
            if HOLE in candidate:
                parts = [re.escape(part) for part in candidate.split(HOLE)]
                if any(len(part) >= 3 for part in candidate.split(HOLE)) and re.search(".+?".join(parts), piece):
                    return True
    return False


def missing_from_tests(row: Row) -> list[str]:
    """What of the row's expected message a test it names does not contain."""
    problems = []
    for path, name, _, case in row.tests:
        strings = strings_of_test(path, name, case)
        absent = [piece for piece in message_fragments(expected_message(row)) if not contains(strings, piece)]
        if absent:
            problems.append(f"{path}::{name}" + (f" (case {case})" if case else "") + f" lacks {absent}")
    return problems


# --- the computed parts -----------------------------------------------------------------------

def counts(all_rows: list[Row]) -> dict[str, int]:
    inputs = bad_inputs(all_rows)
    return {"bad_inputs": len(inputs), "families": len({row.table for row in inputs}),
            "code_paths": len({row.cells.get("code path", row.id) for row in inputs}),
            "faults": sum(row.section == "Faults injected and survived" for row in all_rows),
            "survived": sum(row.cells.get("outcome") == "survived" for row in all_rows),
            "lost": sum(int(row.cells["lost"]) for row in all_rows if row.section == "Data lost"),
            "lost_rows": sum(row.section == "Data lost" for row in all_rows)}


def _seconds(value) -> str:
    return f"{value:.2f} s"


# (figure, value from the figures file, the test that measures it)
FIGURE_ROWS = [
    ("images: worker SIGKILL -> the scheduler removes it -> the nanny's replacement joins",
     lambda f: f"{_seconds(f['images_kill']['detected_after_s'])}; {_seconds(f['images_kill']['replaced_after_s'])}",
     "tests/reliability/test_worker_loss.py::test_images_survive_a_worker_killed_mid_infer"),
    ("images `infer`, warm undisturbed / with the kill (26 images; the other worker takes over); recovery",
     lambda f: f"{_seconds(f['images_kill']['infer_s_undisturbed'])} / "
               f"{_seconds(f['images_kill']['infer_s_with_kill'])}"
               f"; {_seconds(f['images_kill']['recovery_s'])}",
     "tests/reliability/test_worker_loss.py::test_images_survive_a_worker_killed_mid_infer"),
    ("taxi: worker SIGKILL -> the scheduler removes it -> the nanny's replacement joins",
     lambda f: f"{_seconds(f['taxi_kill']['detected_after_s'])}; {_seconds(f['taxi_kill']['replaced_after_s'])}",
     "tests/reliability/test_worker_loss.py::test_taxi_training_retried_after_a_worker_killed_mid_training"),
    ("taxi `train`, warm undisturbed / with the kill (30,000 rows, 100 rounds, kill after round 30); recovery",
     lambda f: f"{_seconds(f['taxi_kill']['train_s_undisturbed'])} / {_seconds(f['taxi_kill']['train_s_with_kill'])}"
               f"; {_seconds(f['taxi_kill']['recovery_s'])}",
     "tests/reliability/test_worker_loss.py::test_taxi_training_retried_after_a_worker_killed_mid_training"),
    ("taxi train attempts; seconds per attempt; of which waiting for the replacement",
     lambda f: f"{f['taxi_kill']['train_attempts']}; "
               + " + ".join(f"{s:.2f}" for s in f['taxi_kill']['train_attempt_seconds'])
               + f" s; {_seconds(f['taxi_kill']['train_recovery_seconds'])}",
     "tests/reliability/test_worker_loss.py::test_taxi_training_retried_after_a_worker_killed_mid_training"),
    ("taxi `load`, warm undisturbed / with 2 reads failing with EIO (retried); recovery",
     lambda f: f"{_seconds(f['taxi_read_errors']['load_s_undisturbed'])} / "
               f"{_seconds(f['taxi_read_errors']['load_s_with_errors'])}; "
               f"{_seconds(f['taxi_read_errors']['recovery_s'])}",
     "tests/reliability/test_read_errors.py::test_a_few_io_errors_are_retried_and_no_row_is_lost"),
    ("SIGINT -> runner exited, record written",
     lambda f: _seconds(f["SIGINT_process_ended_after_s"]),
     "tests/reliability/test_interrupts.py::test_a_signal_mid_run_ends_it_with_an_interrupted_record[SIGINT]"),
    ("SIGTERM -> runner exited, record written",
     lambda f: _seconds(f["SIGTERM_process_ended_after_s"]),
     "tests/reliability/test_interrupts.py::test_a_signal_mid_run_ends_it_with_an_interrupted_record[SIGTERM]"),
    ("scheduler SIGKILL -> runner exited, record written (not after the client's 60 s reconnect wait)",
     lambda f: _seconds(f["scheduler_kill_process_ended_after_s"]),
     "tests/reliability/test_interrupts.py::test_a_lost_scheduler_fails_the_run_naming_it"),
]


FIGURES_BLOCK = ("<!-- figures: generated -->", "<!-- /figures -->")
SUMMARY_BLOCK = ("<!-- summary: generated -->", "<!-- /summary -->")
BAD_INPUT_COUNTS_BLOCK = ("<!-- bad-input counts: generated -->", "<!-- /bad-input counts -->")
NOT_MEASURED = "not measured yet"


def _block_rows(text: str) -> list[str]:
    """The body rows of the document's figures table, as written."""
    begin, end = FIGURES_BLOCK
    if begin not in text or end not in text:
        return []
    block = text.split(begin, 1)[1].split(end, 1)[0]
    return [line for line in block.splitlines() if line.startswith("|") and not re.match(r"^\|[\s|:-]+\|$", line)][1:]


def _label(row: str) -> str:
    return _cells(row)[0]


def figures_table(figures: dict, text: str = "") -> str:
    """The table of measured figures: each generated row from ``figures``; a row the file cannot
    give keeps the document's own, and rows written by hand stay where they are."""
    computed: dict[str, str | None] = {}
    for label, value, test in FIGURE_ROWS:
        try:
            computed[label] = f"| {label} | {value(figures)} | `{test}` |"
        except (KeyError, TypeError, IndexError):
            computed[label] = None
    written = _block_rows(text)
    kept = {_label(row): row for row in written}
    rows = []
    for row in written:  # the document's order, hand-written rows included
        label = _label(row)
        rows.append((computed.get(label) or row) if label in computed else row)
    for label, _value, test in FIGURE_ROWS:  # generated rows the document does not have yet
        if label not in kept:
            rows.append(computed[label] or f"| {label} | {NOT_MEASURED} | `{test}` |")
    return "\n".join(["| figure | value | test |", "|---|---|---|", *rows])


RECOVERY = "| recovery, seconds the fault added to the phase (warm undisturbed run vs disturbed) | "


def _recovery_row(figures: dict | None, text: str) -> str:
    """From the figures; without them (or without any recovery in them), the row the document
    already has."""
    kept = re.search("^" + re.escape(RECOVERY) + "(.*) \\|$", text, re.M)
    written = dict(part.split(": ", 1) for part in kept.group(1).split("; ") if ": " in part) if kept else {}
    recoveries = []
    for key, what in (("images_kill", "images, worker killed"), ("taxi_kill", "taxi training, worker killed"),
                      ("taxi_read_errors", "taxi load, reads failing")):
        figure = (figures or {}).get(key)
        if isinstance(figure, dict) and "recovery_s" in figure:
            recoveries.append(f"{what}: {_seconds(figure['recovery_s'])}")
        elif what in written:  # not in the figures: as the document has it
            recoveries.append(f"{what}: {written[what]}")
    if recoveries:
        return RECOVERY + "; ".join(recoveries) + " |"
    return kept.group(0) if kept else RECOVERY + f"{NOT_MEASURED} |"


def summary_table(all_rows: list[Row], figures: dict | None, text: str = "") -> str:
    found = counts(all_rows)
    return "\n".join([
        "| figure | value |", "|---|---|",
        f"| faults injected, each with the result its test asserts | {found['faults']}: {found['survived']} survived "
        f"(the work completes with an undisturbed run's results), the others stopped cleanly or caught with their "
        f"message |",
        _recovery_row(figures, text),
        f"| bad inputs tried | {found['bad_inputs']} inputs in {found['families']} families; "
        f"{found['code_paths']} distinct by code path |",
        f"| data lost, over {found['lost_rows']} checks | {found['lost']} |",
    ])


def render(text: str, figures: dict | None) -> str:
    all_rows = rows(text)
    found = counts(all_rows)
    text = replace_block(text, SUMMARY_BLOCK, summary_table(all_rows, figures, text), DOC)
    text = replace_block(text, BAD_INPUT_COUNTS_BLOCK, f"{found['bad_inputs']} inputs in all, in {found['families']}"
                         f" families; {found['code_paths']} distinct by code path.", DOC)
    if figures is not None:
        text = replace_block(text, FIGURES_BLOCK, figures_table(figures, text), DOC)
    return text


def merge(committed: dict, measured: dict) -> dict:
    """The committed figures with a run's measured ones over them (a figure per top-level key)."""
    return {**committed, **measured}


def load_figures(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def write_figures(path: Path, figures: dict) -> None:
    path.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _shown(path: Path) -> str:
    path = path.resolve()
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.catalogue", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {DOC_NAME}'s computed parts are stale")
    parser.add_argument("--figures", type=Path, default=FIGURES,
                        help=f"the figures the document quotes (default: {FIGURES.relative_to(REPO)})")
    parser.add_argument("--record", type=Path, nargs="?", const=MEASURED, metavar="FILE",
                        help="merge a run's measured figures into --figures first"
                             f" (default: {MEASURED.relative_to(REPO)})")
    args = parser.parse_args(argv)
    if args.record is not None:
        if args.check:
            parser.error("--record writes the figures file: run it without --check")
        measured = load_figures(args.record)
        if measured is None:
            parser.error(f"{args.record} does not exist: run the fault tests first (pytest tests/reliability)")
        write_figures(args.figures, merge(load_figures(args.figures) or {}, measured))
        print(f"{_shown(args.figures)}: recorded {', '.join(sorted(measured))} from {_shown(args.record)}")
    figures = load_figures(args.figures)
    rendered = render(DOC.read_text(encoding="utf-8"), figures)
    return check_or_rewrite(DOC, rendered, args.check, "computed parts out of date",
                            f"({'with' if figures else 'without'} {_shown(args.figures)})")


if __name__ == "__main__":
    sys.exit(main())
