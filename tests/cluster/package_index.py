"""A package index (PEP 503 simple API) for the real node's pods, serving the prepared
environment's CPU wheels from the test cache (scripts/fetch_worker_wheels.py fetched and
verified them), with an access log: each request's time, client address, path and bytes sent.

It listens on the host's end of the cluster's link (``ClusterNetwork.host_ip``), which the
pods reach through the bridge and nothing outside the machine can reach.
"""
from __future__ import annotations

import html
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# What PyPI answers (pypi.org/simple pages and files.pythonhosted.org files), so that pip's HTTP
# cache (the pip-cache claim of the image way) keeps what it would keep from PyPI
PAGE_CACHE = "max-age=600, public"
FILE_CACHE = "max-age=365000000, immutable, public"


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_project(filename: str) -> str:
    return normal(filename.split("-", 1)[0])


@dataclass
class Request:
    at: float  # time.time()
    client: str
    path: str
    status: int
    bytes: int


@dataclass
class PackageIndex:
    wheels: Path
    hashes: dict[str, str]  # {wheel file name: sha256}
    host: str
    port: int = 0
    log: list[Request] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/simple"

    def pages(self) -> dict[str, bytes]:
        projects: dict[str, list[str]] = {}
        for name in self.hashes:
            projects.setdefault(wheel_project(name), []).append(name)
        out = {"/simple/": "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects)).encode()}
        for project, files in projects.items():
            links = "".join(f'<a href="/files/{html.escape(f)}#sha256={self.hashes[f]}">{html.escape(f)}</a>\n'
                            for f in sorted(files))
            out[f"/simple/{project}/"] = f"<!DOCTYPE html><html><body>\n{links}</body></html>\n".encode()
        return out

    def start(self) -> PackageIndex:
        pages, wheels, log, lock = self.pages(), self.wheels, self.log, threading.Lock()
        allowed = set(self.hashes)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?", 1)[0].split("#", 1)[0]
                if path.startswith("/simple/") and not path.endswith("/"):
                    path += "/"
                body, status, kind, cache = pages.get(path), 200, "text/html", PAGE_CACHE
                if body is None and path.startswith("/files/") and path[7:] in allowed:
                    body, kind, cache = (wheels / path[7:]).read_bytes(), "application/octet-stream", FILE_CACHE
                if body is None:
                    body, status, cache = b"not here\n", 404, "no-store"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Cache-Control", cache)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with lock:
                    log.append(Request(time.time(), self.client_address[0], path, status, len(body)))

            def log_message(self, *args):
                """Silent: each request goes to the index's own log above, not to stderr."""

        self._server = ThreadingHTTPServer((self.host, self.port), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def requests(self, client: str | None = None, since: float = 0.0, until: float = float("inf")) -> list[Request]:
        return [r for r in self.log if (client is None or r.client == client) and since <= r.at <= until]

    def dump(self, path: Path) -> None:
        path.write_text("".join(json.dumps(r.__dict__) + "\n" for r in self.log))
