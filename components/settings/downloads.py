"""What the data Job downloads and how each file is verified, decided at preview.

The Job (``components/addons/dataset_job.py``) runs ``workloads/prepare.py`` with
``--checksums``: a file whose sha256 is known is renamed into place only when its bytes
match, so a substituted file never reaches the dataset (the dogs archive is not even
extracted). The digests come from two places:

- ``workloads/checksums.json``, committed, keyed by where the Job stores the file; each
  entry's ``source`` names the published record it is taken from.
- ``dataChecksums``, the site's: for a mirror that serves other bytes, other weights, or
  taxi months a platform engineer has recorded (docs/deploy.md, "The data Job's downloads").

No trustworthy published digest exists for the ImageNet label file (a gist, its revision
pinned in the URL) or for the TLC's taxi files (the TLC re-publishes them: every month was
re-released as Parquet in 2022, with columns added to old files), so those are fetched over
https and named at preview as not verified. A plain-http address is refused unless its file
has a digest: over http any hop on the path can substitute the bytes, and the weights are a
pickle.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, NoReturn

import components.settings.records as records
from components.settings.errors import Problem
from components.settings.model import DataSpec, Settings
from workloads import prepare
from workloads.runs import datasets

CHECKSUMS_FILE = "checksums.json"  # in the workloads package, beside prepare.py
_ITEM_ERROR = re.compile(r"^--(?:fetch|months|extract) (\S+):")  # prepare's usage error about one item
RECORD = "file={file},size=<bytes>,sha256=<64 hex digits>"
NAMED_PER_SETTING = 3  # a warning names this many files of one setting, then counts the rest


@dataclass(frozen=True)
class DataFile:
    setting: str  # the URL setting it comes from; "" for a URL a benchmark's dataset.json gives
    url: str
    dest: str  # where the Job stores it under the dataset root
    origin: str = ""  # what a message names as its URL's origin

    @property
    def named(self) -> str:
        return f"dask-tkg:{self.setting}" if self.setting else self.origin


def _data_file(text: str) -> str:
    parts = text.split("/")
    if text.startswith("/") or "\\" in text or any(p in ("", ".", "..") for p in parts):
        raise ValueError("must be a path under the dataset root as the data Job stores it,"
                         " e.g. taxi/yellow_tripdata_2019-01.parquet")
    return text


def _sha256(text: str) -> str:
    if not re.fullmatch(r"[0-9a-fA-F]{64}", text):
        raise ValueError("must be 64 hex digits (sha256sum's output)")
    return text.lower()


DIGEST_FIELDS = {
    "file": records.Field(_data_file),
    "sha256": records.Field(_sha256),
    "size": records.Field(records.integer(0), required=False),
}


def _http_url(text: str) -> str:
    if not text.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL (the data Job fetches nothing else)")
    return text


FILE_FIELDS = {
    "file": records.Field(_data_file),
    "url": records.Field(_http_url),
}


def file_flags(data: DataSpec) -> list[str]:
    """``dataFiles`` as the downloader's ``--file DEST=URL`` entries."""
    return [f"{f.file}={f.url}" for f in data.files]


def item_arguments(data: DataSpec) -> list[str]:
    """The downloader's arguments naming what it fetches: the benchmarks' declared items, then
    the site's ``dataFiles``. The Job runs them; the checks below plan with them."""
    files = [arg for entry in file_flags(data) for arg in ("--file", entry)]
    return [*datasets.prepare_arguments(data.downloads, data.values), *files]


@lru_cache(maxsize=1)
def committed() -> dict[str, dict[str, Any]]:
    """The committed digests, keyed by destination (entries also carry ``url`` and ``source``)."""
    entries: dict[str, dict[str, Any]] = json.loads(
        resources.files("workloads").joinpath(CHECKSUMS_FILE).read_text(encoding="utf-8"))
    return entries


def data_files(data: DataSpec) -> list[DataFile]:
    """The Job's downloads, planned by the downloader itself from the Job's own arguments
    (``prepare.build_plan``). Raises ValueError with the downloader's message for a URL it
    cannot use."""
    def error(message: str) -> NoReturn:
        raise ValueError(message)

    plan = prepare.build_plan(prepare._parser().parse_args(["--root", ".", *item_arguments(data)]), error)
    setting = {**{d.name: d.setting for d in data.downloads}, prepare.FILES: "dataFiles"}
    origin = {d.name: d.source for d in data.downloads}
    return [DataFile(setting[item.source], item.url, item.dest, origin.get(item.source, "")) for item in plan]


def _error_setting(message: str, data: DataSpec) -> str:
    """The setting a downloader's usage error is about: its item's URL setting, or its months
    setting for a month that is not YYYY-MM."""
    match = _ITEM_ERROR.match(message)
    item = next((d for d in data.downloads if match and d.name == match.group(1)), None)
    if item is None:
        return "dataPrepEnabled"
    return item.months if item.months and "YYYY-MM" in message else (item.setting or "dataPrepEnabled")


def digests(data: DataSpec) -> dict[str, dict[str, Any]]:
    """The Job's ``--checksums`` file: size and sha256 of each file it downloads that has
    them, the site's (``dataChecksums``) over the committed ones."""
    known = {dest: {"size": entry["size"], "sha256": entry["sha256"]} for dest, entry in committed().items()}
    known.update({d.file: {"sha256": d.sha256, **({"size": d.size} if d.size is not None else {})}
                  for d in data.checksums})
    wanted = {f.dest for f in data_files(data)}
    return {dest: known[dest] for dest in sorted(wanted & known.keys())}


def _named(files: list[DataFile]) -> str:
    out = []
    for named in dict.fromkeys(f.named for f in files):
        dests = [f.dest for f in files if f.named == named]
        if len(dests) > NAMED_PER_SETTING:
            dests = [*dests[:NAMED_PER_SETTING - 1], f"... {dests[-1]} ({len(dests)} files)"]
        out += [f"{dest} ({named})" for dest in dests]
    return ", ".join(out)


def download_checks(s: Settings) -> list[Problem]:
    """A plain-http download needs a digest; a site digest must name a file the Job downloads."""
    data = s.data
    if not data.enabled:
        return []
    try:
        files = data_files(data)
    except ValueError as exc:
        return [Problem(_error_setting(str(exc), data), str(exc))]
    known = digests(data)
    out = []
    for setting in dict.fromkeys(f.setting for f in files if f.setting):
        bare = [f for f in files if f.setting == setting and f.url.startswith("http://") and f.dest not in known]
        if bare:
            out.append(Problem(setting, f"{bare[0].url} is plain http and {bare[0].dest} has no sha256"
                                        f"{f' (nor {len(bare) - 1} more of its files)' if len(bare) > 1 else ''}:"
                                        " over http any hop on the path can substitute the bytes. Use https, or"
                                        " give each file's digest in dataChecksums: "
                                        + RECORD.format(file=bare[0].dest)))
    wanted = {f.dest for f in files}
    for index, digest in enumerate(data.checksums):
        if digest.file not in wanted:
            out.append(Problem(f"dataChecksums[{index}].file",
                               f"the data Job does not download {digest.file}; its files: {_named(files)}"))
    return out


def unverified_warnings(data: DataSpec) -> list[str]:
    """The preview's word on the files the Job fetches without a digest (over https)."""
    if not data.enabled:
        return []
    known = digests(data)
    missing = [f for f in data_files(data) if f.dest not in known]
    if not missing:
        return []
    return [f"the data Job does not verify {_named(missing)}: no sha256 is known for them (none is published"
            " for the ImageNet label file or the TLC's taxi files). It fetches them over https and names them"
            " in its log and in .prepare-status.json; to verify them, record each file's size and sha256 once"
            " (docs/deploy.md, \"The data Job's downloads\") and give them in dask-tkg:dataChecksums"]
