#!/usr/bin/env python3
"""Fetch the pinned upstream artifacts (scripts/artifacts.toml) into the cache, verified by sha256.

For each artifact, in order:
  1. already in ``<cache>/artifacts/<file>`` with the pinned sha256: nothing to do;
  2. an offline mirror holds it (``$DASK_TKG__MIRROR``, else ``../shared/mirror`` beside the
     repository where that folder exists): copy it from there;
  3. download it from its upstream URL.
Every copy or download is verified before it is moved into place; a mismatch is never kept.
A download must match ``sha256``, the digest of the upstream bytes. A mirror copy may instead
match ``mirror_sha256``, which an artifact carries only where the mirror cannot hold the
upstream bytes (its ``mirror_why`` says why; the script prints it when it takes such a copy).
If some artifacts can be had from nowhere, one error lists each of them with its URL, and
the exit status is 1.

Standard library only: it runs before (and without) the project's virtual environment.
Importable too: ``artifact_path(file)`` returns the cached path of a pinned artifact, or
raises ``MissingArtifact`` naming this script.

Usage: scripts/fetch_artifacts.py [--check] [--quiet]
  --check   verify the cache only, fetch nothing (exit 1 if something is missing)
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK_FILE = REPO / "scripts" / "artifacts.toml"
DOWNLOAD_TIMEOUT_S = 20.0


class MissingArtifact(RuntimeError):
    """A pinned artifact is not in the cache (or does not match its sha256)."""


@dataclass(frozen=True)
class Artifact:
    file: str  # relative path: in the cache's artifacts/ folder and in a mirror
    what: str
    url: str
    sha256: str  # of the bytes ``url`` serves
    mirror_sha256: str | None = None  # of the offline mirror's copy, where it cannot be the upstream bytes
    mirror_why: str | None = None

    def accepts(self, digest: str, from_mirror: bool) -> bool:
        return digest == self.sha256 or (from_mirror and digest == self.mirror_sha256)


def cache_root() -> Path:
    """The project's cache: ``$DASK_TKG__CACHE`` (Dask's config key ``tkg.cache``), else the
    deprecated ``$DASK_TKG_CACHE``, else ``~/.cache/dask-tkg``; the same rule as
    ``workloads.core.config.cache_dir``, repeated here because this script runs without Dask."""
    value = os.environ.get("DASK_TKG__CACHE") or os.environ.get("DASK_TKG_CACHE")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "dask-tkg"


def artifacts_dir() -> Path:
    return cache_root() / "artifacts"


def pinned(lock_file: Path = LOCK_FILE) -> list[Artifact]:
    with lock_file.open("rb") as f:
        entries = tomllib.load(f).get("artifact", [])
    artifacts = []
    for i, entry in enumerate(entries):
        missing = [k for k in ("file", "what", "url", "sha256") if not entry.get(k)]
        if bool(entry.get("mirror_sha256")) != bool(entry.get("mirror_why")):
            missing.append("mirror_why" if entry.get("mirror_sha256") else "mirror_sha256")
        unknown = sorted(set(entry) - set(Artifact.__dataclass_fields__))
        if missing or unknown:
            raise ValueError(f"{lock_file}: artifact #{i + 1} ({entry.get('file', '?')}) "
                             + "; ".join(filter(None, [missing and f"lacks {', '.join(missing)}",
                                                       unknown and f"has unknown keys {', '.join(unknown)}"])))
        artifacts.append(Artifact(**entry))
    return artifacts


def file_sha256(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks (also scripts/fetch_worker_wheels.py's)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _is_cached(artifact: Artifact, root: Path) -> bool:
    """Cached with the upstream digest, or with the mirror's where the artifact has one."""
    path = root / artifact.file
    return path.is_file() and artifact.accepts(file_sha256(path), from_mirror=True)


def artifact_path(file: str) -> Path:
    """The cached, verified path of the pinned artifact ``file`` (as written in artifacts.toml)."""
    by_file = {a.file: a for a in pinned()}
    if file not in by_file:
        raise KeyError(f"{file!r} is not pinned in {LOCK_FILE}")
    path = artifacts_dir() / file
    if not _is_cached(by_file[file], artifacts_dir()):
        raise MissingArtifact(f"{path} is missing or does not match its pinned sha256: "
                              f"run scripts/fetch_artifacts.py (make test does)")
    return path


def mirror_dir() -> Path | None:
    configured = os.environ.get("DASK_TKG__MIRROR")
    if configured:
        return Path(configured)
    beside = REPO.parent / "shared" / "mirror"
    return beside if beside.is_dir() else None


def _install_verified(artifact: Artifact, source: Path, root: Path, from_mirror: bool) -> str | None:
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


def _fetch_one(artifact: Artifact, root: Path, mirror: Path | None) -> str | None:
    """Fetch one artifact; None on success, else every reason it failed."""
    reasons = []
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".fetch-") as tmp:
        staged = Path(tmp) / "artifact"
        if mirror is not None:
            candidate = mirror / artifact.file
            if candidate.is_file():
                shutil.copyfile(candidate, staged)
                problem = _install_verified(artifact, staged, root, from_mirror=True)
                if problem is None:
                    return None
                reasons.append(f"mirror copy {candidate}: {problem}")
            else:
                reasons.append(f"not in the mirror {mirror}")
        try:
            with urllib.request.urlopen(artifact.url, timeout=DOWNLOAD_TIMEOUT_S) as response, \
                    staged.open("wb") as out:
                shutil.copyfileobj(response, out)
            problem = _install_verified(artifact, staged, root, from_mirror=False)
            if problem is None:
                return None
            reasons.append(f"download: {problem}")
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reasons.append(f"download failed: {getattr(exc, 'reason', exc)}")
    return "; ".join(reasons)


def fetch_all(check_only: bool = False, quiet: bool = False) -> int:
    root = artifacts_dir()
    mirror = mirror_dir()
    failures = []
    for artifact in pinned():
        if _is_cached(artifact, root):
            continue
        if check_only:
            failures.append((artifact, "not in the cache"))
            continue
        problem = _fetch_one(artifact, root, mirror)
        if problem is None:
            if not quiet:
                print(f"fetch_artifacts: {artifact.file} -> {root / artifact.file}")
        else:
            failures.append((artifact, problem))
    if failures:
        lines = [f"fetch_artifacts: error: {len(failures)} pinned artifact(s) could not be had "
                 f"(no usable offline mirror and no download):"]
        lines += [f"  - {a.file}: {a.url}\n      ({why})" for a, why in failures]
        lines.append(f"Put each file in {root}/<file> or in a mirror folder given by DASK_TKG__MIRROR, "
                     f"or run where the URLs can be reached.")
        print("\n".join(lines), file=sys.stderr)
        return 1
    if not quiet:
        print(f"fetch_artifacts: {len(pinned())} pinned artifacts verified in {root}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="verify the cache only, fetch nothing")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    return fetch_all(check_only=args.check, quiet=args.quiet)


if __name__ == "__main__":
    sys.exit(main())
