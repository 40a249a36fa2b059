"""Fixtures for the downloader's tests: the local server, its files, a command line."""
from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

import pytest

from .server import FILES, Server, handler


@pytest.fixture
def server():
    state = Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler(state))
    httpd.daemon_threads = True
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def files(server) -> dict[str, bytes]:
    server.files.update(FILES)
    return server.files


@pytest.fixture
def argv(server, files, tmp_path):
    """A full command line against the test server (the paper's two benchmarks' items, as
    their dataset.json declare them), with short timeouts and backoff; a keyword replaces an
    item's URL (``weights=``, ``taxi=`` the month template) or the months (``months=``)."""
    def build(*extra: str, root=None, **replace: str) -> list[str]:
        url = {"dogs": server.url("/dogs/images.tar"),
               "labels": server.url("/labels/imagenet1000_clsidx_to_labels.txt"),
               "weights": server.url("/models/resnet50-0676ba61.pth"),
               "taxi": server.url("/trip-data/yellow_tripdata_{month}.csv"), "months": "2019-01,2019-02", **replace}
        return ["--root", str(root or tmp_path / "ml-share"),
                "--fetch", "dogs", "dogs/images.tar", url["dogs"],
                "--extract", "dogs", "dogs/Images", "dogs/.images.complete",
                "--fetch", "labels", "dogs/imagenet1000_clsidx_to_labels.txt", url["labels"],
                "--fetch", "weights", "models/{file}", url["weights"],
                "--months", "taxi", "taxi/yellow_tripdata_{month}{.csv|.parquet}", url["taxi"], url["months"],
                "--timeout", "5", "--backoff-seconds", "0.01", "--progress-mb", "0.05", *extra]
    return build


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    """urllib honours *_proxy variables: 127.0.0.1 must be reached directly."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
