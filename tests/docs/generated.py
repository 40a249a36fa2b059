"""Documents with generated parts (tables, figures): ``--check`` says whether the committed
text is what the committed files give; without it the text is rewritten from them."""
from __future__ import annotations

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
