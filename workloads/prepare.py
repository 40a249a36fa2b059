"""Fill the dataset volume in the layout the runner reads (the paper's data preparation).

The cluster's data Job runs this file from a ConfigMap in a plain ``python`` image, so it
is one file, standard library only, Python >= 3.8, importing nothing else from the
project. It runs as ``python -m workloads.prepare`` or ``python /opt/dask-tkg/prepare.py``.

It knows no benchmark: its arguments describe each item, under ``--root``::

    --fetch NAME DEST URL          one file; ``{file}`` in DEST is the URL's file name
    --extract NAME TREE MARKER     the file fetched as NAME is a tar archive: its top directory
                                   becomes TREE, and MARKER keeps the archive's size/sha256
                                   once extraction finished
    --months NAME DEST URL MONTHS  one file per YYYY-MM month (comma-separated): ``{month}``
                                   in DEST and URL becomes it; DEST ends in the suffixes the
                                   URL's file name may have, ``{.csv|.parquet}``, and the URL's
                                   one ends the file's name
    --file DEST=URL                one file of the site's (``dataFiles``), named ``files``
    .prepare-status.json           what the last run did, per file

NAME is what ``--only`` selects. The data Job's items come from each benchmark folder's
``dataset.json`` (``workloads/runs/datasets.py`` turns them into these arguments; this file
imports nothing of the project, so it cannot read them itself).

Each download goes to ``<dest>.part``, with the server's validator of those bytes (its
ETag, else its Last-Modified) kept beside it in ``<dest>.part.validator``; a resume asks
for the rest with ``Range: bytes=<n>-`` *and* ``If-Range: <validator>`` (RFC 7233 3.2),
so a server whose file changed since answers 200 with the whole new file instead of 206
with the rest of it, and the download starts over (logged) rather than stitching two
versions. A partial file without a usable validator (none, a weak ETag, a Last-Modified
less than 60 s before the server's Date: RFC 7232 2.2.2) is resumed only when its sha256
is known (``--checksums`` catches a stitch), else fetched again from zero. A file is
renamed to ``<dest>`` only when its size (and sha256, when known) checks out, so an
existing destination is complete. A destination with the expected size (``--checksums``, else a
HEAD's Content-Length) and sha256 (when known) is skipped. Transient errors are retried
with exponential backoff; a file that fails ``--retries`` times is reported and the
others are still fetched. The files fetched or kept without a sha256 to check them against
are named at the end, and listed under ``unverified`` in ``.prepare-status.json``.
Ctrl-C (SIGINT) or SIGTERM ends the run with one line on stderr naming what was left partial.
Exit status: 0 all done or skipped, 1 something failed, 2 bad usage, 130/143 interrupted by
SIGINT/SIGTERM.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import email.utils
import hashlib
import http.client
import json
import logging
import os
import re
import shutil
import signal
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Callable, Dict, List, NoReturn, Optional, Tuple

# what reports a usage error: it exits (argparse's ``error``), nothing after it runs
Exit = Callable[[str], NoReturn]

logger = logging.getLogger("dask_tkg.prepare")

FILES = "files"  # the --only name of the --file entries
STATUS_FILE = ".prepare-status.json"
SUFFIXES = re.compile(r"\{(\.[A-Za-z0-9]+(?:\|\.[A-Za-z0-9]+)*)\}$")  # a --months DEST's ending
MONTH = re.compile(r"^[0-9]{4}-(0[1-9]|1[0-2])$")
SECRET_QUERY_KEYS = re.compile(r"token|sig|signature|secret|password|credential|key", re.I)
CHUNK = 1 << 20
MAX_BACKOFF = 300.0
VALIDATOR_SUFFIX = ".validator"  # beside the .part file
STRONG_DATE_MARGIN = 60  # seconds a Last-Modified must precede Date to be strong (RFC 7232 2.2.2)


class PrepareError(Exception):
    """A file that cannot be prepared (not worth retrying)."""


class TransientError(PrepareError):
    """Worth another attempt: connection reset, timeout, 5xx, a short read."""


class VerifyError(PrepareError):
    """Bytes that do not match the known size or sha256 (the partial file is deleted)."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM: the run ends with one line, not a traceback."""

    def __init__(self, signal_name: str, exit_code: int):
        super().__init__(signal_name)
        self.signal_name, self.exit_code = signal_name, exit_code


@dataclass(frozen=True)
class Item:
    source: str  # its --only name
    url: str
    dest: str  # relative to --root, with forward slashes
    tree: str = ""  # an archive's: where its top directory is extracted ("" for a plain file)
    marker: str = ""  # an archive's: what records that extraction finished


@dataclass(frozen=True)
class Known:
    size: Optional[int] = None
    sha256: Optional[str] = None


@dataclass(frozen=True)
class Options:
    retries: int = 5
    timeout: float = 60.0
    backoff: float = 2.0
    progress_bytes: int = 64 << 20


@dataclass
class Outcome:
    source: str
    url: str  # credentials masked
    dest: str
    status: str = "failed"  # done | skipped | failed
    size: Optional[int] = None
    sha256: Optional[str] = None
    attempts: int = 0
    bytes_fetched: int = 0
    seconds: float = 0.0
    finished: str = ""
    error: str = ""
    verified: bool = False  # its sha256 matched --checksums
    detail: Dict[str, object] = field(default_factory=dict)


def redact(url: str) -> str:
    """``url`` with its userinfo's password (or a lone token) and secret-looking query values masked."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = (user.split(":", 1)[0] + ":***@" if ":" in user else "***@") + host
    pairs = [pair.partition("=") for pair in parts.query.split("&")] if parts.query else []
    query = "&".join(k + eq + ("***" if eq and SECRET_QUERY_KEYS.search(k) else v) for k, eq, v in pairs)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return str(n)


def _sha256_file(path: str, digest=None):
    digest = digest or hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def _write_json(path: str, data: object) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def _read_json(path: str) -> Optional[dict]:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --- HTTP ---------------------------------------------------------------------------------

def _open(url: str, opts: Options, method: str = "GET", offset: int = 0, if_range: Optional[str] = None):
    """urlopen with userinfo turned into a Basic header that is never sent on a redirect."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):  # urlopen would also read file: and ftp: URLs
        raise ValueError("only http and https URLs are fetched, not %r" % redact(url))
    auth = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        auth = "Basic " + base64.b64encode((user + ":" + password).encode()).decode()
        url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    request = urllib.request.Request(url, method=method, headers={  # noqa: S310 (http and https only: checked above)
        "User-Agent": "dask-tkg-prepare/1", "Accept-Encoding": "identity"})
    if offset:
        request.add_header("Range", "bytes=%d-" % offset)
        if if_range:
            request.add_header("If-Range", if_range)
    if auth:
        request.add_unredirected_header("Authorization", auth)
    return urllib.request.urlopen(request, timeout=opts.timeout)  # noqa: S310 (http and https only: checked above)


def _int(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _content_range(value: Optional[str]) -> Tuple[Optional[int], Optional[int]]:
    """(first byte, total) of ``bytes a-b/total`` or ``bytes */total``; None where absent."""
    match = re.match(r"^\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)\s*$", value or "")
    if not match:
        return None, None
    return _int(match.group(1)), _int(match.group(2)) if match.group(2) != "*" else None


def _http_error(exc: urllib.error.HTTPError) -> PrepareError:
    kind = TransientError if exc.code >= 500 or exc.code in (408, 425, 429) else PrepareError
    return kind("HTTP %d %s" % (exc.code, exc.reason))


def head_size(url: str, opts: Options) -> Optional[int]:
    """The Content-Length a HEAD request reports, or None (no header, or any error)."""
    try:
        with _open(url, opts, method="HEAD") as response:
            return _int(response.headers.get("Content-Length"))
    except (OSError, http.client.HTTPException) as exc:
        logger.info("HEAD %s failed (%s): size unknown", redact(url), exc)
        return None


class _Progress:
    """A log line every ``every`` bytes or every 10 percent, with the rate."""

    def __init__(self, label: str, total: Optional[int], start: int, every: int):
        self.label, self.total, self.start, self.every = label, total, start, max(every, 1)
        self.t0 = time.monotonic()
        self.last = start
        self.last_decile = self._percent(start) // 10 if total else 0
        self.logged = False

    def _percent(self, done: int) -> int:
        return done * 100 // self.total if self.total else 0

    def update(self, done: int, final: bool = False) -> None:
        decile = self._percent(done) // 10 if self.total else 0
        if final and self.logged and done == self.last:
            return
        if not final and done - self.last < self.every and decile <= self.last_decile:
            return
        self.last, self.last_decile, self.logged = done, decile, True
        rate = (done - self.start) / max(time.monotonic() - self.t0, 1e-6)
        of = " of %s (%d%%)" % (_human(self.total), self._percent(done)) if self.total else ""
        logger.info("%s: %s%s at %s/s", self.label, _human(done), of, _human(rate))


def _discard_partial(part: str) -> None:
    _remove(part)
    _remove(part + VALIDATOR_SUFFIX)


def _keep_validator(part: str, headers) -> None:
    """Keep what identifies the bytes about to be written to ``part``: its ETag,
    Last-Modified and the response's Date (to tell a strong Last-Modified)."""
    validator = {key: headers.get(name) for key, name in
                 (("etag", "ETag"), ("last_modified", "Last-Modified"), ("date", "Date"))}
    if validator["etag"] or validator["last_modified"]:
        _write_json(part + VALIDATOR_SUFFIX, validator)
    else:
        _remove(part + VALIDATOR_SUFFIX)


def if_range_value(validator: Optional[dict]) -> Optional[str]:
    """The If-Range value for a resume, or None when there is no strong validator: a
    weak ETag may not be sent (RFC 7233 3.2); a Last-Modified only without an ETag and
    when at least 60 s before the response's Date (RFC 7232 2.2.2)."""
    if not validator:
        return None
    etag = validator.get("etag")
    if etag:
        return None if etag.startswith("W/") else etag
    modified, date = validator.get("last_modified"), validator.get("date")
    if not modified or not date:
        return None
    try:
        seconds = (email.utils.parsedate_to_datetime(date)
                   - email.utils.parsedate_to_datetime(modified)).total_seconds()
    except (TypeError, ValueError):
        return None
    return modified if seconds >= STRONG_DATE_MARGIN else None


def _resume_offset(item: Item, part: str, known: Known) -> Tuple[int, Optional[str]]:
    """(bytes to keep, If-Range value) for ``part``: 0 where the bytes cannot be
    resumed safely (the partial file is then removed)."""
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    if not offset or (known.size is not None and offset > known.size):
        _discard_partial(part)
        return 0, None
    if_range = if_range_value(_read_json(part + VALIDATOR_SUFFIX))
    if if_range is None and not known.sha256:
        logger.info("%s: no strong validator (ETag or Last-Modified) kept for the %d-byte partial file, "
                    "and no sha256 known: starting over", item.dest, offset)
        _discard_partial(part)
        return 0, None
    return offset, if_range


def _transfer(item: Item, part: str, known: Known, opts: Options, outcome: Outcome) -> Tuple[int, str]:
    """Bring ``part`` to the whole file; return (size, sha256). Counts bytes in ``outcome``."""
    offset, if_range = _resume_offset(item, part, known)
    if offset and offset == known.size:
        logger.info("%s: the partial file already has all %d bytes", item.dest, offset)
        return offset, _sha256_file(part).hexdigest()
    try:
        response = _open(item.url, opts, offset=offset, if_range=if_range)
    except urllib.error.HTTPError as exc:
        total = _content_range(exc.headers.get("Content-Range"))[1] if exc.headers else None
        exc.close()
        if exc.code == 416 and offset:
            if total == offset:
                logger.info("%s: server says the %d-byte partial file is complete", item.dest, offset)
                return offset, _sha256_file(part).hexdigest()
            _discard_partial(part)
            raise TransientError("HTTP 416 for a %d-byte partial file (server total %s): restarting"
                                 % (offset, total)) from None
        raise _http_error(exc) from None
    except (OSError, http.client.HTTPException) as exc:
        raise TransientError("%s: %s" % (type(exc).__name__, exc)) from None
    with response:
        start, total = _content_range(response.headers.get("Content-Range"))
        if offset and response.status == 206 and start == offset:
            logger.info("%s: resuming at byte %d", item.dest, offset)
            mode, digest = "ab", _sha256_file(part)
        elif response.status == 206:
            _discard_partial(part)
            raise TransientError("server answered a range starting at %s, not %d: restarting" % (start, offset))
        else:
            unchanged = if_range in (response.headers.get("ETag"), response.headers.get("Last-Modified"))
            if offset and if_range and not unchanged:
                logger.warning("%s changed on the server since the %d-byte partial download (If-Range %s, "
                               "now ETag %s, Last-Modified %s): HTTP %d, starting over", item.dest, offset,
                               if_range, response.headers.get("ETag"), response.headers.get("Last-Modified"),
                               response.status)
            elif offset:
                logger.info("%s: server ignored Range (HTTP %d): restarting from zero", item.dest, response.status)
            offset, mode, digest = 0, "wb", hashlib.sha256()
            total = _int(response.headers.get("Content-Length"))
            _keep_validator(part, response.headers)
        if known.size is not None and total is not None and total != known.size:
            _discard_partial(part)
            raise VerifyError("server says %d bytes, checksums say %d" % (total, known.size))
        progress = _Progress(item.dest, total, offset, opts.progress_bytes)
        done = offset
        with open(part, mode) as out:
            while True:
                try:
                    block = response.read(CHUNK)
                except (OSError, http.client.HTTPException) as exc:
                    raise TransientError("connection lost after %d bytes (%s: %s); %s kept for resuming"
                                         % (done, type(exc).__name__, exc, os.path.basename(part))) from None
                if not block:
                    break
                out.write(block)
                digest.update(block)
                done += len(block)
                outcome.bytes_fetched += len(block)
                progress.update(done)
            out.flush()
            os.fsync(out.fileno())
    if total is not None and done != total:
        raise TransientError("short read: %d of %d bytes; %s kept for resuming"
                             % (done, total, os.path.basename(part)))
    progress.update(done, final=True)
    return done, digest.hexdigest()


def _verify(size: int, sha: str, known: Known) -> None:
    if known.size is not None and size != known.size:
        raise VerifyError("size %d, expected %d" % (size, known.size))
    if known.sha256 and sha != known.sha256.lower():
        raise VerifyError("sha256 %s, expected %s" % (sha, known.sha256.lower()))


def _existing_is_complete(item: Item, dest: str, known: Known, opts: Options) -> Tuple[bool, str, Optional[str]]:
    """(complete?, why, sha256 if computed) for a destination that exists."""
    size = os.path.getsize(dest)
    expected, source = known.size, "checksums"
    if expected is None:
        expected, source = head_size(item.url, opts), "HEAD"
    if expected is not None and size != expected:
        return False, "has %d bytes, %s says %d" % (size, source, expected), None
    sha = None
    if known.sha256:
        sha = _sha256_file(dest).hexdigest()
        if sha != known.sha256.lower():
            return False, "sha256 %s does not match the checksums" % sha, sha
    why = "%d bytes as %s says" % (size, source) if expected is not None else \
        "%d bytes (size unknown; only complete files are renamed into place)" % size
    return True, why + (", sha256 verified" if sha else ""), sha


def fetch(item: Item, root: str, known: Known, opts: Options) -> Outcome:
    """Make ``root/item.dest`` a complete copy of ``item.url``; never raises."""
    outcome = Outcome(item.source, redact(item.url), item.dest)
    dest = os.path.join(root, *item.dest.split("/"))
    part = dest + ".part"
    t0 = time.monotonic()
    last: Exception = PrepareError("not attempted")
    try:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if os.path.isfile(dest):
            complete, why, sha = _existing_is_complete(item, dest, known, opts)
            if complete:
                logger.info("skip %s: %s", item.dest, why)
                outcome.status, outcome.size, outcome.sha256 = "skipped", os.path.getsize(dest), sha
                return outcome
            logger.info("%s %s: fetching again", item.dest, why)
        for attempt in range(1, opts.retries + 1):
            outcome.attempts = attempt
            logger.info("GET %s -> %s (attempt %d/%d)", outcome.url, item.dest, attempt, opts.retries)
            try:
                size, sha = _transfer(item, part, known, opts, outcome)
                try:
                    _verify(size, sha, known)
                except VerifyError:
                    _discard_partial(part)
                    raise
                os.replace(part, dest)
                _remove(part + VALIDATOR_SUFFIX)
                outcome.status, outcome.size, outcome.sha256 = "done", size, sha
                logger.info("done %s: %s, sha256 %s", item.dest, _human(size), sha)
                return outcome
            except (TransientError, VerifyError) as exc:
                last = exc
                if attempt < opts.retries:
                    delay = min(opts.backoff * 2 ** (attempt - 1), MAX_BACKOFF)
                    logger.warning("%s -> %s: %s; retrying in %.1f s", outcome.url, item.dest, exc, delay)
                    time.sleep(delay)
    except (PrepareError, OSError) as exc:  # not worth retrying: 404, 403, a disk error
        last = exc
    finally:
        outcome.seconds = round(time.monotonic() - t0, 3)
        outcome.finished = _now()
    outcome.error = "%s -> %s: %s (after %d attempt%s)" % (
        outcome.url, dest, last, outcome.attempts, "" if outcome.attempts == 1 else "s")
    logger.error("FAILED %s", outcome.error)
    return outcome


# --- archives -------------------------------------------------------------------------------

def _member_path(member: tarfile.TarInfo, target: str) -> str:
    name = member.name.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or ".." in parts:
        raise PrepareError("member %r has an absolute path or '..'" % member.name)
    if member.issym() or member.islnk():
        raise PrepareError("member %r is a link" % member.name)
    if not (member.isfile() or member.isdir()):
        raise PrepareError("member %r is not a regular file or directory" % member.name)
    path = os.path.join(target, *parts) if parts else target
    base = os.path.realpath(target)
    if os.path.commonpath([base, os.path.realpath(path)]) != base:
        raise PrepareError("member %r leaves the extraction directory" % member.name)
    return path


def safe_extract(archive: str, target: str) -> int:
    """Extract ``archive`` under ``target``; refuse it whole at the first unsafe member."""
    count = 0
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            path = _member_path(member, target)
            if member.isdir():
                os.makedirs(path, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            source = tar.extractfile(member)
            if source is None:  # not a regular file: _member_path let it through, nothing to copy
                continue
            with source, open(path, "wb") as out:
                shutil.copyfileobj(source, out, CHUNK)
            count += 1
            if count % 5000 == 0:
                logger.info("%s: %d files extracted", os.path.basename(archive), count)
    return count


def extract(root: str, item: Item, archive_outcome: Outcome) -> Outcome:
    """``item.dest`` (a tar archive) -> ``item.tree``, via a temporary directory beside the tree
    and a rename: the archive's top directory named as the tree's last part becomes the tree."""
    outcome = Outcome(item.source, archive_outcome.url, item.tree)
    archive = os.path.join(root, *item.dest.split("/"))
    images, marker = os.path.join(root, *item.tree.split("/")), os.path.join(root, *item.marker.split("/"))
    dogs, top = os.path.dirname(images), os.path.basename(images)
    t0 = time.monotonic()
    try:
        stat = os.stat(archive)
        recorded = _read_json(marker) or {}
        same_file = recorded.get("size") == stat.st_size and recorded.get("mtime_ns") == stat.st_mtime_ns
        sha = archive_outcome.sha256 or (recorded.get("sha256") if same_file else None) \
            or _sha256_file(archive).hexdigest()
        if recorded.get("size") == stat.st_size and recorded.get("sha256") == sha and os.path.isdir(images):
            logger.info("skip extraction: %s is from this archive (%s)", item.tree, item.marker)
            outcome.status = "skipped"
            outcome.detail = {"files": recorded.get("files"), "archive_size": stat.st_size, "archive_sha256": sha}
            return outcome
        _remove(marker)  # from here on the tree is not known to be complete
        os.makedirs(dogs, exist_ok=True)
        for name in os.listdir(dogs):
            if name.startswith("." + top + ".tmp-"):
                shutil.rmtree(os.path.join(dogs, name), ignore_errors=True)
        tmp = tempfile.mkdtemp(prefix="." + top + ".tmp-", dir=dogs)
        try:
            logger.info("extracting %s", item.dest)
            count = safe_extract(archive, tmp)
            if not os.path.isdir(os.path.join(tmp, top)):
                raise PrepareError("the archive has no %s/ directory" % top)
            if os.path.exists(images):
                logger.info("replacing the existing %s", item.tree)
                os.rename(images, os.path.join(tmp, "previous"))
            os.rename(os.path.join(tmp, top), images)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _write_json(marker, {"archive": os.path.basename(archive), "size": stat.st_size, "sha256": sha,
                             "mtime_ns": stat.st_mtime_ns, "files": count, "extracted": _now()})
        outcome.status = "done"
        outcome.detail = {"files": count, "archive_size": stat.st_size, "archive_sha256": sha}
        logger.info("done %s: %d files", item.tree, count)
    except (PrepareError, OSError, tarfile.TarError) as exc:
        outcome.error = "%s -> %s: refused or failed to extract: %s" % (archive, images, exc)
        logger.error("FAILED %s", outcome.error)
    finally:
        outcome.seconds = round(time.monotonic() - t0, 3)
        outcome.finished = _now()
    return outcome


# --- the command line -----------------------------------------------------------------------

class _InOrder(argparse.Action):
    """Keeps ``--fetch`` and ``--months`` in the order given, each as (flag, values)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or []), (option_string, values)])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=os.environ.get("DASK_TKG_CLI_PROG", "prepare"),
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--root", required=True, help="the dataset root, e.g. /ml-share")
    p.add_argument("--fetch", nargs=3, action=_InOrder, dest="items", default=[], metavar=("NAME", "DEST", "URL"),
                   help="fetch URL to DEST under --root; {file} in DEST is the URL's file name (repeatable)")
    p.add_argument("--extract", nargs=3, action="append", default=[], metavar=("NAME", "TREE", "MARKER"),
                   help="the file fetched as NAME is a tar archive: its top directory becomes TREE under --root,"
                        " MARKER records it (repeatable)")
    p.add_argument("--months", nargs=4, action=_InOrder, dest="items", metavar=("NAME", "DEST", "URL", "MONTHS"),
                   help="one file per YYYY-MM month in MONTHS (comma-separated): {month} in DEST and URL becomes"
                        " it; DEST ends in the suffixes the URL's file may have, {.csv|.parquet} (repeatable)")
    p.add_argument("--file", action="append", default=[], metavar="DEST=URL",
                   help="also fetch URL to DEST under --root (a site's dataFiles entry; repeatable)")
    p.add_argument("--checksums", metavar="FILE", help='JSON {"<dest>": {"size": int, "sha256": hex}}')
    p.add_argument("--retries", type=int, default=5, help="attempts per file before it fails (default 5)")
    p.add_argument("--timeout", type=float, default=60.0, help="socket timeout in seconds (default 60)")
    p.add_argument("--backoff-seconds", type=float, default=2.0,
                   help="first retry delay, doubled each time (default 2)")
    p.add_argument("--progress-mb", type=float, default=64.0,
                   help="a progress line every this many MiB or 10%% (default 64)")
    p.add_argument("--only", metavar="LIST", help="a subset of the NAMEs given and " + FILES)
    p.add_argument("--dry-run", action="store_true", help="print each URL -> destination; fetch nothing")
    return p


def _url_basename(url: str) -> str:
    return urllib.parse.unquote(PurePosixPath(urllib.parse.urlsplit(url).path).name)


def _under_root(dest: str) -> Optional[str]:
    """``dest`` with forward slashes when it is a relative path under the root, else None."""
    dest = dest.strip().replace("\\", "/")
    if not dest or dest.startswith("/") or any(part in ("", ".", "..") for part in dest.split("/")):
        return None
    return dest


def _place(flag: str, dest: str, error: Exit) -> str:
    checked = _under_root(dest)
    if checked is None:
        error("%s: DEST must be a relative path under --root, got %r" % (flag, dest))
    return checked


def _extractions(entries: List[List[str]], fetched: List[str], error: Exit) -> Dict[str, Tuple[str, str]]:
    """``--extract NAME TREE MARKER`` as {NAME: (tree, marker)}; NAME must be a ``--fetch``'s."""
    out = {}
    for name, tree, marker in entries:
        if name not in fetched:
            error("--extract %s: no --fetch %s given" % (name, name))
        out[name] = (_place("--extract " + name, tree, error), _place("--extract " + name, marker, error))
    return out


def _single(name: str, dest: str, url: str, *, extraction: Tuple[str, str], error: Exit) -> Item:
    """``--fetch NAME DEST URL`` as a download (``{file}``: the URL's file name)."""
    if "{file}" in dest:
        base = _url_basename(url)
        if not base or base in (".", ".."):
            error("--fetch %s: the URL has no file name: %s" % (name, redact(url)))
        dest = dest.replace("{file}", base)
    return Item(name, url, _place("--fetch " + name, dest, error), *extraction)


def _monthly(name: str, dest: str, template: str, months_text: str, *, error: Exit) -> List[Item]:
    """``--months NAME DEST URL MONTHS`` as one download per month, in the order given, once each."""
    months = [m.strip() for m in months_text.split(",") if m.strip()]
    if not months:
        return []
    flag = "--months " + name
    if "{month}" not in template:
        error("%s: needs a URL containing {month}: %s" % (flag, redact(template)))
    ending = SUFFIXES.search(dest)
    if ending is None or "{month}" not in dest:
        error("%s: DEST must hold {month} and end in its suffixes, {.csv|.parquet}: %r" % (flag, dest))
    allowed = ending.group(1).split("|")
    suffix = os.path.splitext(_url_basename(template))[1].lower()
    if suffix not in allowed:
        error("%s: the file name must end in %s: %s" % (flag, " or ".join(allowed), redact(template)))
    items = []
    for month in dict.fromkeys(months):
        if not MONTH.match(month):
            error("%s: %r is not YYYY-MM" % (flag, month))
        items.append(Item(name, template.replace("{month}", month),
                          _place(flag, dest[:ending.start()].replace("{month}", month) + suffix, error)))
    return items


def _selected(args: argparse.Namespace, names: List[str], error: Exit) -> set:
    """The names ``--only`` keeps (all of them without it)."""
    known = [*names, FILES]
    twice = sorted({n for n in known if known.count(n) > 1})
    if twice:
        error("--fetch/--months: NAME given twice (or the reserved %r): %s" % (FILES, ",".join(twice)))
    if not args.only:
        return set(known)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = sorted(only - set(known))
    if unknown:
        error("--only: unknown source(s) %s (choose from %s)" % (",".join(unknown), ",".join(known)))
    return only


def build_plan(args: argparse.Namespace, error: Exit) -> List[Item]:
    """The downloads the arguments ask for, in order; ``error(message)`` exits on bad usage."""
    entries = getattr(args, "items", None) or []
    only = _selected(args, [values[0] for _, values in entries], error)
    extractions = _extractions(getattr(args, "extract", None) or [],
                               [values[0] for flag, values in entries if flag == "--fetch"], error)
    items = []
    for flag, values in entries:
        if values[0] not in only:
            continue
        if flag == "--months":
            items.extend(_monthly(*values, error=error))
        else:
            items.append(_single(*values, extraction=extractions.get(values[0], ("", "")), error=error))
    if FILES in only:
        items.extend(_named_files(getattr(args, "file", None) or [], error))
    for item in items:
        if urllib.parse.urlsplit(item.url).scheme not in ("http", "https"):
            error("%s -> %s: only http and https URLs are fetched, not %s" % (item.source, item.dest, redact(item.url)))
    return items


def _named_files(entries: List[str], error: Exit) -> List[Item]:
    """``--file DEST=URL`` entries as downloads; DEST stays under the root."""
    items = []
    for entry in entries:
        dest, _, url = entry.partition("=")
        dest = dest.strip().replace("\\", "/")
        parts = dest.split("/")
        if not url or not dest or dest.startswith("/") or any(part in ("", ".", "..") for part in parts):
            error("--file: expected DEST=URL with DEST a relative path under --root, got %r=%s" % (dest, redact(url)))
        items.append(Item(FILES, url, dest))
    return items


def load_checksums(path: Optional[str], error) -> Dict[str, Known]:
    if not path:
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        error("--checksums: cannot read %s: %s" % (path, exc))
    if not isinstance(data, dict):
        error("--checksums: %s must hold a JSON object keyed by destination path" % path)
    known = {}
    for dest, entry in data.items():
        size, sha = (entry.get("size"), entry.get("sha256")) if isinstance(entry, dict) else (-1, "")
        if not (size is None or (isinstance(size, int) and size >= 0)) \
                or not (sha is None or re.match(r"^[0-9a-fA-F]{64}$", str(sha))):
            error("--checksums: %s: %r is not {\"size\": int, \"sha256\": 64 hex digits}" % (dest, entry))
        known[dest.replace("\\", "/").lstrip("/")] = Known(size, sha.lower() if sha else None)
    return known


def _fetch_all(plan: List[Item], root: str, known: Dict[str, Known], opts: Options,
               outcomes: List[Outcome], current: List[str]) -> None:
    for item in plan:
        current[:] = ["download", item.dest]
        expected = known.get(item.dest, Known())
        outcome = fetch(item, root, expected, opts)
        outcome.verified = outcome.status != "failed" and bool(expected.sha256)
        outcomes.append(outcome)
        if item.tree:
            if outcome.status == "failed":
                logger.error("not extracting %s: its download failed", item.dest)
            else:
                current[:] = ["extract", item.tree, item.dest]
                outcomes.append(extract(root, item, outcome))
    current[:] = []


def unverified_files(outcomes: List[Outcome], plan: List[Item]) -> List[str]:
    """The downloads in place without a sha256 checked (an extracted tree follows its archive)."""
    trees = {item.tree for item in plan if item.tree}
    return [o.dest for o in outcomes if o.dest not in trees and o.status != "failed" and not o.verified]


def _on_sigterm_interrupt():
    """SIGTERM (a Job's pod deleted) ends the run like Ctrl-C; returns the old handler. Ctrl-C
    raises KeyboardInterrupt even where the command was started with SIGINT ignored (a shell's
    background job), which Python would otherwise keep."""
    def handler(signum, frame):
        raise Interrupted("SIGTERM", 128 + signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return signal.signal(signal.SIGTERM, handler)


def interrupted_line(signal_name: str, root: str, current: List[str]) -> str:
    """The one line an interrupted run ends with: what was under way and what it left."""
    if not current:
        return "prepare: interrupted (%s); nothing was left partial" % signal_name
    kind, dest = current[:2]
    if kind == "extract":
        return ("prepare: interrupted (%s) while extracting %s into %s; nothing was left partial "
                "(the next run extracts again)" % (signal_name, current[2], dest))
    part = os.path.join(root, *dest.split("/")) + ".part"
    if not os.path.exists(part):
        return "prepare: interrupted (%s) before %s was written; nothing was left partial" % (signal_name, dest)
    return ("prepare: interrupted (%s); %s left partial: %d bytes in %s (the next run resumes it)"
            % (signal_name, dest, os.path.getsize(part), part))


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.retries < 1:
        parser.error("--retries: must be at least 1")
    if args.timeout <= 0 or args.backoff_seconds < 0 or args.progress_mb <= 0:
        parser.error("--timeout and --progress-mb must be positive, --backoff-seconds not negative")
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format="%(asctime)s %(levelname)s %(message)s")
    plan = build_plan(args, parser.error)
    known = load_checksums(args.checksums, parser.error)
    root = os.path.abspath(args.root)
    if args.dry_run:
        for item in plan:
            print("%s -> %s%s" % (redact(item.url), os.path.join(root, item.dest),
                                  " (size/sha256 known)" if item.dest in known else ""))
            if item.tree:
                print("extract %s -> %s" % (os.path.join(root, item.dest), os.path.join(root, item.tree)))
        print("dry run: %d file(s), nothing fetched" % len(plan))
        return 0
    if not plan:
        logger.warning("nothing to do: no source URL given (or none left by --only)")
    opts = Options(args.retries, args.timeout, args.backoff_seconds, int(args.progress_mb * (1 << 20)))
    started = _now()
    os.makedirs(root, exist_ok=True)
    outcomes: List[Outcome] = []
    current: List[str] = []  # what is under way, for the line an interruption prints
    previous = _on_sigterm_interrupt()
    try:
        _fetch_all(plan, root, known, opts, outcomes, current)
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM through _on_sigterm_interrupt
        signal_name, code = (stop.signal_name, stop.exit_code) if isinstance(stop, Interrupted) \
            else ("SIGINT", 130)
        line = interrupted_line(signal_name, root, current)
        _write_json(os.path.join(root, STATUS_FILE), {
            "started": started, "finished": _now(), "root": root, "ok": False, "interrupted": line,
            "files": [asdict(o) for o in outcomes]})
        print(line, file=sys.stderr, flush=True)
        return code
    finally:
        signal.signal(signal.SIGTERM, previous)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("done", "skipped", "failed")}
    unverified = unverified_files(outcomes, plan)
    _write_json(os.path.join(root, STATUS_FILE), {
        "started": started, "finished": _now(), "root": root, "ok": counts["failed"] == 0,
        "counts": counts, "unverified": unverified, "files": [asdict(o) for o in outcomes]})
    logger.info("summary: %d done, %d skipped, %d failed", counts["done"], counts["skipped"], counts["failed"])
    for o in outcomes:
        size = _human(o.size) if o.size is not None else (
            "%s files" % o.detail["files"] if o.detail.get("files") is not None else "-")
        logger.info("  %-7s %s (%s)%s", o.status, o.dest, size, ": " + o.error if o.error else "")
    if unverified:
        logger.warning("not verified (no sha256 in --checksums): %s", ", ".join(unverified))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
