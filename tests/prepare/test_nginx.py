"""The data Job's downloader against a real HTTP server: Debian's nginx on 127.0.0.1.

What nginx 1.22.1 does, from its source (``src/http/modules/ngx_http_range_filter_module.c``,
``ngx_http_range_header_filter``), as RFC 7233 3.2 specifies ``If-Range``:
a ``Range`` request with an ``If-Range`` that ends in ``"`` is answered 206 only when that
value equals the response's ETag byte for byte, one with a date only when it equals the
file's Last-Modified time; otherwise the Range is ignored and the whole current file comes
with 200. A plain ``Range`` request (no If-Range) always gets 206 with the current file's
bytes, whatever the client already holds: how the old downloader stitched two versions.
nginx's ETag is ``"<mtime hex>-<size hex>"`` (``ngx_http_set_etag``), so a file rewritten
with the same size but another mtime has another ETag.

Each test interrupts a transfer (nginx sending slowly, the downloader sent SIGINT or
SIGTERM as Ctrl-C or a deleted Job's pod would), then resumes it, with or without the file
changed on the server in between, and compares the result with the server's file."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workloads import prepare

from . import nginx as real_nginx

REPO = Path(__file__).resolve().parents[2]
WEIGHTS = "/models/resnet50-0676ba61.pth"
SIZE = 3 << 20  # 3 blocks of the downloader: one lands on disk, then the interruption


def content(seed: str) -> bytes:
    block, out = hashlib.sha256(seed.encode()).digest(), bytearray()
    while len(out) < SIZE:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:SIZE])


def put(root: Path, data: bytes, age_s: int) -> Path:
    """The server's file, last modified ``age_s`` ago (an hour-old file has a strong
    Last-Modified: RFC 7232 2.2.2 wants it 60 s before the response's Date)."""
    path = root / WEIGHTS.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


@pytest.fixture(params=["etag", "last-modified"])
def server(request, tmp_path):
    """nginx with ETags on (the default) or off (Last-Modified the only validator)."""
    started = real_nginx.start(tmp_path / "www", tmp_path / "nginx", etag=request.param == "etag")
    started.validator = request.param
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def args(server, root: Path) -> list[str]:
    return ["--root", str(root), "--fetch", "weights", "models/{file}", server.url(WEIGHTS), "--only", "weights",
            "--timeout", "10", "--backoff-seconds", "0.01", "--progress-mb", "1"]


def interrupt(server, root: Path, signal_name: str) -> tuple[subprocess.CompletedProcess, int]:
    """Start the downloader as the Job does (its own process), stop it with ``signal_name``
    once a block is on disk; its exit and the partial file's size."""
    part = root / (WEIGHTS.lstrip("/") + ".part")
    server.slow(True)
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    process = subprocess.Popen([sys.executable, "-m", "workloads.prepare", *args(server, root)], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (part.exists() and part.stat().st_size >= 1 << 20):
        assert process.poll() is None and time.monotonic() < deadline, "the transfer never got under way"
        time.sleep(0.02)
    process.send_signal(getattr(signal, signal_name))
    stdout, stderr = process.communicate(timeout=30)
    server.slow(False)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), part.stat().st_size


def validator_header(server) -> str:
    """What nginx says identifies the file now: its ETag, or its Last-Modified."""
    import urllib.request

    with urllib.request.urlopen(urllib.request.Request(server.url(WEIGHTS), method="HEAD"), timeout=5) as response:
        return response.headers["ETag" if server.validator == "etag" else "Last-Modified"]


@pytest.mark.parametrize("signal_name, exit_code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupted_download_ends_with_one_line_and_resumes_byte_identical(server, tmp_path, signal_name,
                                                                                exit_code, caplog):
    root = tmp_path / "ml-share"
    served = put(server.root, content("v1"), age_s=3600)
    stopped, kept = interrupt(server, root, signal_name)

    assert stopped.returncode == exit_code, stopped.stderr
    assert "Traceback" not in stopped.stderr
    part = root / (WEIGHTS.lstrip("/") + ".part")
    assert stopped.stderr.strip().splitlines()[-1] == (
        f"prepare: interrupted ({signal_name}); models/resnet50-0676ba61.pth left partial: "
        f"{kept} bytes in {part} (the next run resumes it)")
    kept_validator = json.loads((root / "models/resnet50-0676ba61.pth.part.validator").read_text())
    assert kept_validator[server.validator.replace("-", "_")] == validator_header(server)
    assert part.read_bytes() == served.read_bytes()[:kept]

    caplog.set_level(logging.INFO, logger="dask_tkg.prepare")
    assert prepare.main(args(server, root)) == 0
    assert (root / WEIGHTS.lstrip("/")).read_bytes() == served.read_bytes()
    resumed = server.requests(WEIGHTS)[-1]
    assert (resumed.range, resumed.if_range, resumed.status) == (f"bytes={kept}-", validator_header(server), 206)
    assert resumed.body_bytes == SIZE - kept  # only the rest came over the wire
    assert not part.exists() and not list(root.rglob("*.validator"))


def test_a_file_changed_on_the_server_is_fetched_again_not_stitched(server, tmp_path, caplog):
    root = tmp_path / "ml-share"
    put(server.root, content("v1"), age_s=3600)
    before = validator_header(server)
    _, kept = interrupt(server, root, "SIGINT")
    changed = put(server.root, content("v2"), age_s=1800)  # same size, another mtime: another validator
    assert validator_header(server) != before

    caplog.set_level(logging.INFO, logger="dask_tkg.prepare")
    assert prepare.main(args(server, root)) == 0
    fetched = (root / WEIGHTS.lstrip("/")).read_bytes()
    assert fetched == changed.read_bytes(), "bytes of two versions were stitched together"
    resumed = server.requests(WEIGHTS)[-1]
    assert (resumed.range, resumed.if_range, resumed.status) == (f"bytes={kept}-", before, 200)
    assert resumed.body_bytes == SIZE  # nginx sent the whole new file
    warned = [r.getMessage() for r in caplog.records if "changed on the server" in r.getMessage()]
    assert len(warned) == 1 and re.search(rf"{kept}-byte partial download \(If-Range .+\).*HTTP 200, starting over",
                                          warned[0])
    entry = json.loads((root / ".prepare-status.json").read_text())["files"][0]
    assert entry["status"] == "done" and entry["sha256"] == hashlib.sha256(changed.read_bytes()).hexdigest()
