"""The supply chain at preview: every Helm release the settings deploy has a pinned chart
archive, and the images are pinned by digest where they can be.

A release deploys only an archive whose sha256 is pinned for its chart, version and
repository (``components/artifacts/charts.py``): the project's pins (``scripts/artifacts.toml``,
the digests the chart repositories' own index.yaml list, which the tests render) or the site's
(``chartPins``, for a chart the project does not pin, such as NVIDIA AI Enterprise's
entitlement-gated packages). The same chart version from another repository is another
package with another digest, so the repository is part of the key.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import components.facts.dask_chart as dask_chart
import components.settings.records as records
from components.artifacts.charts import ChartRef, find_pin, pinned_elsewhere, project_pins, repo_key, site_pin
from components.artifacts.images import ImageRef
from components.artifacts.store import Artifact
from components.facts.addon_facts import NFS_CHART
from components.settings.errors import Problem
from components.settings.model import DaskSpec, GpuOperatorSpec, Settings, StorageSpec
from components.settings.reader import SettingsReader
from components.settings.soundness import Unsound

F = records.Field
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _sha256(text: str) -> str:
    if not _SHA256.match(text):
        raise ValueError("must be the archive's sha256: 64 lower-case hex digits (sha256sum <chart>.tgz)")
    return text


def _https(text: str) -> str:
    if not text.startswith("https://"):
        raise ValueError("must be an https:// URL")
    return text


PIN_FIELDS = {
    "repo": F(_https),
    "chart": F(records.text),
    "version": F(records.text),
    "sha256": F(_sha256),
    "url": F(_https, required=False, default=""),
}
PIN_FORMAT = ("repo=<repository URL>,chart=<name>,version=<version>,sha256=<the archive's sha256>"
              "[,url=<https URL of the .tgz>]")


def read_chart_pins(r: SettingsReader) -> tuple[Artifact, ...]:
    """The site's ``chartPins`` (``r`` is the settings reader, ``build._Reader``)."""
    return tuple(site_pin(p["repo"], p["chart"], p["version"], p["sha256"], p["url"])
                 for p in r.records("chartPins", PIN_FIELDS))


@dataclass(frozen=True)
class ChartUse:
    """A release's chart, the settings that name it, and whether the settings deploy it."""

    ref: ChartRef
    version_key: str
    repo_key: str | None  # None: the program fixes the repository
    deployed: bool


def chart_uses(s: Settings) -> dict[str, ChartUse]:
    return {"gpu_operator": _gpu_operator_use(s.gpu_operator), "nfs": _nfs_use(s.storage),
            "dask": _dask_use(s.dask), "operator": _operator_use(s.dask)}


def _gpu_operator_use(g: GpuOperatorSpec) -> ChartUse:
    return ChartUse(ChartRef(g.chart_repo, g.chart, g.version), "gpuOperatorVersion", "gpuOperatorChartRepo", True)


def _nfs_use(storage: StorageSpec) -> ChartUse:
    return ChartUse(ChartRef(NFS_CHART.repo, NFS_CHART.name, storage.nfs_chart_version), "nfsProvisionerChartVersion",
                    None, storage.provisioner == "nfs-subdir")


def _dask_use(d: DaskSpec) -> ChartUse:
    return ChartUse(ChartRef(dask_chart.REPOSITORY, dask_chart.CHART, d.chart_version), "daskChartVersion", None,
                    not d.on_operator or d.jupyter.enabled)


def _operator_use(d: DaskSpec) -> ChartUse:
    return ChartUse(ChartRef(dask_chart.REPOSITORY, dask_chart.OPERATOR_CHART,
                             d.operator.chart_version if d.operator else ""),
                    "daskOperatorChartVersion", None, d.operator is not None)


def with_chart_pins(s: Settings, site: tuple[Artifact, ...]) -> Settings:
    """``s`` with each release's pinned archive (None where there is none: chart_checks refuses
    it). A part holding a refused setting (``soundness.Unsound``) is left as it is."""
    pinned = {name: pin(getattr(s, name), site) for name, pin in _PINNERS.items()
              if not isinstance(getattr(s, name), Unsound)}
    return dataclasses.replace(s, **pinned)


def _pinned_gpu_operator(g: GpuOperatorSpec, site: tuple[Artifact, ...]) -> GpuOperatorSpec:
    return dataclasses.replace(g, chart_pin=find_pin(_gpu_operator_use(g).ref, site))


def _pinned_storage(storage: StorageSpec, site: tuple[Artifact, ...]) -> StorageSpec:
    return dataclasses.replace(storage, nfs_chart_pin=find_pin(_nfs_use(storage).ref, site))


def _pinned_dask(d: DaskSpec, site: tuple[Artifact, ...]) -> DaskSpec:
    dask = dataclasses.replace(d, chart_pin=find_pin(_dask_use(d).ref, site))
    if dask.operator is not None:
        operator_pin = find_pin(_operator_use(d).ref, site)
        dask = dataclasses.replace(dask, operator=dataclasses.replace(dask.operator, chart_pin=operator_pin))
    return dask


_PINNERS: dict[str, Callable[[Any, tuple[Artifact, ...]], Any]] = {
    "gpu_operator": _pinned_gpu_operator, "storage": _pinned_storage, "dask": _pinned_dask}


def chart_checks(s: Settings, site: tuple[Artifact, ...] = (), already: Sequence[Problem] = ()) -> list[Problem]:
    """A deployed release whose chart has no pin, named by the setting to change (unless
    another check ``already`` refuses that setting)."""
    pins = {"gpu_operator": s.gpu_operator.chart_pin, "nfs": s.storage.nfs_chart_pin, "dask": s.dask.chart_pin,
            "operator": s.dask.operator.chart_pin if s.dask.operator else None}
    refused = {p.key for p in already}
    found = [_unpinned(use, site) for name, use in chart_uses(s).items() if use.deployed and pins[name] is None]
    return [p for p in found if p.key not in refused]


def _unpinned(use: ChartUse, site: tuple[Artifact, ...]) -> Problem:
    ref = use.ref
    how = (f"A release deploys only a chart archive whose sha256 is pinned (scripts/artifacts.toml, or the site's"
           f" chartPins: {PIN_FORMAT}, the archive in the cache's site-charts/ folder or at url)")
    elsewhere = pinned_elsewhere(ref, site)
    if elsewhere and use.repo_key:
        repos = sorted({repo_key(p.chart_repo or "") for p in elsewhere})
        return Problem(use.repo_key, (
            f"{ref.chart} {ref.version} is pinned only from {' and '.join(repos)}; {repo_key(ref.repo)} serves its own"
            f" package of it, whose digest is not pinned. Set {use.repo_key} to {repos[0]}, or pin that"
            f" package. {how}"))
    versions = sorted(p.chart_version or "" for p in project_pins()
                      if p.chart == ref.chart and repo_key(p.chart_repo or "") == repo_key(ref.repo))
    return Problem(use.version_key, (
        f"{ref.chart} {ref.version} from {repo_key(ref.repo)} has no pinned digest (pinned:"
        f" {', '.join(versions) or 'none'})."
        f" Set {use.version_key} to a pinned version, or pin your archive. {how}"))


# --- images ---------------------------------------------------------------------------------

def image_warnings(s: Settings) -> list[str]:
    """Images named by a tag alone: the registry decides what they are at each pull."""
    images = [("daskImage", s.dask.image)]
    if s.data.enabled:
        images.append(("dataJobImage", s.data.image))
    return [f"{key} {image} is pinned by tag only: the registry may point the tag at other bytes at any pull"
            f" (a new node, a restarted pod). Pin it by digest as well, {key} {image}@sha256:<digest>"
            f" (docker buildx imagetools inspect {image}, or the image's page in docker-library/repo-info)"
            for key, image in images if ImageRef.parse(image).digest is None] + operator_image_warnings(s)


def operator_image_warnings(s: Settings) -> list[str]:
    """The Dask operator's controller image (the chart's tag) without ``daskOperatorImageDigest``:
    its digest could not be read where this program was made (ghcr.io unreachable, no public
    record of it), so the platform engineer pins it."""
    op = s.dask.operator
    if not s.dask.on_operator or op is None or op.image_digest:
        return []
    image = f"ghcr.io/dask/dask-kubernetes-operator:{op.chart_version}"
    return [f"the Dask operator's image {image} is pinned by tag only: the registry may point the tag at other"
            f" bytes at any pull. Set daskOperatorImageDigest to its digest (docker buildx imagetools inspect"
            f" {image}, the Digest line)"]
