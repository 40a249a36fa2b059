"""What the data Job downloads, and how each file is verified, decided at preview: the
defaults are https, a plain-http download is refused unless its file has a sha256 (the
committed ``workloads/checksums.json`` or the site's ``dataChecksums``), and the files no
published digest exists for are named."""
from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from components.settings import SettingsError
from components.settings.downloads import digests, unverified_warnings
from components.settings.schema import default
from tests.render.stacks import stack_settings

URL_SETTINGS = ("dogsImagesUrl", "dogsLabelsUrl", "modelWeightsUrl", "taxiUrlTemplate")
STANFORD_HTTP = "http://vision.stanford.edu/aditya86/ImageNetDogs/images.tar"
MIRROR_WEIGHTS = "http://mirror.lab.example/models/resnet50-11ad3fa6.pth"
V2_DIGEST = "file=models/resnet50-11ad3fa6.pth,size=102540417,sha256=" + "ab" * 32


def refused(**config) -> str:
    with pytest.raises(SettingsError) as info:
        stack_settings("dev", config)
    return str(info.value)


def test_every_default_download_is_https():
    assert {key: default(key) for key in URL_SETTINGS if not default(key).startswith("https://")} == {}


def test_the_committed_digests_are_well_formed_and_cite_their_source():
    committed = json.loads(resources.files("workloads").joinpath("checksums.json").read_text())
    assert set(committed) == {"dogs/images.tar", "models/resnet50-0676ba61.pth"}
    for dest, entry in committed.items():
        assert isinstance(entry["size"], int) and entry["size"] > 0, dest
        assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]), dest
        assert entry["url"].startswith("https://") and entry["source"], dest


def test_the_default_stack_verifies_the_archive_and_the_weights():
    known = digests(stack_settings("dev", {}).data)
    assert known["dogs/images.tar"] == {
        "size": 793579520, "sha256": "a443fc2f9a851aa1a7b8e4fa4af94b8459fce2c9f5a2f4dd4669cf9673a4ec58"}
    assert known["models/resnet50-0676ba61.pth"] == {
        "size": 102530333, "sha256": "0676ba61b6795bbe1773cffd859882e5e297624d384b6993f7c9e683e722fb8a"}


def test_a_plain_http_download_without_a_checksum_is_refused_naming_the_setting():
    message = refused(modelWeightsUrl=MIRROR_WEIGHTS)
    assert "dask-tkg:modelWeightsUrl" in message
    assert "plain http and models/resnet50-11ad3fa6.pth has no sha256" in message
    assert "file=models/resnet50-11ad3fa6.pth,size=<bytes>,sha256=<64 hex digits>" in message


def test_a_plain_http_taxi_template_without_checksums_is_refused():
    message = refused(taxiUrlTemplate="http://mirror.lab.example/trip-data/yellow_tripdata_{month}.parquet")
    assert "dask-tkg:taxiUrlTemplate" in message and "taxi/yellow_tripdata_2019-01.parquet has no sha256" in message


def test_plain_http_is_accepted_for_a_file_whose_digest_is_committed():
    """A mirror (or the host's own http address) must serve the upstream bytes: the Job
    checks them against the committed digest before the archive is extracted."""
    s = stack_settings("dev", {"dogsImagesUrl": STANFORD_HTTP})
    assert digests(s.data)["dogs/images.tar"]["sha256"].startswith("a443fc2f")


def test_a_sites_digest_makes_its_plain_http_mirror_acceptable_and_reaches_the_job():
    s = stack_settings("dev", {"modelWeightsUrl": MIRROR_WEIGHTS, "dataChecksums": [V2_DIGEST]})
    assert digests(s.data)["models/resnet50-11ad3fa6.pth"] == {"size": 102540417, "sha256": "ab" * 32}
    assert "models/resnet50-0676ba61.pth" not in digests(s.data)  # only what the Job downloads


def test_a_digest_for_a_file_the_job_does_not_download_is_refused():
    message = refused(dataChecksums=["file=taxi/yellow_tripdata_2019-02.parquet,sha256=" + "cd" * 32])
    assert "dask-tkg:dataChecksums[0].file" in message
    assert "the data Job does not download taxi/yellow_tripdata_2019-02.parquet" in message


@pytest.mark.parametrize("record, field, message", [
    pytest.param("file=dogs/images.tar,sha256=xyz", "sha256", "must be 64 hex digits", id="sha256"),
    pytest.param("file=dogs/images.tar,size=-1,sha256=" + "ab" * 32, "size", "must be >= 0", id="size"),
    pytest.param("file=../etc/passwd,sha256=" + "ab" * 32, "file", "must be a path under the dataset root", id="file"),
])
def test_a_malformed_digest_names_its_field(record, field, message):
    text = refused(dataChecksums=[record])
    assert f"dask-tkg:dataChecksums[0].{field}" in text and message in text


def test_the_files_without_a_published_digest_are_named_at_preview():
    warnings = unverified_warnings(stack_settings("dev", {}).data)
    assert len(warnings) == 1
    assert "the data Job does not verify dogs/imagenet1000_clsidx_to_labels.txt (dask-tkg:dogsLabelsUrl)" in warnings[0]
    assert "taxi/yellow_tripdata_2019-01.parquet (dask-tkg:taxiUrlTemplate)" in warnings[0]
    assert "models/" not in warnings[0] and "dogs/images.tar" not in warnings[0]


def test_nothing_is_checked_when_the_data_job_is_off():
    s = stack_settings("dev", {"dataPrepEnabled": False, "modelWeightsUrl": MIRROR_WEIGHTS})
    assert unverified_warnings(s.data) == []


THIRD_FILE = "file=third/rows.csv,url=https://data.lab.example/third/rows.csv"


def test_another_benchmarks_files_reach_the_job_its_digests_and_its_egress():
    """A benchmark beyond the paper's two names its files in ``dataFiles``: the data Job
    fetches each with ``--file`` (no code of its own in the program or the downloader), its
    digest is checked when the site gives one, and the Job's egress opens that host's port."""
    from components.addons.dataset_job import job_args
    from components.kube.network_settings import data_urls

    digest = "file=third/rows.csv,sha256=" + "cd" * 32
    s = stack_settings("dev", {"dataFiles": [THIRD_FILE], "dataChecksums": [digest]})
    args = job_args(s.data, "/ml-share")
    assert args[args.index("--file") + 1] == "third/rows.csv=https://data.lab.example/third/rows.csv"
    assert digests(s.data)["third/rows.csv"] == {"sha256": "cd" * 32}
    assert "https://data.lab.example/third/rows.csv" in data_urls(s.data)


@pytest.mark.parametrize("entry, where, why", [
    ("file=../etc/rows.csv,url=https://data.lab.example/rows.csv", "dataFiles[0].file",
     "must be a path under the dataset root"),
    ("file=third/passwd,url=file:///etc/passwd", "dataFiles[0].url", "must be an http:// or https:// URL"),
    ("file=third/rows.csv", "dataFiles[0]", "url"),
])
def test_a_bad_data_file_fails_at_preview_naming_its_field(entry, where, why):
    message = refused(dataFiles=[entry])
    assert f"dask-tkg:{where}" in message and why in message


def test_a_plain_http_data_file_needs_a_digest_like_every_other_download():
    message = refused(dataFiles=["file=third/rows.csv,url=http://data.lab.example/third/rows.csv"])
    assert "dask-tkg:dataFiles" in message and "third/rows.csv has no sha256" in message
