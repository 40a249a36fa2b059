"""The data-preparation downloader against a local HTTP server: layout, resume, skip,
verification, unsafe archives, dry run, and running without the rest of the project."""
from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workloads import prepare

from .server import FILES, IMAGES, LAST_MODIFIED, basic, etag, make_tar

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "workloads" / "prepare.py"
WEIGHTS = "/models/resnet50-0676ba61.pth"
JAN, FEB = "/trip-data/yellow_tripdata_2019-01.csv", "/trip-data/yellow_tripdata_2019-02.csv"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.INFO, logger="dask_tkg.prepare")
    return caplog


def status(root: Path) -> dict:
    return json.loads((root / ".prepare-status.json").read_text())


def keep_validator(part: Path, data: bytes) -> None:
    """What the downloader keeps beside a partial file of ``data`` from the test server."""
    (part.parent / (part.name + ".validator")).write_text(json.dumps(
        {"etag": etag(data), "last_modified": LAST_MODIFIED, "date": "Tue, 01 Dec 2026 09:00:00 GMT"}))


def test_full_fetch_writes_the_layout(argv, tmp_path, log):
    root = tmp_path / "ml-share"
    assert prepare.main(argv()) == 0
    assert (root / "dogs/images.tar").read_bytes() == FILES["/dogs/images.tar"]
    for name, content in IMAGES.items():
        assert (root / "dogs" / name).read_bytes() == content
    assert (root / "dogs/imagenet1000_clsidx_to_labels.txt").read_bytes() == FILES[
        "/labels/imagenet1000_clsidx_to_labels.txt"]
    assert (root / "models/resnet50-0676ba61.pth").read_bytes() == FILES[WEIGHTS]
    assert (root / "taxi/yellow_tripdata_2019-01.csv").read_bytes() == FILES[JAN]
    assert (root / "taxi/yellow_tripdata_2019-02.csv").read_bytes() == FILES[FEB]
    marker = json.loads((root / "dogs/.images.complete").read_text())
    assert marker["sha256"] == sha(FILES["/dogs/images.tar"]) and marker["files"] == len(IMAGES)
    assert not list(root.rglob("*.part")) and not list((root / "dogs").glob(".Images.tmp-*"))
    report = status(root)
    assert report["ok"] and report["counts"] == {"done": 6, "skipped": 0, "failed": 0}
    assert {f["dest"] for f in report["files"]} >= {"dogs/Images", "models/resnet50-0676ba61.pth"}
    assert any("of 390.6 KiB" in r.message and "/s" in r.message for r in log.records)  # progress lines


def test_parquet_template_names_the_files_parquet(argv, server, tmp_path):
    template = server.url("/trip-data/yellow_tripdata_{month}.parquet")
    assert prepare.main(argv("--only", "taxi", taxi=template)) == 0
    taxi = tmp_path / "ml-share" / "taxi"
    assert sorted(p.name for p in taxi.iterdir()) == ["yellow_tripdata_2019-01.parquet",
                                                      "yellow_tripdata_2019-02.parquet"]
    assert (taxi / "yellow_tripdata_2019-02.parquet").read_bytes() == FILES[
        "/trip-data/yellow_tripdata_2019-02.parquet"]


def test_cut_download_leaves_a_part_and_the_next_run_resumes_it(argv, server, tmp_path):
    root = tmp_path / "ml-share"
    server.fault(WEIGHTS, "cut", 100_000)
    assert prepare.main(argv("--only", "weights", "--retries", "1")) == 1
    part = root / "models/resnet50-0676ba61.pth.part"
    assert part.stat().st_size == 100_000 and not (root / "models/resnet50-0676ba61.pth").exists()
    assert status(root)["counts"]["failed"] == 1

    assert prepare.main(argv("--only", "weights")) == 0
    assert [g.range for g in server.gets(WEIGHTS)] == [None, "bytes=100000-"]
    assert sha((root / "models/resnet50-0676ba61.pth").read_bytes()) == sha(FILES[WEIGHTS])
    assert not part.exists()
    entry = status(root)["files"][0]
    assert entry["status"] == "done" and entry["bytes_fetched"] == len(FILES[WEIGHTS]) - 100_000


def test_transient_errors_are_retried_within_a_run(argv, server, tmp_path, log):
    server.fault(JAN, "500")
    server.fault(WEIGHTS, "cut", 50_000)
    assert prepare.main(argv("--only", "weights,taxi")) == 0
    assert [g.range for g in server.gets(JAN)] == [None, None]
    assert [g.range for g in server.gets(WEIGHTS)] == [None, "bytes=50000-"]
    attempts = {f["dest"]: f["attempts"] for f in status(tmp_path / "ml-share")["files"]}
    assert attempts["taxi/yellow_tripdata_2019-01.csv"] == 2 and attempts["models/resnet50-0676ba61.pth"] == 2
    assert any("HTTP 500" in r.message and "retrying in" in r.message for r in log.records)


def test_finished_files_are_skipped(argv, server, tmp_path, log):
    root = tmp_path / "ml-share"
    assert prepare.main(argv()) == 0
    image = root / "dogs" / next(iter(IMAGES))
    before = image.stat().st_mtime_ns
    server.seen.clear()
    log.clear()
    assert prepare.main(argv()) == 0
    assert not [s for s in server.seen if s.method == "GET"]  # only HEADs for the sizes
    report = status(root)
    assert report["counts"] == {"done": 0, "skipped": 6, "failed": 0}
    skips = [r.message for r in log.records if r.message.startswith("skip")]
    assert len(skips) == 6 and any(m.startswith("skip extraction") for m in skips)
    assert image.stat().st_mtime_ns == before


def test_known_checksums_skip_without_asking_the_server(argv, server, tmp_path):
    checksums = tmp_path / "checksums.json"
    checksums.write_text(json.dumps({"taxi/yellow_tripdata_2019-01.csv": {"size": len(FILES[JAN]),
                                                                          "sha256": sha(FILES[JAN])}}))
    assert prepare.main(argv("--only", "taxi", "--checksums", str(checksums))) == 0
    server.seen.clear()
    assert prepare.main(argv("--only", "taxi", "--checksums", str(checksums))) == 0
    assert [(s.method, s.path) for s in server.seen] == [("HEAD", FEB)]


def test_a_changed_file_is_fetched_again(argv, server, tmp_path):
    root = tmp_path / "ml-share"
    assert prepare.main(argv("--only", "dogs")) == 0
    new_images = dict(IMAGES, **{"Images/n02085936-Maltese_dog/n02085936_1.jpg": b"\xff\xd8new"})
    server.files["/dogs/images.tar"] = make_tar(new_images)
    assert prepare.main(argv("--only", "dogs")) == 0
    assert (root / "dogs/Images/n02085936-Maltese_dog/n02085936_1.jpg").read_bytes() == b"\xff\xd8new"
    marker = json.loads((root / "dogs/.images.complete").read_text())
    assert marker["sha256"] == sha(server.files["/dogs/images.tar"]) and marker["files"] == 4


def test_checksum_mismatch_is_retried_then_reported_and_the_rest_completes(argv, server, tmp_path, log):
    root = tmp_path / "ml-share"
    checksums = tmp_path / "checksums.json"
    checksums.write_text(json.dumps({"taxi/yellow_tripdata_2019-01.csv": {"sha256": "0" * 64}}))
    assert prepare.main(argv("--checksums", str(checksums), "--retries", "3")) == 1
    assert len(server.gets(JAN)) == 3
    assert not (root / "taxi/yellow_tripdata_2019-01.csv").exists()
    assert not (root / "taxi/yellow_tripdata_2019-01.csv.part").exists()
    assert (root / "taxi/yellow_tripdata_2019-02.csv").read_bytes() == FILES[FEB]
    assert (root / "models/resnet50-0676ba61.pth").exists() and (root / "dogs/Images").is_dir()
    failed = [f for f in status(root)["files"] if f["status"] == "failed"]
    assert [f["dest"] for f in failed] == ["taxi/yellow_tripdata_2019-01.csv"]
    errors = [r.message for r in log.records if r.levelno == logging.ERROR]
    assert any(server.url(JAN) in m and str(root / "taxi/yellow_tripdata_2019-01.csv") in m
               and "sha256" in m for m in errors)
    assert any(r.message.startswith("summary: 5 done, 0 skipped, 1 failed") for r in log.records)


def test_a_server_that_ignores_range_restarts_from_zero(argv, server, tmp_path, log):
    part = tmp_path / "ml-share/models/resnet50-0676ba61.pth.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"stale bytes from another file")
    keep_validator(part, FILES[WEIGHTS])
    server.ignore_range.add(WEIGHTS)
    assert prepare.main(argv("--only", "weights")) == 0
    assert server.gets(WEIGHTS)[0].range == "bytes=29-"
    assert sha((part.parent / "resnet50-0676ba61.pth").read_bytes()) == sha(FILES[WEIGHTS])
    assert any("ignored Range" in r.message for r in log.records)


def test_a_complete_part_answered_416_is_verified_and_kept(argv, server, tmp_path):
    part = tmp_path / "ml-share/models/resnet50-0676ba61.pth.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(FILES[WEIGHTS])
    keep_validator(part, FILES[WEIGHTS])
    assert prepare.main(argv("--only", "weights")) == 0
    assert [g.range for g in server.gets(WEIGHTS)] == [f"bytes={len(FILES[WEIGHTS])}-"]
    assert (part.parent / "resnet50-0676ba61.pth").read_bytes() == FILES[WEIGHTS]


@pytest.mark.parametrize("evil", ["../escape.jpg", "Images/../../escape.jpg", "/tmp/escape.jpg", "link"])
def test_an_unsafe_archive_is_refused(argv, server, tmp_path, log, evil):
    links = {"Images/n02085620-Chihuahua/link.jpg": "/etc/passwd"} if evil == "link" else None
    members = dict(IMAGES) if links else dict(IMAGES, **{evil: b"gotcha"})
    server.files["/dogs/images.tar"] = make_tar(members, links)
    root = tmp_path / "ml-share"
    assert prepare.main(argv("--only", "dogs,labels")) == 1
    assert not (root / "dogs/Images").exists() and not (root / "dogs/.images.complete").exists()
    assert not list(tmp_path.rglob("escape.jpg")) and not list((root / "dogs").glob(".Images.tmp-*"))
    assert (root / "dogs/imagenet1000_clsidx_to_labels.txt").exists()
    assert any("refused" in r.message and ("'..'" in r.message or "link" in r.message) for r in log.records)


def test_dry_run_fetches_nothing(argv, server, tmp_path, capsys):
    assert prepare.main(argv("--dry-run")) == 0
    assert server.seen == [] and not (tmp_path / "ml-share").exists()
    out = capsys.readouterr().out
    assert f"{server.url(JAN)} -> {tmp_path / 'ml-share/taxi/yellow_tripdata_2019-01.csv'}" in out
    assert "dry run: 5 file(s)" in out


def test_a_benchmarks_declared_file_is_fetched_with_file(argv, server, tmp_path):
    """A benchmark with no option of its own here (its files declared in its DATA) has
    them fetched by ``--file DEST=URL``: this file needs no change for it."""
    from workloads.runs.benchmarks import Source

    declared = Source("numbers", "numbers/weights.pth", "a file of a benchmark the downloader does not know")
    code = prepare.main(argv("--only", "files", "--file", f"{declared.destination}={server.url(WEIGHTS)}"))
    assert code == 0
    assert (tmp_path / "ml-share" / declared.destination).read_bytes() == FILES[WEIGHTS]
    assert [f["dest"] for f in status(tmp_path / "ml-share")["files"]] == [declared.destination]


@pytest.mark.parametrize("dest", ["../outside", "/etc/x", "a//b", ""])
def test_a_file_outside_the_root_is_refused(argv, server, capsys, dest):
    with pytest.raises(SystemExit) as exit_:
        prepare.main(argv("--file", f"{dest}={server.url(WEIGHTS)}"))
    assert exit_.value.code == 2 and "--file: expected DEST=URL" in capsys.readouterr().err


def test_credentials_are_sent_but_never_logged(argv, server, tmp_path, log, capsys):
    url = server.url(WEIGHTS).replace("http://", "http://alice:s3cret@") + "?token=t0ps3cret&x=1"
    assert prepare.main(argv("--only", "weights", weights=url)) == 0
    assert server.gets(WEIGHTS)[0].authorization == basic("alice", "s3cret")
    assert prepare.main(argv("--only", "weights", "--dry-run", weights=url)) == 0
    shown = log.text + capsys.readouterr().out + (tmp_path / "ml-share/.prepare-status.json").read_text()
    assert "alice:***@" in shown and "token=***&x=1" in shown
    assert "s3cret" not in shown and "t0ps3cret" not in shown


@pytest.mark.parametrize("url, shown", [
    ("https://u:p%40ss@h.example/a.pth", "https://u:***@h.example/a.pth"),
    ("https://ghp_token@h.example/a.pth", "https://***@h.example/a.pth"),
    ("https://h.example/a.pth?X-Amz-Signature=abc&v=2", "https://h.example/a.pth?X-Amz-Signature=***&v=2"),
    ("http://h.example/t_{month}.csv", "http://h.example/t_{month}.csv"),
])
def test_redact(url, shown):
    assert prepare.redact(url) == shown


def test_a_missing_file_fails_fast_without_retries(argv, server, tmp_path):
    assert prepare.main(argv("--only", "taxi", months="2019-01,2019-03")) == 1
    assert len([s for s in server.seen if s.path.endswith("2019-03.csv")]) == 1
    entry = next(f for f in status(tmp_path / "ml-share")["files"] if f["status"] == "failed")
    assert "HTTP 404" in entry["error"] and entry["attempts"] == 1


@pytest.mark.parametrize("extra, message", [
    (("--months", "more", "more/{month}{.csv}", "http://x/y_{month}.csv", "2019-13"), "--months more"),
    (("--only", "dogs,cats"), "--only"),
    (("--retries", "0"), "--retries"),
    (("--months", "more", "more/{month}{.csv|.parquet}", "http://x/y_{month}.json", "2019-01"), "--months more"),
    # urlopen reads file: URLs too: the Job must not copy a file of its own pod into the share
    (("--file", "notes/passwd=file:///etc/passwd"), "only http and https URLs are fetched"),
])
def test_bad_usage_names_the_flag(argv, capsys, extra, message):
    with pytest.raises(SystemExit) as exit_:
        prepare.main(argv(*extra))
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def _run(python: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "PYTHONPATH"}
    return subprocess.run([python, *args], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_runs_as_a_module(argv, tmp_path):
    module = _run(sys.executable, ["-m", "workloads.prepare", *argv("--only", "labels", root=tmp_path / "a")], REPO)
    assert module.returncode == 0, module.stdout + module.stderr
    assert (tmp_path / "a/dogs/imagenet1000_clsidx_to_labels.txt").exists()


# The Job's image is python:3.12-slim; the paper's images ran 3.8: use them where installed.
@pytest.mark.parametrize("python", ["this", "python3.8", "python3.12"])
def test_runs_as_a_lone_file(argv, tmp_path, python):
    interpreter = sys.executable if python == "this" else shutil.which(python)
    if interpreter is None or subprocess.run([interpreter, "-c", "pass"], check=False, capture_output=True).returncode:
        pytest.skip(f"{python} is not installed (or does not start)")
    lone = tmp_path / "opt" / "prepare.py"  # as the ConfigMap mounts it: nothing else around
    lone.parent.mkdir()
    shutil.copy(SOURCE, lone)
    plain = _run(interpreter, ["-I", "-S", str(lone), *argv("--only", "dogs,weights,taxi")], tmp_path)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "summary: 5 done, 0 skipped, 0 failed" in plain.stdout
    assert (tmp_path / "ml-share/models/resnet50-0676ba61.pth").read_bytes() == FILES[WEIGHTS]
    assert (tmp_path / "ml-share/dogs" / next(iter(IMAGES))).exists()


def test_source_is_standard_library_python_3_8():
    tree = ast.parse(SOURCE.read_text(), feature_version=(3, 8))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    for newer in ("removeprefix", "removesuffix", "file_digest", "BooleanOptionalAction"):
        assert newer not in SOURCE.read_text(), newer
