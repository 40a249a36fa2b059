"""The benchmarks' datasets as the deployed stack fetches them: each benchmark folder's
``dataset.json``, gathered through the registry (:func:`workloads.runs.benchmarks.declared_files`),
becomes the data Job's command line for ``workloads/prepare.py`` and the stack's
``datasetLayout`` output, so the program, the Job and the downloader name no benchmark.

The declaration is data, not a module: the Pulumi program reads it and imports only
standard-library modules of ``workloads`` (tests/test_import_graph.py), and a benchmark's
module imports numpy, torch or xgboost. JSON, because the standard library reads it (YAML
would need PyYAML). Its form::

    {"files": [{"name": "dogs",                  # prepare's --only name; unique across benchmarks
                "dest": "dogs/images.tar",        # under the dataset root
                "setting": "dogsImagesUrl",       # the stack setting holding its URL (Pulumi.yaml), or
                "url": "https://...",             # a URL of its own, for a file no site mirrors
                "extract": {"tree": "dogs/Images", "marker": "dogs/.images.complete"},  # optional
                "months": "taxiMonths"}],         # optional: a setting of YYYY-MM months
     "layout": {"dogs_images": "dogs/Images"}}   # datasetLayout keys, paths under the mount

``dest`` may hold ``{file}`` (the URL's file name); a ``months`` entry's ``dest`` holds
``{month}`` and ends in the suffixes its URL may have, ``{.csv|.parquet}``. ``extract``
names the tree the archive's top directory becomes and the marker kept once it is complete.
Standard library only.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workloads.runs import benchmarks

DECLARATION = "dataset.json"
FILES_SETTING = "dataFiles"  # the site's own files for any benchmark: prepare's ``--file DEST=URL``
_FIELDS = {"name", "dest", "setting", "url", "extract", "months"}


@dataclass(frozen=True)
class Download:
    """One file (or one per month) a benchmark declares for the data Job."""

    benchmark: str
    name: str
    dest: str
    setting: str = ""  # where its URL comes from; "" when the declaration gives ``url``
    url: str = ""
    tree: str = ""  # the archive's extracted tree ("" when it is not an archive)
    marker: str = ""
    months: str = ""  # the setting of its months ("" for one file)

    @property
    def source(self) -> str:
        """What a message names as the origin of its URL: the setting, else the declaration."""
        return self.setting or f"{self.benchmark}'s {DECLARATION}"


def _relative(text: Any, where: str) -> str:
    parts = str(text).split("/")
    if not isinstance(text, str) or text.startswith("/") or "\\" in text or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{where}: must be a relative path under the dataset root, got {text!r}")
    return text


def _download(benchmark: str, entry: Any, where: str) -> Download:
    """One ``files`` entry, checked: a declaration error names its file and entry."""
    if not isinstance(entry, dict) or not {"name", "dest"} <= entry.keys() or entry.keys() - _FIELDS:
        raise ValueError(f"{where}: needs name and dest, and only {', '.join(sorted(_FIELDS))}")
    if bool(entry.get("setting")) == bool(entry.get("url")):
        raise ValueError(f"{where}: give its URL's setting or its url, one of them")
    if entry.get("url") and not str(entry["url"]).startswith("https://"):
        raise ValueError(f"{where}: a declared url is https (no site digest vouches for it)")
    extract = entry.get("extract") or {}
    if extract and set(extract) != {"tree", "marker"}:
        raise ValueError(f"{where}: extract needs tree and marker")
    return Download(benchmark, str(entry["name"]), _relative(entry["dest"], f"{where}.dest"),
                    setting=entry.get("setting", ""), url=entry.get("url", ""),
                    tree=_relative(extract["tree"], f"{where}.extract.tree") if extract else "",
                    marker=_relative(extract["marker"], f"{where}.extract.marker") if extract else "",
                    months=entry.get("months", ""))


def _read(benchmark: str, path) -> dict:
    declared = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(declared, dict) or set(declared) - {"files", "layout"}:
        raise ValueError(f"{path}: holds files and layout, nothing else")
    return declared


def declarations() -> dict[str, dict]:
    """``{benchmark: its dataset.json}`` for each registered benchmark that declares one."""
    return {name: _read(name, path) for name, path in benchmarks.declared_files(DECLARATION).items()}


def downloads() -> tuple[Download, ...]:
    """Every benchmark's downloads, in registry order; a name declared twice is refused (it is
    prepare's ``--only`` name and the key the messages find its setting by)."""
    found = [_download(name, entry, f"{name}/{DECLARATION} files[{i}]")
             for name, declared in declarations().items() for i, entry in enumerate(declared.get("files", ()))]
    names = [d.name for d in found]
    twice = sorted({n for n in names if names.count(n) > 1} | ({"files"} & set(names)))
    if twice:
        raise ValueError(f"dataset names declared twice (or the reserved 'files'): {', '.join(twice)}")
    return tuple(found)


def layout(mount: str) -> dict[str, str]:
    """The ``datasetLayout`` output: each benchmark's keys, as paths under ``mount``."""
    out: dict[str, str] = {}
    for name, declared in declarations().items():
        for key, path in (declared.get("layout") or {}).items():
            if key in out:
                raise ValueError(f"{name}/{DECLARATION}: datasetLayout key {key!r} is declared twice")
            out[key] = f"{mount}/{_relative(path, f'{name}/{DECLARATION} layout.{key}')}"
    return out


def settings(declared: Iterable[Download]) -> list[tuple[str, str]]:
    """(setting, kind) of each setting the downloads read, in order, once: ``url`` for a
    file's URL, ``months`` for a list of months, ``template`` for a URL holding ``{month}``."""
    out: dict[str, str] = {}
    for d in declared:
        if d.months:
            out.setdefault(d.months, "months")
        if d.setting:
            out.setdefault(d.setting, "template" if d.months else "url")
    return list(out.items())


def _url(d: Download, values: Mapping[str, Any]) -> str:
    """The download's URL: its setting's value (empty when unset), or the fixed one it declares."""
    found = values.get(d.setting) if d.setting else d.url
    return str(found) if found else ""


def fetched(declared: Iterable[Download], values: Mapping[str, Any]) -> list[Download]:
    """The downloads the Job makes with these setting values: none for a months entry with no
    month, nor for a URL setting without a value (one the settings refused)."""
    return [d for d in declared if _url(d, values) and (not d.months or values.get(d.months))]


def prepare_arguments(declared: Iterable[Download], values: Mapping[str, Any]) -> list[str]:
    """prepare.py's item arguments for the downloads, ``values`` being the settings' values
    (``{setting: value}``, months as a sequence of YYYY-MM)."""
    args: list[str] = []
    for d in fetched(declared, values):
        if d.months:
            args += ["--months", d.name, d.dest, _url(d, values), ",".join(values[d.months])]
            continue
        args += ["--fetch", d.name, d.dest, _url(d, values)]
        if d.tree:
            args += ["--extract", d.name, d.tree, d.marker]
    return args


def urls(declared: Iterable[Download], values: Mapping[str, Any]) -> dict[str, str]:
    """``{source: URL}`` the Job downloads from (a months template once: its months share a host)."""
    return {d.source: _url(d, values) for d in fetched(declared, values)}
