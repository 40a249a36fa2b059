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

Standard library only: it runs before (and without) the project's virtual environment. The
pins and the fetching are ``components/artifacts/store.py``'s, which the Pulumi program uses
to deploy the same chart archives. Importable too: ``artifact_path(file)`` returns the cached
path of a pinned artifact, or raises ``MissingArtifact`` naming this script.

Usage: scripts/fetch_artifacts.py [--check] [--quiet]
  --check   verify the cache only, fetch nothing (exit 1 if something is missing)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the pins' one reader, components/artifacts/store.py (standard library only)

from components.artifacts.store import (  # noqa: E402
    LOCK_FILE,
    Artifact,
    artifacts_dir,
    cache_root,
    fetch_one,
    file_sha256,
    install_verified,
    is_cached,
    mirror_dir,
    pinned,
)

__all__ = ["LOCK_FILE", "Artifact", "MissingArtifact", "artifact_path", "cache_root", "fetch_all", "file_sha256",
           "install_verified", "mirror_dir", "pinned"]
# the names the fetch tests call (tests/setup/test_fetch_artifacts.py)
_fetch_one, _is_cached = fetch_one, is_cached


class MissingArtifact(RuntimeError):
    """A pinned artifact is not in the cache (or does not match its sha256)."""


def artifact_path(file: str) -> Path:
    """The cached, verified path of the pinned artifact ``file`` (as written in artifacts.toml)."""
    by_file = {a.file: a for a in pinned()}
    if file not in by_file:
        raise KeyError(f"{file!r} is not pinned in {LOCK_FILE}")
    path = artifacts_dir() / file
    if not is_cached(by_file[file], artifacts_dir()):
        raise MissingArtifact(f"{path} is missing or does not match its pinned sha256: "
                              f"run scripts/fetch_artifacts.py (make test does)")
    return path


def fetch_all(check_only: bool = False, quiet: bool = False) -> int:
    root = artifacts_dir()
    mirror = mirror_dir()
    failures = []
    for artifact in pinned():
        if is_cached(artifact, root):
            continue
        if check_only:
            failures.append((artifact, "not in the cache"))
            continue
        problem = fetch_one(artifact, root, mirror)
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
