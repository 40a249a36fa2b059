"""docs/glossary.md defines each word a newcomer meets in README.md and docs/deploy.md without
being told it: an entry whose bold heading names the word, with a link to where it comes from."""
from __future__ import annotations

import re

import pytest

from tests.docs.generated import REPO

GLOSSARY = REPO / "docs" / "glossary.md"
WORDS = ("Supervisor", "vSphere Namespace", "NGC", "NVAIE", "NLS", "DLS", "CLS", "SPBM", "ClusterClass", "VM class",
         "TKC", "RWX", "20C", "VKS", "VKr", "TKR")
HEADING = re.compile(r"^\*\*(.+?)\*\*")


def entries() -> dict[str, str]:
    """Each paragraph's bold heading -> the paragraph."""
    paragraphs = re.split(r"\n\s*\n", GLOSSARY.read_text(encoding="utf-8"))
    return {m.group(1): p for p in paragraphs if (m := HEADING.match(p.strip()))}


@pytest.mark.parametrize("word", WORDS)
def test_the_word_is_defined_with_its_source(word):
    found = [text for heading, text in entries().items()
             if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", heading)]
    assert found, f"docs/glossary.md has no entry for {word!r}"
    assert any("https://" in text for text in found), f"the entry for {word!r} links no source"
