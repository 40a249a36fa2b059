"""The page comes from a Jinja2 template with autoescaping: whatever a record holds is shown
as text, never read as markup, and the template travels with the installed package."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from html.parser import HTMLParser
from pathlib import Path

from workloads.report import render

REPO = Path(__file__).resolve().parents[2]
TEMPLATE_IN_WHEEL = "workloads/report/templates/report.html.j2"

# A failed run whose texts are markup: the error text as a traceback could carry it, and
# status / profile fields that land in attributes and cells.
ERROR = 'ValueError: bad <script>alert(1)</script> & "quoted" \'single\' a<b>c'
STATUS = 'failed"><i>'
PROFILE = "<img src=x onerror=alert(2)>"
HOSTILE = {"benchmark": "images", "status": STATUS, "started_at": "2026-11-30T10:00:00Z",
           "config": {"device": "cpu", "workers": 1, "profile": PROFILE},
           "phases": {"load": 1.5}, "error": ERROR}


class _Page(HTMLParser):
    """The tags the browser would build, and the text of every ``<pre>`` and ``<td>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.pre: list[str] = []
        self.cells: list[str] = []
        self._open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("pre", "td"):
            (self.pre if tag == "pre" else self.cells).append("")
            self._open.append(tag)

    def handle_endtag(self, tag):
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data):
        if self._open:
            target = self.pre if self._open[-1] == "pre" else self.cells
            target[-1] += data


def _write_results(directory: Path, *records: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return directory


def test_markup_in_a_record_is_shown_as_text(tmp_path):
    results = _write_results(tmp_path / "results", HOSTILE)
    html = render(results, output=tmp_path / "out").read_text(encoding="utf-8")
    assert "<script" not in html and "<img" not in html and "<i>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; " in html
    page = _Page()
    page.feed(html)
    tags = {tag for tag, _ in page.tags}
    assert not tags & {"script", "img", "i", "b"}, sorted(tags)
    # the exact error text, in the runs table and in the failures section
    assert page.pre == [ERROR, ERROR]
    assert PROFILE in page.cells
    row_classes = [attrs.get("class") for tag, attrs in page.tags if tag == "tr" and "class" in attrs]
    assert row_classes == [f"row-{STATUS}"]


def test_template_ships_with_the_package_and_renders_from_it(tmp_path):
    """The wheel ``pip install .`` builds holds the template, and the page renders from the
    wheel alone (imported as a zip archive, the way Dask workers import it)."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--wheel-dir", str(tmp_path / "wheel"), str(_source_copy(tmp_path / "source"))],
                           check=False, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheel").glob("dask_tkg-*.whl")
    assert TEMPLATE_IN_WHEEL in zipfile.ZipFile(wheel).namelist()
    results = _write_results(tmp_path / "results", HOSTILE)
    code = ("import sys, workloads; from workloads.report import render;"
            " assert workloads.__file__.startswith(sys.argv[1]), workloads.__file__;"
            " print(render(sys.argv[2], output=sys.argv[3]))")
    done = subprocess.run([sys.executable, "-c", code, str(wheel), str(results), str(tmp_path / "out")],
                          check=False, capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(wheel), "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in Path(done.stdout.strip()).read_text(encoding="utf-8")


def _source_copy(target: Path) -> Path:
    """What the wheel is built from, copied: setuptools writes build/ and egg-info beside it."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, target)
    for name in ("workloads", "bench"):
        shutil.copytree(REPO / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    return target
