"""docs/deploy.md shows the dev stack's network list exactly as the module derives it from
Pulumi.dev.yaml (``python -m tests.docs.network_requirements`` writes it)."""
from __future__ import annotations

from tests.docs import network_requirements


def test_the_documented_network_list_is_the_dev_stacks():
    text = network_requirements.DOC.read_text(encoding="utf-8")
    assert network_requirements.render(text) == text, "run: python -m tests.docs.network_requirements"
