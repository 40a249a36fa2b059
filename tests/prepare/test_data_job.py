"""The data Job as the program declares it (the dev stack under Pulumi's mocks), run the way
the cluster runs it: its code and checksums written from the ConfigMap it mounts, its
command line as rendered, the upstream addresses answered by the tests' local server with
files that are not the upstream ones. The committed digests refuse them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from components.addons.dataset_job import CODE_MOUNT
from tests.program.graph import run_program

from .server import FILES

UPSTREAM_ARCHIVE_SHA256 = "a443fc2f9a851aa1a7b8e4fa4af94b8459fce2c9f5a2f4dd4669cf9673a4ec58"
UPSTREAM_WEIGHTS_SHA256 = "0676ba61b6795bbe1773cffd859882e5e297624d384b6993f7c9e683e722fb8a"
UPSTREAM_ARCHIVE_SIZE, UPSTREAM_WEIGHTS_SIZE = 793579520, 102530333


@pytest.fixture(scope="module")
def rendered() -> tuple[list[str], dict[str, str], str]:
    """(the container's args, the code ConfigMap's files, the dataset mount) of the dev stack."""
    graph = run_program("dev")
    container = graph.named("dataset-job").manifest()["spec"]["template"]["spec"]["containers"][0]
    [dataset] = [m["mountPath"] for m in container["volumeMounts"] if m["name"] == "dataset"]
    return container["args"], graph.named("dataset-code").manifest()["data"], dataset


def test_the_jobs_command_passes_the_committed_checksums_file(rendered):
    args, files, _ = rendered
    assert args[args.index("--checksums") + 1] == f"{CODE_MOUNT}/checksums.json"
    known = json.loads(files["checksums.json"])
    assert known["dogs/images.tar"]["sha256"] == UPSTREAM_ARCHIVE_SHA256
    assert known["models/resnet50-0676ba61.pth"]["sha256"] == UPSTREAM_WEIGHTS_SHA256
    assert all(url.startswith("https://") for url in args if "://" in url)


def as_on_the_cluster(args: list[str], files: dict[str, str], dataset: str, server, tmp_path: Path) -> list[str]:
    """The rendered command with its mounts moved under ``tmp_path`` and every upstream
    address answered by the local server at the same path."""
    code = tmp_path / "code"
    code.mkdir()
    for name, text in files.items():
        (code / name).write_text(text)
    out = []
    for arg in args[1:]:  # args[0] is the image's python
        if arg.startswith(CODE_MOUNT + "/"):
            out.append(str(code) + arg[len(CODE_MOUNT):])
        elif arg == dataset:
            out.append(str(tmp_path / "ml-share"))
        elif "://" in arg:
            out.append(server.url(urllib.parse.urlsplit(arg).path))
        else:
            out.append(arg)
    # A refused file is tried 5 times, 2, 4, 8 and 16 s apart, on the cluster: here twice, at once.
    return [*out, "--retries", "2", "--backoff-seconds", "0.01", "--timeout", "30"]


def test_the_rendered_job_refuses_an_archive_and_weights_that_are_not_the_upstream_files(rendered, server, tmp_path):
    args, files, dataset = rendered
    paths = [urllib.parse.urlsplit(a).path for a in args if "://" in a]
    # The archive is the tests' small one; the weights have the upstream size, other bytes.
    weights = FILES["/models/resnet50-0676ba61.pth"]
    weights = (weights * (UPSTREAM_WEIGHTS_SIZE // len(weights) + 1))[:UPSTREAM_WEIGHTS_SIZE]
    served = {"images.tar": FILES["/dogs/images.tar"], "resnet50-0676ba61.pth": weights,
              "imagenet1000_clsidx_to_labels.txt": FILES["/labels/imagenet1000_clsidx_to_labels.txt"]}
    for path in paths:
        name = path.rsplit("/", 1)[1]
        if "{month}" in name:
            server.files[path.replace("{month}", "2019-01")] = FILES["/trip-data/yellow_tripdata_2019-01.parquet"]
        else:
            server.files[path] = served[name]
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, *as_on_the_cluster(args, files, dataset, server, tmp_path)],
                          check=False, env=env, capture_output=True, text=True, timeout=120)
    root = tmp_path / "ml-share"
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"checksums say {UPSTREAM_ARCHIVE_SIZE}" in done.stdout  # refused before a byte is kept
    assert f"expected {UPSTREAM_WEIGHTS_SHA256}" in done.stdout  # refused by its sha256
    assert not (root / "dogs/images.tar").exists() and not (root / "dogs/Images").exists()
    assert not (root / "models/resnet50-0676ba61.pth").exists()
    assert "not extracting dogs/images.tar: its download failed" in done.stdout
    # The files no published digest exists for are fetched, and named as not verified.
    assert (root / "taxi/yellow_tripdata_2019-01.parquet").exists()
    report = json.loads((root / ".prepare-status.json").read_text())
    assert report["unverified"] == ["dogs/imagenet1000_clsidx_to_labels.txt", "taxi/yellow_tripdata_2019-01.parquet"]
    assert ("not verified (no sha256 in --checksums): dogs/imagenet1000_clsidx_to_labels.txt, "
            "taxi/yellow_tripdata_2019-01.parquet") in done.stdout
