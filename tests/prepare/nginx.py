"""Debian's nginx (scripts/install_system_packages.py installs it) serving a directory on
127.0.0.1, started and stopped by the tests: the real peer of the data Job's downloader,
with its own Range, ETag, Last-Modified and If-Range handling (nginx 1.22.1,
``src/http/modules/ngx_http_range_filter_module.c``). ``slow(True)`` makes it send at
``RATE`` bytes/s (nginx's ``$limit_rate``), so a test can interrupt a transfer midway.
Its access log records, per request, the Range and If-Range it got and the status it
answered."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

RATE = 1 << 20  # bytes/s while slow: a 1 MiB block of the downloader reaches disk each second

CONFIG = """\
daemon off;
master_process off;
worker_processes 1;
pid {state}/nginx.pid;
error_log {state}/error.log info;
events {{ worker_connections 64; }}
http {{
    log_format probe escape=none '$request_method $uri|$http_range|$http_if_range|$status|$body_bytes_sent';
    access_log {state}/access.log probe;
    client_body_temp_path {state}/client_body;
    proxy_temp_path {state}/proxy;
    fastcgi_temp_path {state}/fastcgi;
    uwsgi_temp_path {state}/uwsgi;
    scgi_temp_path {state}/scgi;
    default_type application/octet-stream;
    server {{
        listen {host}:{port};
        root {root};
        etag {etag};
        location / {{
            if (-f {state}/slow) {{ set $limit_rate {rate}; }}
        }}
    }}
}}
"""


@dataclass
class Logged:
    method: str
    path: str
    range: str
    if_range: str
    status: int
    body_bytes: int


@dataclass
class Nginx:
    root: Path  # the directory it serves
    state: Path
    port: int
    process: subprocess.Popen
    host: str = "127.0.0.1"

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def slow(self, on: bool) -> None:
        flag = self.state / "slow"
        flag.touch() if on else flag.unlink(missing_ok=True)

    def requests(self, path: str) -> list[Logged]:
        """The GETs of ``path`` it logged, in order (``-`` where a header was absent)."""
        found = []
        for line in (self.state / "access.log").read_text().splitlines():
            request, range_, if_range, status, sent = line.split("|")
            method, uri = request.split(" ", 1)
            if method == "GET" and uri == path:
                found.append(Logged(method, uri, range_, if_range, int(status), int(sent)))
        return found

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if not found:
        raise RuntimeError("nginx is not installed: run scripts/install_system_packages.py (Debian's nginx)")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(root: Path, state: Path, etag: bool = True, host: str = "127.0.0.1", port: int | None = None,
          prefix: tuple[str, ...] = ()) -> Nginx:
    """nginx serving ``root`` on ``host``; ``prefix`` runs it through another command (the
    cluster tests start it inside their network namespace with ``nsenter --net=...``)."""
    state.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    config = state / "nginx.conf"
    config.write_text(CONFIG.format(state=state, host=host, port=port, root=root, etag="on" if etag else "off",
                                    rate=RATE))
    process = subprocess.Popen([*prefix, binary(), "-p", str(state), "-e", str(state / "error.log"), "-c",
                                str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"nginx exited ({process.returncode}): {stderr}")
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return Nginx(root, state, port, process, host)
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"nginx did not listen on {host}:{port} within 10 s")
