"""The fetch script's rule for the two sums an artifact may carry: ``sha256`` is the digest of
the upstream bytes and is the only one a download may match; ``mirror_sha256`` (with its
reason, ``mirror_why``) is accepted for an offline mirror's copy only. Downloads are
``file://`` URLs here: no network."""
from __future__ import annotations

import hashlib
from typing import Any

import pytest

from tests.artifacts import fetch_artifacts as fa

UPSTREAM = b"the bytes the upstream URL serves"
REBUILT = b"the mirror's rebuild of the same chart"


def _sum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def places(tmp_path):
    (tmp_path / "mirror" / "charts").mkdir(parents=True)
    (tmp_path / "upstream").mkdir()
    return tmp_path


def _artifact(places, served: bytes, mirrored: bytes | None, mirror_sum: bool) -> Any:
    """An ``fa.Artifact`` (Any: the script is loaded by its path, so mypy has no type for it)."""
    (places / "upstream" / "chart.tgz").write_bytes(served)
    if mirrored is not None:
        (places / "mirror" / "charts" / "chart.tgz").write_bytes(mirrored)
    return fa.Artifact(file="charts/chart.tgz", what="a chart", url=(places / "upstream" / "chart.tgz").as_uri(),
                       sha256=_sum(UPSTREAM), mirror_sha256=_sum(REBUILT) if mirror_sum else None,
                       mirror_why="the upstream package cannot be had offline" if mirror_sum else None)


def test_a_mirror_copy_may_match_the_mirror_sum(places):
    artifact = _artifact(places, served=b"unreachable", mirrored=REBUILT, mirror_sum=True)
    assert fa._fetch_one(artifact, places / "cache", places / "mirror") is None
    assert (places / "cache" / "charts" / "chart.tgz").read_bytes() == REBUILT
    assert fa._is_cached(artifact, places / "cache")


def test_a_download_must_match_the_upstream_sum_even_where_a_mirror_sum_exists(places):
    artifact = _artifact(places, served=REBUILT, mirrored=None, mirror_sum=True)
    problem = fa._fetch_one(artifact, places / "cache", places / "mirror")
    assert f"download: sha256 {_sum(REBUILT)} != pinned {_sum(UPSTREAM)}" in problem
    assert not (places / "cache" / "charts" / "chart.tgz").exists()


def test_without_a_mirror_sum_a_rebuilt_mirror_copy_is_refused_and_the_download_taken(places):
    artifact = _artifact(places, served=UPSTREAM, mirrored=REBUILT, mirror_sum=False)
    assert fa._fetch_one(artifact, places / "cache", places / "mirror") is None
    assert (places / "cache" / "charts" / "chart.tgz").read_bytes() == UPSTREAM


def test_a_mirror_sum_without_its_reason_is_refused(tmp_path):
    lock = tmp_path / "artifacts.toml"
    lock.write_text('[[artifact]]\nfile = "a.tgz"\nwhat = "a"\nurl = "https://x/a.tgz"\nsha256 = "00"\n'
                    'mirror_sha256 = "11"\n')
    with pytest.raises(ValueError, match=r"artifact #1 \(a.tgz\) lacks mirror_why"):
        fa.pinned(lock)


def test_only_artifacts_the_mirror_cannot_hold_carry_a_second_sum():
    """One exception, named: the nfs chart, published only as a release download."""
    second = {a.file: a.mirror_why for a in fa.pinned() if a.mirror_sha256}
    assert list(second) == ["charts/nfs-subdir-external-provisioner-4.0.18.tgz"]
    assert "release download" in second["charts/nfs-subdir-external-provisioner-4.0.18.tgz"]
