"""The pinned artifacts of ``scripts/artifacts.toml`` and the verified cache they are kept in.

One reader of the pins for the program (which deploys the chart archives) and for
``scripts/fetch_artifacts.py`` (which fills the cache for the tests): an artifact is taken
from the cache, else an offline mirror, else its upstream URL, and only a copy whose sha256
is pinned is ever moved into the cache.

A download must match ``sha256``, the digest of the upstream bytes. A mirror copy may instead
match ``mirror_sha256``, which an artifact carries only where the mirror cannot hold the
upstream bytes (its ``mirror_why`` says why). Standard library only.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCK_FILE = REPO / "scripts" / "artifacts.toml"
DOWNLOAD_TIMEOUT_S = 20.0
# Set (to anything but "" or "0") where nothing may be downloaded: an air-gapped site, the tests.
OFFLINE_ENV = "DASK_TKG__OFFLINE"


@dataclass(frozen=True)
class Artifact:
    file: str  # relative path: in the cache's artifacts/ folder and in a mirror
    what: str
    url: str
    sha256: str  # of the bytes ``url`` serves
    mirror_sha256: str | None = None  # of the offline mirror's copy, where it cannot be the upstream bytes
    mirror_why: str | None = None
    # A Helm chart: the repository whose index.yaml lists ``sha256`` as the digest of this
    # chart name and version (the key a release's settings are looked up by).
    chart: str | None = None
    chart_version: str | None = None
    chart_repo: str | None = None

    def accepts(self, digest: str, from_mirror: bool) -> bool:
        return digest == self.sha256 or (from_mirror and digest == self.mirror_sha256)


def cache_root() -> Path:
    """The project's cache: ``$DASK_TKG__CACHE`` (Dask's config key ``tkg.cache``), else the
    deprecated ``$DASK_TKG_CACHE``, else ``~/.cache/dask-tkg``; the same rule as
    ``workloads.core.config.cache_dir``, repeated here because this runs without Dask."""
    value = os.environ.get("DASK_TKG__CACHE") or os.environ.get("DASK_TKG_CACHE")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "dask-tkg"


def artifacts_dir() -> Path:
    return cache_root() / "artifacts"


def mirror_dir() -> Path | None:
    """``$DASK_TKG__MIRROR``, else ``../shared/mirror`` beside the repository where it exists."""
    configured = os.environ.get("DASK_TKG__MIRROR")
    if configured:
        return Path(configured)
    beside = REPO.parent / "shared" / "mirror"
    return beside if beside.is_dir() else None


def offline() -> bool:
    return os.environ.get(OFFLINE_ENV, "") not in ("", "0")


_CHART_KEYS = ("chart", "chart_version", "chart_repo")


def pinned(lock_file: Path = LOCK_FILE) -> list[Artifact]:
    with lock_file.open("rb") as f:
        entries = tomllib.load(f).get("artifact", [])
    artifacts = []
    for i, entry in enumerate(entries):
        missing = [k for k in ("file", "what", "url", "sha256") if not entry.get(k)]
        if bool(entry.get("mirror_sha256")) != bool(entry.get("mirror_why")):
            missing.append("mirror_why" if entry.get("mirror_sha256") else "mirror_sha256")
        if any(entry.get(k) for k in _CHART_KEYS):
            missing += [k for k in _CHART_KEYS if not entry.get(k)]
        unknown = sorted(set(entry) - set(Artifact.__dataclass_fields__))
        problems = ([f"lacks {', '.join(missing)}"] if missing else []) + (
            [f"has unknown keys {', '.join(unknown)}"] if unknown else [])
        if problems:
            raise ValueError(f"{lock_file}: artifact #{i + 1} ({entry.get('file', '?')}) " + "; ".join(problems))
        artifacts.append(Artifact(**entry))
    return artifacts


def file_sha256(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_cached(artifact: Artifact, root: Path) -> bool:
    """Cached with the upstream digest, or with the mirror's where the artifact has one."""
    path = root / artifact.file
    return path.is_file() and artifact.accepts(file_sha256(path), from_mirror=True)


def install_verified(artifact: Artifact, source: Path, root: Path, from_mirror: bool) -> str | None:
    """Move ``source`` into the cache if its sha256 is a pinned one; else say why not. A
    mirror copy taken by its mirror-only sum is said, with the reason."""
    actual = file_sha256(source)
    if not artifact.accepts(actual, from_mirror):
        pinned_sums = [artifact.sha256] + ([artifact.mirror_sha256] if from_mirror and artifact.mirror_sha256 else [])
        return f"sha256 {actual} != pinned {' or '.join(pinned_sums)}"
    target = root / artifact.file
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    if actual != artifact.sha256:
        print(f"fetch_artifacts: {artifact.file}: the mirror's copy, not the upstream bytes: {artifact.mirror_why}")
    return None


def _from_mirror(artifact: Artifact, root: Path, mirror: Path, staged: Path) -> str | None:
    candidate = mirror / artifact.file
    if not candidate.is_file():
        return f"not in the mirror {mirror}"
    shutil.copyfile(candidate, staged)
    problem = install_verified(artifact, staged, root, from_mirror=True)
    return problem and f"mirror copy {candidate}: {problem}"


def _download(artifact: Artifact, root: Path, staged: Path) -> str | None:
    if not artifact.url:
        return "no URL to download it from"
    if offline() and not artifact.url.startswith("file:"):
        return f"not downloaded: {OFFLINE_ENV} is set"
    try:
        # the lock's https: URL, or file: for the mirror (offline): both schemes are meant
        with urllib.request.urlopen(artifact.url, timeout=DOWNLOAD_TIMEOUT_S) as response, staged.open("wb") as out:  # noqa: S310
            shutil.copyfileobj(response, out)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        return f"download failed: {getattr(exc, 'reason', exc)}"
    problem = install_verified(artifact, staged, root, from_mirror=False)
    return problem and f"download: {problem}"


def fetch_one(artifact: Artifact, root: Path, mirror: Path | None) -> str | None:
    """Fetch one artifact into ``root``; None on success, else every reason it failed."""
    reasons = []
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as tmp:
        staged = Path(tmp) / "artifact"
        if mirror is not None:
            problem = _from_mirror(artifact, root, mirror, staged)
            if problem is None:
                return None
            reasons.append(problem)
        problem = _download(artifact, root, staged)
        if problem is None:
            return None
        reasons.append(problem)
    return "; ".join(reasons)
