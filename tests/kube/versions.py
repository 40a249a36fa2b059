"""Which Kubernetes each real-server test ran on, said where a person reads a run.

- The pytest header names the builds of the run (``kubernetes: v1.33.13 (current stacks),
  v1.20.2 (paper's stacks)``), from the binaries themselves (``--version``) where they are
  built, else the version pinned for the build that is still to come.
- Each test that used a server records the version that server reported (``GET /version``)
  as the user property ``kubernetes`` (in a JUnit XML report too), and the terminal summary
  counts the outcomes per version and folder: a suite that silently ran on the wrong server
  shows there.

The conftest at the top of ``tests/`` registers the hooks by name.
"""
from __future__ import annotations

import subprocess
from collections import Counter

import pytest

from tests.kube.binaries import RELEASES, KubeRelease

PROPERTY = "kubernetes"
_outcomes: Counter[tuple[str, str, str]] = Counter()  # (version, folder, outcome) -> tests


def record(item: pytest.Item, version: str) -> None:
    """Record that ``item`` ran against a server reporting ``version`` (once per version)."""
    if (PROPERTY, version) not in item.user_properties:
        item.user_properties.append((PROPERTY, version))


def built_version(release: KubeRelease) -> str:
    """What the built kube-apiserver says it is, or the pinned version and "not built yet"."""
    binary = release.binary("kube-apiserver")
    try:
        said = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30,
                              check=True).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return f"{release.version} (not built yet)"
    return said[-1] if said else release.version


def pytest_report_header(config) -> str:
    return "kubernetes: " + ", ".join(f"{built_version(r)} ({r.serves})" for r in RELEASES)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Record the version of every server fixture the test holds (its whole fixture closure)."""
    for value in getattr(item, "funcargs", {}).values():
        version = getattr(value, "version", None)
        if isinstance(version, dict) and "gitVersion" in version and hasattr(value, "api_client"):
            record(item, version["gitVersion"])
    return (yield)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and not report.passed):
        folder = report.nodeid.split("::")[0].rsplit("/", 1)[0]
        for name, version in report.user_properties:
            if name == PROPERTY:
                _outcomes[(str(version), folder, report.outcome)] += 1


def pytest_terminal_summary(terminalreporter) -> None:
    if not _outcomes:
        return
    terminalreporter.section("tests by the Kubernetes they ran on")
    for version in sorted({v for v, _, _ in _outcomes}, reverse=True):
        folders = sorted({f for v, f, _ in _outcomes if v == version})
        parts = []
        for folder in folders:
            counts = {o: n for (v, f, o), n in _outcomes.items() if v == version and f == folder}
            parts.append(f"{folder} " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items())))
        terminalreporter.write_line(f"{version}: " + "; ".join(parts))
