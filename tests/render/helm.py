"""A real Helm 3 engine for the render tests: ``helm template`` on the pinned chart archives.

Helm v3.17.2 (the major version pulumi-kubernetes' ``helm.v3.Release`` embeds), the official
static binary, installed into the cache by ``scripts/install_helm.sh`` (``make stand-ins``).
Rendering is offline: the chart is the sha256-verified archive from the artifact cache, the
values are a file, and the cluster's capabilities are given on the command line
(``--kube-version``: the Kubernetes of the stack the release belongs to, 1.33 for the current
stacks, 1.20 for the paper's; ``--api-versions`` from that API server stand-in's own discovery),
so templates that branch on ``.Capabilities`` see what that cluster would show them.

Why not ``helm-python-sdk`` (``helm_python``): it binds Helm 4's Go SDK, another major version
than the one that installs these releases, and its ``Chart.render()`` reports a newer
Kubernetes than the stack's (only an install with ``dry_run="server"`` against a live server gets the
real capabilities). The Helm 3 CLI gives the same engine as the deploy, offline, with the
capabilities named explicitly.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from workloads.core.config import cache_dir

HELM_VERSION = "v3.17.2"
HELM_BIN = cache_dir() / "helm" / "bin" / "helm"
INSTALL_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install_helm.sh"


class HelmError(RuntimeError):
    """``helm template`` refused the chart or the values; ``stderr`` is Helm's own message."""

    def __init__(self, chart: Path, stderr: str):
        self.stderr = stderr.strip()
        super().__init__(f"helm template {chart.name}: {self.stderr}")


def helm_binary() -> Path:
    """The cached helm, checked to be the pinned version (never downloaded at test time)."""
    if not (HELM_BIN.is_file() and os.access(HELM_BIN, os.X_OK)):
        raise FileNotFoundError(f"{HELM_BIN} is missing: run {INSTALL_SCRIPT.name} (make stand-ins) first")
    version = subprocess.run([str(HELM_BIN), "version", "--template", "{{.Version}}"], check=False, capture_output=True,
                             text=True, timeout=30).stdout.strip()
    if version != HELM_VERSION:
        raise RuntimeError(f"{HELM_BIN} is {version!r}, the tests need {HELM_VERSION}: rerun {INSTALL_SCRIPT.name}")
    return HELM_BIN


@dataclass(frozen=True)
class Rendered:
    """The objects one release renders to (CRDs from the chart's ``crds/`` included)."""

    chart: str
    objects: tuple[dict, ...]

    def of_kind(self, kind: str) -> list[dict]:
        return [o for o in self.objects if o["kind"] == kind]

    def named(self, kind: str, name: str) -> dict:
        found = [o for o in self.of_kind(kind) if o["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.chart}: {len(found)} {kind} named {name!r} in {self.kinds()}"
        return found[0]

    def kinds(self) -> list[str]:
        return sorted(f"{o['kind']}/{o['metadata']['name']}" for o in self.objects)


def render(chart: Path, release: str, namespace: str, values: dict[str, Any], *, kube_version: str,
           api_versions: tuple[str, ...] = (), post_renderer: str | None = None) -> Rendered:
    """``helm template`` ``chart`` as ``release`` in ``namespace`` for a cluster of ``kube_version``,
    through the release's ``post_renderer`` as Helm runs it; raises HelmError with Helm's message."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(values, handle)  # JSON is YAML: exact types, no YAML re-interpretation
        values_file = handle.name
    try:
        command = [str(helm_binary()), "template", release, str(chart), "--namespace", namespace,
                   "--values", values_file, "--include-crds", "--kube-version", kube_version]
        for api_version in api_versions:
            command += ["--api-versions", api_version]
        if post_renderer:
            command += ["--post-renderer", post_renderer]
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(values_file)
    if done.returncode != 0:
        raise HelmError(chart, done.stderr)
    objects = tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)
    return Rendered(chart.name, objects)


def chart_values(chart: Path) -> dict[str, Any]:
    """The chart's own ``values.yaml`` (its defaults), read from the archive."""
    import tarfile

    with tarfile.open(chart) as archive:
        name = next(m for m in archive.getnames() if m.count("/") == 1 and m.endswith("/values.yaml"))
        member = archive.extractfile(name)
        assert member is not None, f"{chart}: {name} is not a file"
        return yaml.safe_load(member.read()) or {}
