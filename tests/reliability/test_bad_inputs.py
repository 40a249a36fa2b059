"""Bad input, each kind with the message it must produce, in four families: image files,
taxi files, stack outputs and settings. Kinds already tested elsewhere are listed in
docs/reliability.md with their tests; these are the ones that were missing."""
from __future__ import annotations

import gzip
import os
import socket
import struct
import zlib
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from components.settings import DictSource, SettingsError, load
from workloads.cluster import endpoint
from workloads.contract import ContractError, parse_outputs
from workloads.core.errors import DatasetError, EndpointError
from workloads.images import benchmark as images
from workloads.images import dataset
from workloads.runs.results import PhaseTimer
from workloads.taxi import benchmark as taxi
from workloads.taxi import io
from workloads.taxi import schema as s

# ----------------------------------------------------------------------------- image files


def _png(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (the pixels are not there)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b""))


def _rgb(mode: str = "RGB") -> Image.Image:
    pixels = np.random.default_rng(3).integers(0, 256, size=(48, 64, 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB").convert(mode)


def _save(image: Image.Image, fmt: str, **options):
    def write(path: Path) -> None:
        image.save(path, format=fmt, **options)
    return write


def _jpeg_bytes() -> bytes:
    from io import BytesIO

    buffer = BytesIO()
    _rgb().save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


IMAGE_FILES = {  # id -> (write(path), error fragment or None, converted_from or None)
    "zero-bytes": (lambda p: p.write_bytes(b""), "empty file (0 bytes)", None),
    "truncated-mid-scan": (lambda p: p.write_bytes(_jpeg_bytes()[: len(_jpeg_bytes()) // 2]),
                           "truncated image", None),
    "only-the-jpeg-marker": (lambda p: p.write_bytes(b"\xff\xd8"), "not an image (unrecognised format)", None),
    "text-file": (lambda p: p.write_text("Chihuahua, 3 years old\n"), "not an image (unrecognised format)", None),
    "html-error-page": (lambda p: p.write_text("<html><body>404 Not Found</body></html>"),
                        "not an image (unrecognised format)", None),
    "all-zero-bytes": (lambda p: p.write_bytes(b"\0" * 4096), "not an image (unrecognised format)", None),
    "decompression-bomb": (lambda p: p.write_bytes(_png(30_000, 30_000)),
                           "undecodable image: DecompressionBombError", None),
    "dangling-symlink": (lambda p: os.symlink(p.with_name("gone.jpg"), p),
                         "unreadable image: [Errno 2] No such file or directory", None),
    "png-under-jpg": (_save(_rgb(), "PNG"), None, "PNG"),
    "cmyk-jpeg": (_save(_rgb("CMYK"), "JPEG"), None, "CMYK"),
    "grayscale-jpeg": (_save(_rgb("L"), "JPEG"), None, "L"),
    "rgba-png": (_save(_rgb("RGBA"), "PNG"), None, "PNG/RGBA"),
    "palette-gif": (_save(_rgb("P"), "GIF"), None, "GIF/P"),
    "bmp-under-jpg": (_save(_rgb(), "BMP"), None, "BMP"),
    "webp-under-jpg": (_save(_rgb(), "WEBP"), None, "WEBP"),
    "tiff-under-jpg": (_save(_rgb(), "TIFF"), None, "TIFF"),
    "16-bit-grayscale-png": (_save(Image.fromarray(np.full((48, 64), 40_000, np.uint16)), "PNG"), None, "PNG/I;16"),
    "1-bit-png": (_save(_rgb("1"), "PNG"), None, "PNG/1"),
}


@pytest.mark.parametrize("kind", IMAGE_FILES)
def test_image_file(tmp_path, kind):
    write, error, converted = IMAGE_FILES[kind]
    path = tmp_path / "n02085620_7.jpg"
    write(path)
    decoded = dataset.decode(path)
    if error:
        assert decoded.image is None and decoded.error.startswith(error), decoded.error
    else:
        assert decoded.error is None and decoded.converted_from == converted and decoded.image.mode == "RGB"
        assert tuple(dataset.preprocess(decoded.image).shape) == (3, 224, 224)


def test_a_one_pixel_image_is_scaled_up_not_refused(tmp_path):
    _rgb().resize((1, 1)).save(tmp_path / "tiny.jpg", format="JPEG")
    decoded = dataset.decode(tmp_path / "tiny.jpg")
    assert decoded.error is None and tuple(dataset.preprocess(decoded.image).shape) == (3, 224, 224)


def test_a_folder_named_like_an_image_is_not_listed(tmp_path):
    breed = tmp_path / "Images" / "n02085620-Chihuahua"
    (breed / "n02085620_1.jpg").mkdir(parents=True)
    _rgb().save(breed / "n02085620_2.jpg", format="JPEG")
    assert dataset.walk_images(tmp_path / "Images") == (["n02085620-Chihuahua/n02085620_2.jpg"], 0)


def test_every_bad_image_kind_is_counted_by_the_benchmark_with_its_reason(client, tmp_path):
    """The same files through the benchmark on the cluster: each failure listed with its
    reason, each conversion with what it was, the rest classified."""
    breed = tmp_path / "dogs" / "Images" / "n02085620-Chihuahua"
    breed.mkdir(parents=True)
    for i, (write, _, _) in enumerate(IMAGE_FILES.values()):
        write(breed / f"n02085620_{100 + i}.jpg")
    _rgb().save(breed / "n02085620_1.jpg", format="JPEG")
    config = images.ImagesConfig(dataset_dir=str(tmp_path / "dogs"),
                                 model="workloads.images.synthetic:colour_classifier",
                                 batch_size=4, forward_batch=4)
    with client.as_current():  # the benchmarks' distributed.wait/as_completed take the current client
        metrics = images.run(client, config, PhaseTimer())
    names = {f"n02085620-Chihuahua/n02085620_{100 + i}.jpg": kind for i, kind in enumerate(IMAGE_FILES)}
    failed = {names[f["path"]]: f["reason"] for f in metrics["failed"]}
    converted = {names[c["path"]]: c["from"] for c in metrics["converted"]}
    # a dangling symlink is not a file: the walk never lists it
    assert set(failed) == {k for k, (_, error, _) in IMAGE_FILES.items() if error} - {"dangling-symlink"}
    assert all(failed[k].startswith(IMAGE_FILES[k][1]) for k in failed)
    assert converted == {k: c for k, (_, _, c) in IMAGE_FILES.items() if c}
    assert metrics["images_total"] == len(IMAGE_FILES)  # the good one in, the symlink out
    assert metrics["images_scored"] == 1 + len(converted) and metrics["images_failed"] == len(failed)


# ----------------------------------------------------------------------------- taxi files
HEADER = ",".join(s.COLUMNS_2017)
LINE = "1,2017-01-09 11:13:28,2017-01-09 11:25:45,1,3.30,1,N,263,161,1,12.5,0,0.5,2,0,0.3,15.3"


def _line_with(column: str, value: str) -> str:
    fields = LINE.split(",")
    fields[s.COLUMNS_2017.index(column)] = value
    return ",".join(fields)


TAXI_LINES = {  # id -> (bad line, problem)
    "fare-not-a-number": (_line_with(s.FARE, "12.3x"), "unparsable_value"),
    "total-is-text": (_line_with(s.TOTAL, "abc"), "unparsable_value"),
    "pickup-day-32": (_line_with(s.PICKUP, "2017-01-32 10:00:00"), "unparsable_value"),
    "dropoff-not-a-date": (_line_with(s.DROPOFF, "not a date"), "unparsable_value"),
    "passengers-in-words": (_line_with(s.PASSENGERS, "one"), "unparsable_value"),
    "flag-neither-y-nor-n": (_line_with(s.STORE_AND_FWD, "X"), "unparsable_value"),
    "distance-two-dots": (_line_with(s.DISTANCE, "1..2"), "unparsable_value"),
    "field-missing": (LINE.rsplit(",", 1)[0], "wrong_field_count"),
    "field-extra": (LINE + ",7", "wrong_field_count"),
    "line-cut-short": (",".join(LINE.split(",")[:3]), "wrong_field_count"),
}


def _read(path: Path) -> tuple[int, dict[str, int], io.FilePlan]:
    plans = io.plan(str(path.parent.parent), path.name.rsplit(".", 1)[0], 1 << 20)
    problems, rows = dict(plans[0].problems), 0
    for chunk in plans[0].chunks:
        result = io.read_chunk(chunk)
        rows += result.table.num_rows
        for reason, count in result.problems.items():
            problems[reason] = problems.get(reason, 0) + count
    return rows, problems, plans[0]


@pytest.mark.parametrize("kind", TAXI_LINES)
def test_taxi_line(tmp_path, kind):
    """One bad line among good ones: dropped and counted under its reason, the rest read."""
    bad, reason = TAXI_LINES[kind]
    (tmp_path / "taxi").mkdir()
    path = tmp_path / "taxi" / "yellow_tripdata_2017-01.csv"
    path.write_text("\n".join([HEADER, LINE, bad, LINE]) + "\n")
    rows, problems, _ = _read(path)
    assert (rows, problems) == (2, {reason: 1})


TAXI_FILES = {  # id -> (write(path), problem); path is yellow_tripdata_2017-01.<suffix>
    "semicolon-separated": (lambda p: p.write_text(HEADER.replace(",", ";") + "\n" + LINE.replace(",", ";") + "\n"),
                            "missing_column"),
    "gzip-under-csv": (lambda p: p.write_bytes(gzip.compress((HEADER + "\n" + LINE + "\n").encode())),
                       "unreadable_file"),
    "parquet-without-the-fare": (lambda p: pd.read_csv(StringIO(HEADER + "\n" + LINE + "\n"))
                                 .drop(columns=[s.FARE]).to_parquet(p.with_suffix(".parquet")), "missing_column"),
    "parquet-schema-only": (lambda p: pq.write_table(pa.schema([(c, s.FILE_TYPES[c]) for c in s.COLUMNS_2017])
                                                     .empty_table(), p.with_suffix(".parquet")), "header_only"),
}


@pytest.mark.parametrize("kind", TAXI_FILES)
def test_taxi_file(tmp_path, kind):
    write, reason = TAXI_FILES[kind]
    (tmp_path / "taxi").mkdir()
    write(tmp_path / "taxi" / "yellow_tripdata_2017-01.csv")
    path = next((tmp_path / "taxi").iterdir())
    rows, problems, _plan = _read(path)
    assert rows == 0 and reason in problems, problems


def test_taxi_files_that_give_no_rows_fail_the_run_naming_each_file_and_reason(client, tmp_path):
    (tmp_path / "taxi").mkdir()
    (tmp_path / "taxi" / "yellow_tripdata_2017-01.csv").write_bytes(b"")
    (tmp_path / "taxi" / "yellow_tripdata_2017-02.csv").write_text(HEADER + "\n")
    (tmp_path / "taxi" / "yellow_tripdata_2017-03.parquet").write_bytes(b"PAR1 no PAR1")
    config = taxi.make_config(None, {"dataframe": "pandas"}, tmp_path, "cpu")
    # the benchmarks' distributed.wait/as_completed take the current client
    with client.as_current(), pytest.raises(DatasetError) as caught:
        taxi.run(client, config, PhaseTimer())
    message = str(caught.value)
    assert message.startswith("no rows could be read from the 3 file(s) matching 'yellow_tripdata_*' under")
    for name, reason in (("2017-01.csv", "empty_file"), ("2017-02.csv", "header_only"),
                         ("2017-03.parquet", "unreadable_file")):
        assert f"'yellow_tripdata_{name}': {{'{reason}': 1}}" in message


def test_a_spreadsheet_dated_month_fails_the_run_naming_column_format_and_value(client, tmp_path):
    """One month re-saved by a spreadsheet program beside a good one: the run fails naming
    the file, the column, the TLC's format and a value, instead of training on the good
    month after counting every line of the other as unparsable."""
    (tmp_path / "taxi").mkdir()
    spreadsheet = LINE.replace("2017-01-09 11:13:28", "1/9/2017 11:13").replace("2017-01-09 11:25:45", "1/9/2017 11:25")
    (tmp_path / "taxi" / "yellow_tripdata_2017-01.csv").write_text("\n".join([HEADER, *[spreadsheet] * 50]) + "\n")
    (tmp_path / "taxi" / "yellow_tripdata_2017-02.csv").write_text("\n".join([HEADER, *[LINE] * 50]) + "\n")
    config = taxi.make_config(None, {"dataframe": "pandas"}, tmp_path, "cpu")
    with client.as_current(), pytest.raises(DatasetError) as caught:
        taxi.run(client, config, PhaseTimer())
    assert str(caught.value) == (
        f"{tmp_path / 'taxi' / 'yellow_tripdata_2017-01.csv'}: column tpep_pickup_datetime holds dates in another"
        " format than the TLC's YYYY-MM-DD HH:MM:SS, e.g. '1/9/2017 11:13' (a file re-saved by a spreadsheet"
        " program?); refusing the file rather than dropping its rows: use the TLC's file")


def test_taxi_rows_that_every_rule_drops_fail_the_run_naming_the_rules(client, tmp_path):
    (tmp_path / "taxi").mkdir()
    lines = [_line_with(s.FARE, "-5") for _ in range(50)]
    (tmp_path / "taxi" / "yellow_tripdata_2017-01.csv").write_text("\n".join([HEADER, *lines]) + "\n")
    config = taxi.make_config(None, {"dataframe": "pandas"}, tmp_path, "cpu")
    timer = PhaseTimer()
    with client.as_current():  # the benchmarks' distributed.wait/as_completed take the current client
        dropped = r"every row was dropped by the cleansing rules: .*'fare_not_positive': 50"
        with pytest.raises(DatasetError, match=dropped):
            taxi.run(client, config, timer)
    assert list(timer.phases) == ["load", "cleanse"]


# ----------------------------------------------------------------------------- stack outputs
OUTPUTS = {
    "schedulerAddress": "tcp://dask-scheduler.dask.svc:8786", "dashboardUrl": "http://10.0.0.5:8787",
    "daskNamespace": "rapidsai", "daskRelease": "dask", "datasetMountPath": "/ml-share",
    "datasetLayout": {"taxi": "taxi"}, "workerCount": 8, "gpusPerWorker": 1, "threadsPerWorker": 6,
    "daskImage": "ghcr.io/dask/dask:2026.8.0", "daskVersion": "2026.8.0",
}
OUTPUT_CHANGES = {  # id -> (change (None removes the key), message fragment)
    "address-null": ({"schedulerAddress": None}, "missing output 'schedulerAddress'"),
    "mount-missing": ({"datasetMountPath": ...}, "missing output 'datasetMountPath'"),
    "worker-count-is-bool": ({"workerCount": True}, "output 'workerCount' must be int, got bool"),
    "threads-is-float": ({"threadsPerWorker": 6.0}, "output 'threadsPerWorker' must be int, got float"),
    "layout-is-text": ({"datasetLayout": "taxi"}, "output 'datasetLayout' must be dict, got str"),
    "address-without-scheme": ({"schedulerAddress": "dask-scheduler:8786"},
                               "output 'schedulerAddress' must start with tcp:// or tls://, got 'dask-scheduler:8786'"),
    "tls-without-client-key": ({"schedulerAddress": "tls://dask-scheduler:8786", "tlsClientCert": "PEM"},
                               "scheduler uses TLS but 'tlsClientCert'/'tlsClientKey' are missing"
                               " (read the outputs with --show-secrets)"),
}


@pytest.mark.parametrize("kind", OUTPUT_CHANGES)
def test_stack_output(kind):
    change, fragment = OUTPUT_CHANGES[kind]
    outputs = dict(OUTPUTS)
    for key, value in change.items():
        if value is ...:
            outputs.pop(key)
        else:
            outputs[key] = value
    with pytest.raises(ContractError) as caught:
        parse_outputs(outputs, "outputs.json")
    assert str(caught.value).startswith("outputs.json: ") and fragment in str(caught.value)


def test_outputs_that_are_not_an_object():
    with pytest.raises(ContractError, match=r"^outputs.json: expected a JSON object of outputs, got list$"):
        parse_outputs([OUTPUTS], "outputs.json")


def test_every_problem_of_the_outputs_in_one_message():
    outputs = {**OUTPUTS, "workerCount": "8", "daskImage": None}
    del outputs["daskRelease"]
    with pytest.raises(ContractError) as raised:
        parse_outputs(outputs, "stack dev")
    message = str(raised.value)
    assert all(part in message for part in ("missing output 'daskRelease'", "missing output 'daskImage'",
                                            "output 'workerCount' must be int, got str"))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_scheduler_names_the_address_tried():
    address = f"tcp://127.0.0.1:{_closed_port()}"
    with pytest.raises(EndpointError, match=rf"^cannot reach the scheduler at {address} within 2 s: "):
        endpoint.connect(address, timeout=2)


def test_a_scheduler_address_with_credentials_is_refused_without_showing_them():
    port = _closed_port()
    with pytest.raises(EndpointError) as caught:
        endpoint.connect(f"tcp://admin:hunter2@127.0.0.1:{port}", timeout=1)
    assert str(caught.value) == (f"tcp://127.0.0.1:{port} (credentials not shown) is not an address distributed can"
                                 " connect to: host:port, an IPv6 host in brackets, no user:password@")


def test_a_scheduler_address_of_another_scheme():
    with pytest.raises(EndpointError, match=r"--scheduler-address: scheduler address must look like"
                                            r" tcp://host:8786, got 'ftp://host:8786'"):
        endpoint.from_address("ftp://host:8786")


@pytest.mark.parametrize("script, fragment", [
    ("echo 'error: no stack named dev found' >&2; exit 255",
     "`pulumi stack output --stack dev` failed: error: no stack named dev found"),
    ("echo 'Current stack outputs (0):'", "`pulumi stack output --stack dev` did not print JSON"),
], ids=["cli-fails", "cli-prints-text"])
def test_the_pulumi_cli_going_wrong(monkeypatch, tmp_path, script, fragment):
    fake = tmp_path / "pulumi"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(EndpointError) as caught:
        endpoint.read_stack("dev")
    assert fragment in str(caught.value)


# ----------------------------------------------------------------------------- settings
SITE = {"datacenter": "DC0", "computeCluster": "DC0_C0", "esxiHosts": ["esxi-01", "esxi-02"],
        "supervisorServer": "192.168.105.2", "ngcApiKey": "ngc-key", "vgpuLicenseToken": "token",
        "fileShareClients": ["ips=10.20.30.0/24,permissions=READ_WRITE,allowRoot=true"]}
PROVIDER = {"vsphere:vsphereServer": "vc.example", "vsphere:user": "administrator@vsphere.local",
            "vsphere:password": "secret-pw"}
SMALL_VGPU = "name=8cpu-32gram-ts-10c,cpus=8,memoryMb=32768,memoryReservation=100,vgpuProfile=grid_a100-10c"


def _pools(vm_class: str = "16cpu-64gram-ts-20c-vmxnet3", gpu_nodes: int = 8, *extra: str) -> list[str]:
    return [f"name=gpu-worker,role=gpu,replicas={gpu_nodes},vmClass={vm_class},storageClass=vsan-r1-sw8",
            "name=cpu-worker,role=cpu,replicas=2,vmClass=best-effort-xlarge,storageClass=vsan-r5", *extra]


# Combinations tests/unit/test_settings.py does not try (it has topology B with every GPU
# node taken, workerMemory above the default vGPU class, datasetPvcSize alone above the share).
SETTING_COMBINATIONS = {
    "topology-b-jupyter-memory-above-its-vgpu-node": (
        {"jupyterGpu": True, "jupyterMemory": "80Gi"}, "jupyterMemory",
        "80Gi exceeds VM class '16cpu-64gram-ts-20c-vmxnet3' of pool 'gpu-worker' (65536 MiB)"),
    "topology-b-jupyter-cpus-above-its-vgpu-node": (
        {"jupyterGpu": True, "jupyterCpu": 24}, "jupyterCpu", "24 CPUs exceed VM class '16cpu-64gram-ts-20c-vmxnet3'"),
    "topology-b-a-jupyter-vgpu-pool-without-jupytergpu": (
        {"nodePools": _pools("16cpu-64gram-ts-20c-vmxnet3", 7, "name=jupyter,role=jupyter,replicas=1,"
                             "vmClass=16cpu-64gram-ts-20c-vmxnet3,storageClass=vsan-r1-sw8")},
        "nodePools[2].vmClass", "pool 'jupyter' gives Jupyter a vGPU but jupyterGpu is false"),
    "worker-memory-above-a-smaller-vgpu-class": (
        {"vmClasses": [SMALL_VGPU], "nodePools": _pools("8cpu-32gram-ts-10c"), "workerMemory": "40Gi"},
        "workerMemory", "40Gi per worker exceeds VM class '8cpu-32gram-ts-10c' (32768 MiB)"),
    "worker-cpus-above-a-smaller-vgpu-class": (
        {"vmClasses": [SMALL_VGPU], "nodePools": _pools("8cpu-32gram-ts-10c"), "workerMemory": "24Gi",
         "workerCpu": 12}, "workerCpu", "12 CPUs per worker exceed VM class '8cpu-32gram-ts-10c' (8 vCPU)"),
    "cpu-jupyter-memory-above-the-cpu-pool": (
        {"jupyterMemory": "128Gi"}, "jupyterMemory",
        "128Gi exceeds VM class 'best-effort-xlarge' of pool 'cpu-worker'"),
    "dataset-and-pip-cache-claims-together-above-the-share": (
        {"datasetPvcSize": "1500Gi", "pipCachePvcSize": "600Gi"}, "datasetPvcSize",
        "datasetPvcSize 1500Gi + pipCachePvcSize 600Gi exceed the file share (fileShareSizeGib 2048)"),
    "file-share-shrunk-below-the-default-claims": (
        {"fileShareSizeGib": 600}, "datasetPvcSize",
        "datasetPvcSize 500Gi + pipCachePvcSize 200Gi exceed the file share (fileShareSizeGib 600)"),
    "jupyter-load-balancer-without-source-ranges": (
        {"jupyterServiceType": "LoadBalancer"}, "jupyterServiceType", "a LoadBalancer needs loadBalancerSourceRanges"),
    "no-gpu-node-in-any-pool": (
        {"nodePools": _pools(gpu_nodes=0)}, "nodePools", "no pool has role=gpu: the Dask workers need GPU nodes"),
}


@pytest.mark.parametrize("kind", SETTING_COMBINATIONS)
def test_setting_combination(kind):
    overrides, key, words = SETTING_COMBINATIONS[kind]
    with pytest.raises(SettingsError) as caught:
        load(DictSource({**SITE, **overrides}, PROVIDER))
    matching = [str(p) for p in caught.value.problems if p.key == key]
    assert any(words in m for m in matching), (matching, str(caught.value))
    assert f"dask-tkg:{key}" in str(caught.value)



# ----------------------------------------------------------------------------- whole messages
# The tests elsewhere that first covered these inputs match a fragment; these assert the
# whole message docs/reliability.md promises, with the path it names.

def test_a_missing_images_directory_is_named_with_the_layout_expected(tmp_path):
    missing = tmp_path / "dogs" / "Images"
    with pytest.raises(DatasetError) as caught:
        dataset.walk_images(missing)
    assert str(caught.value) == f"images directory {missing} does not exist (expected <data root>/dogs/Images)"


def test_a_class_directory_without_images_is_refused(tmp_path):
    (tmp_path / "Images" / "n02085620-Chihuahua").mkdir(parents=True)
    with pytest.raises(DatasetError) as caught:
        dataset.walk_images(tmp_path / "Images")
    assert str(caught.value) == f"no *.jpg files in {tmp_path / 'Images'}/<wnid>-<breed>/"


@pytest.mark.parametrize(("read", "text", "message"), [
    pytest.param(dataset.read_labels_file, "{0: 'tench',\n 1 goldfish\n",
                 "{file}:2: expected `<index>: '<name>',`, got '1 goldfish'", id="labels-line-that-does-not-parse"),
    pytest.param(dataset.read_labels_file, "{0: 'a', 2: 'c'}",
                 "{file}: expected class indices 0..N-1, got 2 entries", id="labels-with-a-gap-in-the-indices"),
    pytest.param(dataset.read_wnids_file, "nonsense line here\n",
                 "{file}:1: expected `<wnid> [names]` or `<index> <wnid>`, got 'nonsense line here'",
                 id="wnids-line-that-does-not-parse"),
])
def test_a_class_list_file_names_what_does_not_parse(tmp_path, read, text, message):
    listing = tmp_path / "classes.txt"
    listing.write_text(text)
    with pytest.raises(DatasetError) as caught:
        read(listing)
    assert str(caught.value) == message.format(file=listing)


def test_missing_weights_are_named_as_missing_on_the_worker(tmp_path):
    from workloads.images import model

    with pytest.raises(FileNotFoundError) as caught:
        model.load_state_dict(str(tmp_path / "missing.pt"))
    assert str(caught.value) == f"weights file {tmp_path / 'missing.pt'} does not exist on this worker"


def test_a_tls_address_without_the_outputs_credentials():
    with pytest.raises(EndpointError) as caught:
        endpoint.from_address("tls://dask-scheduler:8786")
    assert str(caught.value) == ("--scheduler-address: tls://dask-scheduler:8786 needs TLS credentials: use --stack or"
                                 " --outputs (the stack outputs carry the CA and client certificate)")
