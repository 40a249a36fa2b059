"""A threaded HTTP server on 127.0.0.1 serving small generated files, with faults on demand.

The server supports HEAD and ``Range: bytes=<n>-`` (206, or 416 past the end), sends an
ETag and a Last-Modified and honours ``If-Range`` the way nginx 1.22.1 does
(``src/http/modules/ngx_http_range_filter_module.c``, ``ngx_http_range_header_filter``: a
value ending in ``"`` must equal the ETag byte for byte, any other must parse to the
Last-Modified time; otherwise the Range is ignored and the whole file sent with 200),
records every request, and can be told per path to cut a body after N bytes, answer 500
once, or ignore Range (``Server.fault``). Faults are one-shot except ``ignore_range``.
The downloader's behaviour against the real nginx is tested in ``test_nginx.py``; this
server is for the faults nginx cannot be told to make.
"""
from __future__ import annotations

import base64
import email.utils
import hashlib
import io
import tarfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler


@dataclass
class Seen:
    method: str
    path: str
    range: str | None
    authorization: str | None
    if_range: str | None = None


@dataclass
class Server:
    files: dict[str, bytes] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    faults: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    ignore_range: set[str] = field(default_factory=set)
    base: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return self.base + path

    def fault(self, path: str, kind: str, arg: int = 0) -> None:
        """Queue a one-shot fault for ``path``: ``cut`` after ``arg`` bytes, or ``500``."""
        self.faults.setdefault(path, []).append((kind, arg))

    def gets(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.method == "GET" and s.path == path]


def handler(server: Server):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep pytest output clean
            pass

        def do_HEAD(self):
            self._serve(body=False)

        def do_GET(self):
            self._serve(body=True)

        def _serve(self, body: bool) -> None:
            path = self.path.split("?", 1)[0]
            with server.lock:
                server.seen.append(Seen(self.command, path, self.headers.get("Range"),
                                        self.headers.get("Authorization"), self.headers.get("If-Range")))
                queue = server.faults.get(path) or []
                fault = queue.pop(0) if (queue and body) else (None, 0)
            self.close_connection = True
            data = server.files.get(path)
            if data is None or fault[0] == "500":
                self.send_response(404 if data is None else 500)
                self.send_header("Content-Length", "0")
                self.send_header("Connection", "close")
                self.end_headers()
                return
            status, start = 200, 0
            wanted = self.headers.get("Range")
            if wanted and not _if_range_holds(self.headers.get("If-Range"), data):
                wanted = None  # nginx: "goto next_filter", the whole file with 200
            if wanted and path not in server.ignore_range:
                start = int(wanted.split("=", 1)[1].split("-", 1)[0])
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    return
                status = 206
            self.send_response(status)
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", etag(data))
            self.send_header("Last-Modified", LAST_MODIFIED)
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("Connection", "close")
            self.end_headers()
            if body:
                payload = data[start:]
                if fault[0] == "cut":
                    payload = payload[:fault[1]]
                self.wfile.write(payload)
                self.wfile.flush()

    return Handler


LAST_MODIFIED = "Sun, 01 Nov 2026 10:00:00 GMT"  # long before any Date: a strong validator


def etag(data: bytes) -> str:
    return f'"{hashlib.sha256(data).hexdigest()[:16]}"'


def _if_range_holds(value: str | None, data: bytes) -> bool:
    if value is None:
        return True
    if value.endswith('"'):
        return value == etag(data)
    try:
        return email.utils.parsedate_to_datetime(value) == email.utils.parsedate_to_datetime(LAST_MODIFIED)
    except (TypeError, ValueError):
        return False


def make_tar(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buffer.getvalue()


def _bytes(seed: str, size: int) -> bytes:
    out, block = bytearray(), hashlib.sha256(seed.encode()).digest()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:size])


IMAGES = {
    "Images/n02085620-Chihuahua/n02085620_10074.jpg": b"\xff\xd8\xff\xe0" + _bytes("a", 3000),
    "Images/n02085620-Chihuahua/n02085620_10131.jpg": b"\xff\xd8\xff\xe0" + _bytes("b", 2000),
    "Images/n02085782-Japanese_spaniel/n02085782_1039.jpg": b"\xff\xd8\xff\xe0" + _bytes("c", 2500),
}
LABELS_TEXT = b"{0: 'tench, Tinca tinca',\n151: 'Chihuahua',\n152: 'Japanese spaniel',\n}\n"
TAXI_CSV = b"VendorID,tpep_pickup_datetime,total_amount\n" + b"1,2019-01-01 00:10:00,12.5\n" * 4000
FILES = {
    "/dogs/images.tar": make_tar(IMAGES),
    "/labels/imagenet1000_clsidx_to_labels.txt": LABELS_TEXT,
    "/models/resnet50-0676ba61.pth": b"PK\x03\x04" + _bytes("weights", 400_000),
    "/trip-data/yellow_tripdata_2019-01.csv": TAXI_CSV,
    "/trip-data/yellow_tripdata_2019-02.csv": TAXI_CSV.replace(b"2019-01-01", b"2019-02-01"),
    "/trip-data/yellow_tripdata_2019-01.parquet": b"PAR1" + _bytes("parquet-01", 150_000) + b"PAR1",
    "/trip-data/yellow_tripdata_2019-02.parquet": b"PAR1" + _bytes("parquet-02", 150_000) + b"PAR1",
}


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
