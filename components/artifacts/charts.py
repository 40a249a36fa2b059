"""The chart archive each Helm release deploys: the one pinned for its chart, version and
repository, verified by sha256 before its path is handed to Helm as the release's chart.

Pins come from ``scripts/artifacts.toml`` (the project's, the same digests the tests render)
and from the ``chartPins`` setting (a site's own chart). A release whose chart has no pin is
refused at preview (``components/settings/charts.py``); the archive is taken from the cache
(``$DASK_TKG__CACHE/artifacts/<file>``), else the offline mirror, else its pinned URL, and a
cached archive whose digest is not the pinned one stops the program rather than being used
or silently replaced.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from components.artifacts.store import Artifact, artifacts_dir, fetch_one, file_sha256, mirror_dir, pinned

SITE_FOLDER = "site-charts"  # a site's own archives, beside the project's charts/ in the cache


class ChartArchiveError(RuntimeError):
    """The pinned archive of a release cannot be had, or the cached one is not the pinned bytes."""


@dataclass(frozen=True)
class ChartRef:
    """A release's chart as its settings name it."""

    repo: str
    chart: str
    version: str

    def key(self) -> tuple[str, str, str]:
        return repo_key(self.repo), self.chart, self.version


def repo_key(url: str) -> str:
    """A repository URL as Helm treats it: the index is ``<url>/index.yaml`` either way."""
    return url.rstrip("/")


def site_pin(repo: str, chart: str, version: str, sha256: str, url: str = "") -> Artifact:
    """A site's chart pin (``chartPins``): the archive goes in the cache's site-charts/ folder."""
    return Artifact(file=f"{SITE_FOLDER}/{chart}-{version}.tgz", what=f"{chart} {version} from {repo} (chartPins)",
                    url=url, sha256=sha256, chart=chart, chart_version=version, chart_repo=repo)


def project_pins() -> tuple[Artifact, ...]:
    return tuple(a for a in pinned() if a.chart)


def find_pin(ref: ChartRef, site: tuple[Artifact, ...] = ()) -> Artifact | None:
    """The pin of ``ref``: a site's first (its own mirror's bytes), then the project's."""
    for pin in (*site, *project_pins()):
        if (repo_key(pin.chart_repo or ""), pin.chart, pin.chart_version) == ref.key():
            return pin
    return None


def pinned_elsewhere(ref: ChartRef, site: tuple[Artifact, ...] = ()) -> list[Artifact]:
    """Pins of the same chart and version from other repositories."""
    return [p for p in (*site, *project_pins()) if (p.chart, p.chart_version) == (ref.chart, ref.version)
            and repo_key(p.chart_repo or "") != repo_key(ref.repo)]


def verified_chart(pin: Artifact | None) -> str:
    """The local path of ``pin``'s archive, its sha256 checked (fetched first where missing):
    the chart a Helm release installs, with no repository, so Helm fetches nothing itself."""
    if pin is None:
        raise ChartArchiveError("a release without a pinned chart archive: the settings checks refuse this at"
                                " preview (components/settings/charts.py)")
    path = artifacts_dir() / pin.file
    if not path.is_file():
        problem = fetch_one(pin, artifacts_dir(), mirror_dir())
        if problem is not None:
            raise ChartArchiveError(
                f"the {pin.chart} {pin.chart_version} chart archive (sha256 {pin.sha256}) could not be had: {problem}."
                f" Put the archive at {path} (helm pull --repo {pin.chart_repo} {pin.chart} --version"
                f" {pin.chart_version}), or run scripts/fetch_artifacts.py")
    _check_digest(pin, path)
    return str(path)


def _check_digest(pin: Artifact, path: Path) -> None:
    actual = _sha256(path, path.stat().st_mtime_ns, path.stat().st_size)
    # a cached copy may carry the mirror's sum: only a mirror copy is ever accepted by it (store.py)
    if not pin.accepts(actual, from_mirror=True):
        raise ChartArchiveError(
            f"{path} is not the pinned {pin.chart} {pin.chart_version} chart: its sha256 is {actual}, the pin is"
            f" {pin.sha256} ({'chartPins' if pin.file.startswith(SITE_FOLDER) else 'scripts/artifacts.toml'})."
            " Nothing is deployed from it: find out how it changed, delete it, and let the program fetch it again")


@functools.cache
def _sha256(path: Path, mtime_ns: int, size: int) -> str:
    """One hash per file version and process (every release of a run checks its archive)."""
    return file_sha256(path)
