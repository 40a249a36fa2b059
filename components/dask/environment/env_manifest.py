"""The prepared environment's manifest and its check before a pod runs anything from it.

The manifest of a directory is one line per entry below it, sorted by path, the path after a
tab: ``d <mode>`` for a directory, ``f <mode> <sha256>`` for a file, ``l <target>`` for a
symbolic link (never followed), ``o`` for anything else. Its digest (sha256 of the text) is what
the environment Job records outside the share (the ConfigMap ``dask-environment-digests``,
which only the Job's ServiceAccount may change: components/dask/environment/env_record.py),
and what every pod's ``verify-environment`` init container compares before the pod's own
containers start. So a file changed, added (a ``.pth`` in site-packages runs at every start),
removed, made executable or re-linked on the share stops the pod with a message naming it.

Run by the image's own interpreter, isolated and without ``site`` (``python -I -S``): nothing
of the environment is imported, nor any ``PYTHON*`` variable read, before the check passes.
Standard library only.

Usage (``verify``): python -I -S env_manifest.py verify ROOT  (EXPECTED_DIGEST in the environment)
"""
from __future__ import annotations

import hashlib
import os
import stat
import sys

MANIFEST = ".manifest"  # the Job's copy of the text, beside the environment (names what changed)
SKIPPED = frozenset({MANIFEST, ".complete", ".complete.tmp"})  # written after the manifest
CHUNK = 1 << 20
SHOWN = 10  # paths named per kind in a failure's message


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _unreadable(error: OSError) -> None:
    raise error  # a directory the check cannot read is one it cannot vouch for


def manifest(root: str) -> str:
    """The manifest of the tree below ``root`` (module docstring), the top-level bookkeeping
    files left out."""
    lines = []
    for here, dirs, files in os.walk(root, onerror=_unreadable):
        dirs.sort()
        relative_dir = os.path.relpath(here, root)
        for name in sorted(dirs + files):
            relative = name if relative_dir == "." else f"{relative_dir}/{name}"
            if relative in SKIPPED:
                continue
            path = os.path.join(here, name)
            info = os.lstat(path)
            mode = f"{stat.S_IMODE(info.st_mode):o}"
            if stat.S_ISLNK(info.st_mode):
                lines.append(f"l {os.readlink(path)}\t{relative}")
            elif stat.S_ISDIR(info.st_mode):
                lines.append(f"d {mode}\t{relative}")
            elif stat.S_ISREG(info.st_mode):
                lines.append(f"f {mode} {_file_digest(path)}\t{relative}")
            else:
                lines.append(f"o\t{relative}")
    return "".join(f"{line}\n" for line in sorted(lines, key=lambda line: line.split("\t", 1)[1]))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _entries(text: str) -> dict[str, str]:
    return {line.split("\t", 1)[1]: line for line in text.splitlines() if "\t" in line}


def differences(recorded: str, found: str) -> list[str]:
    """What differs between two manifests, by kind, each naming at most ``SHOWN`` paths."""
    was, now = _entries(recorded), _entries(found)
    kinds = (("changed", sorted(p for p in was.keys() & now.keys() if was[p] != now[p])),
             ("added", sorted(now.keys() - was.keys())), ("missing", sorted(was.keys() - now.keys())))
    return [f"{kind}: {', '.join(paths[:SHOWN])}{f' (and {len(paths) - SHOWN} more)' if len(paths) > SHOWN else ''}"
            for kind, paths in kinds if paths]


def verify(root: str, expected: str) -> tuple[bool, str]:
    """Whether the tree at ``root`` is the one whose manifest digest is ``expected``; the line
    to print either way."""
    try:
        found = manifest(root)
    except OSError as exc:
        return False, f"the prepared environment at {root} cannot be read whole ({exc}): nothing from it ran."
    if digest(found) == expected:
        return True, f"environment {root}: {len(found.splitlines())} entries match the recorded digest {expected[:16]}"
    head = (f"the prepared environment at {root} is not the one the environment Job recorded (digest {expected[:16]},"
            f" found {digest(found)[:16]}): nothing from it ran. Re-run the environment Job (docs/dask.md,"
            " 'The Python environment') or find who wrote to the share.")
    try:
        with open(os.path.join(root, MANIFEST), encoding="utf-8") as handle:
            recorded = handle.read()
    except OSError:
        recorded = ""
    if recorded and digest(recorded) == expected:
        return False, f"{head} {'; '.join(differences(recorded, found))}"
    return False, f"{head} Its manifest ({MANIFEST}) is changed or gone as well, so what differs cannot be named."


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "verify":
        print("usage: env_manifest.py verify ROOT (EXPECTED_DIGEST in the environment)", file=sys.stderr)
        return 2
    expected = os.environ.get("EXPECTED_DIGEST", "").strip()
    if len(expected) != 64:
        print(f"verify-environment: EXPECTED_DIGEST is not a sha256 digest: {expected!r}", file=sys.stderr)
        return 2
    ok, line = verify(argv[1], expected)
    print(f"verify-environment: {line}", file=sys.stdout if ok else sys.stderr, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
