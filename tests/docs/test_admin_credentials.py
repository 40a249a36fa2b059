"""No document tells anyone to write the guest cluster's admin credentials to a file: neither a
``kubeconfig`` stack output (the stack no longer exports one; the runner's is
``runnerKubeconfig``) nor the ``<cluster>-kubeconfig`` Secret of the vSphere Namespace is
redirected into one. The runner's namespaced kubeconfig may be, readable by its owner alone."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
ADMIN_SOURCES = (
    re.compile(r"stack output\b(?:\s+--?[\w-]+)*\s+kubeconfig\b"),  # the admin kubeconfig as a stack output
    re.compile(r"get secret\s+\S*-kubeconfig\b"),  # Cluster API's <cluster>-kubeconfig Secret
)
REDIRECT = re.compile(r"\s>>?\s*\S")  # `> file` (not a placeholder's `<name>`)


def admin_written_to_a_file(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if REDIRECT.search(line) and any(source.search(line) for source in ADMIN_SOURCES)]


def test_no_document_writes_admin_credentials_to_a_file():
    found = {doc.relative_to(REPO).as_posix(): admin_written_to_a_file(doc.read_text(encoding="utf-8"))
             for doc in DOCUMENTS}
    assert not {doc: lines for doc, lines in found.items() if lines}


def test_the_check_catches_what_the_docs_said_before():
    assert admin_written_to_a_file("pulumi stack output --show-secrets kubeconfig > guest.kubeconfig")
    assert admin_written_to_a_file(
        "kubectl -n ns get secret tkc-kubeconfig -o jsonpath='{.data.value}' | base64 -d > a")
    assert not admin_written_to_a_file(
        "(umask 077; pulumi stack output --show-secrets runnerKubeconfig > dask-runner.kubeconfig)")
    assert not admin_written_to_a_file(
        "kubectl --kubeconfig <(kubectl -n <ns> get secret <clusterName>-kubeconfig"
        " -o jsonpath='{.data.value}' | base64 -d)")
