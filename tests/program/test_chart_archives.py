"""The deploy-time supply chain: every Helm release deploys the chart archive pinned in
``scripts/artifacts.toml`` (the digests the tests render), checked by sha256 before its local
path becomes the release's chart; a chart, version or repository without a pin is refused
at preview; the default images are pinned by digest and a tag-only image is warned about.

The program runs under Pulumi's mocks (tests/program/harness.py) on the cache
scripts/fetch_artifacts.py fills from the offline mirror; where a test needs another cache
(a changed byte, a site's own chart) it runs the harness with ``$DASK_TKG__CACHE`` pointing
at a copy, offline (``$DASK_TKG__OFFLINE``), with an empty mirror: no network.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.artifacts.store import artifacts_dir, file_sha256, pinned
from components.settings import DictSource, load
from tests.program.graph import HARNESS, REPO, SECRETS, Graph, run_program
from tests.unit.support import PAPER_PLATFORM, PROVIDER, SITE, problems, settings

# the current defaults: the operator backend (its chart and the dask chart for Jupyter)
OPERATOR_STACK: tuple[str, dict[str, object]] = ("dev", {})
# the paper's: the dask chart, GPU operator v1.9.1, the NFS provisioner
PAPER_STACK: tuple[str, dict[str, object]] = ("reference", {})
DIGEST = "sha256:" + "0123456789abcdef" * 4


def pins_by_chart() -> dict[tuple[str, str], object]:
    return {(a.chart, a.chart_version): a for a in pinned() if a.chart and a.chart_version}


def releases(graph) -> list[dict]:
    return [r.inputs for r in graph.of_type("kubernetes:helm.sh/v3:Release")]


def run_with_cache(cache: Path, stack: str, config: dict | None = None) -> Graph:
    """The harness on another cache, offline, with an empty mirror."""
    mirror = cache.parent / "empty-mirror"
    mirror.mkdir(exist_ok=True)
    env = {**__import__("os").environ, "DASK_TKG__CACHE": str(cache), "DASK_TKG__MIRROR": str(mirror),
           "DASK_TKG__OFFLINE": "1"}
    spec = {"stack": stack, "config": config or {}, "secrets": SECRETS, "mock": {}}
    done = subprocess.run([sys.executable, str(HARNESS), json.dumps(spec)], check=False, capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return Graph(json.loads(done.stdout))


def copied_cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    shutil.copytree(artifacts_dir() / "charts", cache / "artifacts" / "charts")
    return cache


@pytest.mark.parametrize("stack,config", [PAPER_STACK, OPERATOR_STACK], ids=["reference", "dev"])
def test_each_release_deploys_its_pinned_archive_verified(stack, config):
    graph = run_program(stack, config=config)
    assert graph.error is None, graph.traceback
    pins = pins_by_chart()
    deployed = releases(graph)
    assert len(deployed) >= 3
    for release in deployed:
        chart = Path(release["chart"])
        assert chart.is_absolute() and chart.is_relative_to(artifacts_dir()), (
            f"{release['name']}: the chart is {release['chart']!r}, not a verified local archive")
        pin = pins[(chart.name.removesuffix(f"-{release['version']}.tgz"), release["version"])]
        assert pin.accepts(file_sha256(chart), from_mirror=True)
        # no repository: Helm loads the local archive and fetches nothing (no NGC key sent either)
        assert "repositoryOpts" not in release, release["repositoryOpts"]


def test_a_changed_byte_in_the_cached_archive_stops_the_program(tmp_path):
    cache = copied_cache(tmp_path)
    archive = cache / "artifacts" / "charts" / "dask-2024.1.1.tgz"
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0x01
    archive.write_bytes(bytes(data))
    graph = run_with_cache(cache, "reference")
    assert graph.error is not None, "the program deployed from a changed archive"
    assert f"{archive} is not the pinned dask 2024.1.1 chart" in graph.error
    assert "33b5ef503c6cc08a8c6f641d605ff4b993ff25f7b1aa113200f7f73cdc28581e" in graph.error


def test_a_missing_archive_is_fetched_from_the_mirror_or_named_with_its_pin(tmp_path):
    cache = copied_cache(tmp_path)
    (cache / "artifacts" / "charts" / "dask-2024.1.1.tgz").unlink()
    graph = run_with_cache(cache, "reference")
    assert graph.error is not None
    assert "the dask 2024.1.1 chart archive (sha256 33b5ef50" in graph.error
    assert "not downloaded: DASK_TKG__OFFLINE is set" in graph.error


@pytest.mark.parametrize("config,key,expected", [
    ({"daskChartVersion": "2024.1.0"}, "daskChartVersion",
     "dask 2024.1.0 from https://helm.dask.org has no pinned digest"),
    ({"nfsProvisionerChartVersion": "4.0.17"}, "nfsProvisionerChartVersion",
     "nfs-subdir-external-provisioner 4.0.17 from https://kubernetes-sigs.github.io/nfs-subdir-external-provisioner"),
    # the paper's NVAIE 1.1 repository: the same chart version is pinned from NVIDIA's GitHub Pages repository
    ({"gpuOperatorChartRepo": "https://helm.ngc.nvidia.com/nvaie"}, "gpuOperatorChartRepo",
     "pinned only from https://nvidia.github.io/gpu-operator/stable"),
    ({"gpuOperatorVersion": "v1.9.0"}, "gpuOperatorVersion", "gpu-operator v1.9.0"),
], ids=["dask", "nfs", "gpu-operator-repo", "gpu-operator-version"])
def test_an_unpinned_chart_is_refused_at_preview(config, key, expected):
    graph = run_program("reference", config=config)
    assert graph.error is not None, f"{config} previewed"
    assert f"dask-tkg:{key}" in graph.error and expected in graph.error, graph.error
    assert "chartPins" in graph.error  # how a site pins its own chart


def test_a_sites_own_chart_deploys_by_the_digest_it_pins(tmp_path):
    """NVAIE's repository needs the NGC key and its digest is not public: a site pulls the
    archive itself into the cache's site-charts/ and pins its sha256 in chartPins."""
    cache = copied_cache(tmp_path)
    own = cache / "artifacts" / "site-charts" / "gpu-operator-v1.9.1.tgz"
    own.parent.mkdir(parents=True)
    shutil.copyfile(cache / "artifacts" / "charts" / "gpu-operator-v1.9.1.tgz", own)
    pin = (f"repo=https://helm.ngc.nvidia.com/nvaie,chart=gpu-operator,version=v1.9.1,"
           f"sha256={file_sha256(own)}")
    graph = run_with_cache(cache, "reference", {"gpuOperatorChartRepo": "https://helm.ngc.nvidia.com/nvaie",
                                                "chartPins": [pin]})
    assert graph.error is None, graph.error
    [operator] = [r for r in releases(graph) if r["name"] == "gpu-operator"]
    assert operator["chart"] == str(own)


def test_a_chart_pin_must_be_a_sha256():
    error = problems(chartPins=["repo=https://charts.example,chart=x,version=1.0.0,sha256=abc"])
    assert any(p.key == "chartPins[0].sha256" and "64 lower-case hex digits" in p.message for p in error.problems)


def test_the_default_images_are_pinned_by_digest():
    s = load(DictSource({k: v for k, v in SITE.items() if k not in PAPER_PLATFORM} | {"supervisorId": "domain-c8"},
                        PROVIDER))
    for key, image in (("daskImage", s.dask.image), ("dataJobImage", s.data.image)):
        assert "@sha256:" in image, f"{key} {image} is pinned by tag only"


def test_an_image_may_carry_tag_and_digest_but_not_a_malformed_digest():
    assert settings(dataJobImage=f"python:3.12.13-slim-trixie@{DIGEST}").data.image.endswith(DIGEST)
    error = problems(dataJobImage="python:3.12-slim@sha256:abc")
    assert any(p.key == "dataJobImage" and "64 lower-case hex digits" in p.message for p in error.problems)


def test_a_tag_only_image_is_warned_about_at_preview():
    graph = run_program("reference")
    assert graph.error is None, graph.traceback
    warned = [w for w in graph.warnings if "daskImage" in w and "tag only" in w]
    assert warned and "nvcr.io/nvidia/rapidsai/rapidsai:21.10-cuda11.2-runtime-ubuntu20.04" in warned[0]
    # the defaults carry digests, but for the operator's controller, whose digest the platform engineer gives
    tag_only = [w for w in run_program("dev").warnings if "tag only" in w]
    assert [w for w in tag_only if "dask-kubernetes-operator" not in w] == [], tag_only


def test_the_operator_image_is_pinned_by_the_digest_given_and_warned_about_without():
    """The controller's digest could not be read here (ghcr.io unreachable): the platform
    engineer gives it, the release then pulls by it; without it preview says so."""
    graph = run_program("dev")
    assert graph.error is None, graph.traceback
    warned = [w for w in graph.warnings if "ghcr.io/dask/dask-kubernetes-operator:2026.3.0 is pinned by tag only" in w]
    assert warned and "daskOperatorImageDigest" in warned[0]
    graph = run_program("dev", config={"daskOperatorImageDigest": DIGEST})
    assert graph.error is None, graph.traceback
    assert not [w for w in graph.warnings if "dask-kubernetes-operator" in w]
    [operator] = [r for r in releases(graph) if r["name"] == "dask-operator"] or [
        r for r in releases(graph) if "dask-kubernetes-operator" in r["chart"]]
    assert operator["values"]["image"]["tag"] == f"2026.3.0@{DIGEST}"


def test_a_malformed_operator_digest_is_refused_naming_the_key():
    error = problems(daskOperatorImageDigest="latest")
    assert "dask-tkg:daskOperatorImageDigest" in str(error)
    assert any(p.key == "daskOperatorImageDigest" and "must be sha256: and 64 lower-case hex digits" in p.message
               for p in error.problems)
