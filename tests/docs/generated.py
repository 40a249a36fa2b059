"""Documents with generated parts (tables, figures) between marker comments: ``--check``
says whether the committed text is what the committed files give; without it the text is
rewritten from them."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def check_or_rewrite(doc: Path, rendered: str, check: bool, stale: str, rewritten: str) -> int:
    """With ``check``: print ``<doc>: up to date`` or ``<doc>: <stale>``, and return 1 when the
    document differs from ``rendered``. Without: write ``rendered``, print
    ``<doc> rewritten <rewritten>`` and return 0."""
    name = doc.relative_to(REPO).as_posix()
    if check:
        out_of_date = doc.read_text(encoding="utf-8") != rendered
        print(f"{name}: " + (stale if out_of_date else "up to date"))
        return int(out_of_date)
    doc.write_text(rendered, encoding="utf-8")
    print(f"{name} rewritten {rewritten}")
    return 0


def block(text: str, markers: tuple[str, str], doc: Path) -> str:
    """What stands between the marker comments ``markers`` (begin, end) of ``doc``'s text."""
    begin, end = markers
    if begin not in text or end not in text:
        raise ValueError(f"{doc.relative_to(REPO).as_posix()} lacks the markers {begin} ... {end}")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def replace_block(text: str, markers: tuple[str, str], body: str, doc: Path) -> str:
    """``doc``'s text with ``body`` between the marker comments ``markers``."""
    block(text, markers, doc)  # names the document whose markers are missing
    begin, end = markers
    pattern = re.compile(re.escape(begin) + r"\n(?:.*?\n)?" + re.escape(end), re.S)
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)
