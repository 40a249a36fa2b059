"""A local FAKE of the Supervisor's ``/wcp/login`` endpoint (no simulator serves it): it answers
like the Supervisor, basic auth in, ``{"session_id": ...}`` out, over TLS with a self-signed
certificate for 127.0.0.1."""
from __future__ import annotations

import base64
import contextlib
import http.server
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.kube.pki import self_signed_pem

USER, PASSWORD = "devops@vsphere.local", "pw-Do-Not-Leak"
SESSION_ID = "token-abc"


class FakeWcpLogin(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if self.path != "/wcp/login":
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Authorization") != expected:
            self.send_response(401)
            self.end_headers()
            return
        body = json.dumps({"session_id": SESSION_ID}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        """Say nothing per request: a failing test shows its own assertion, not the server's log."""


@contextlib.contextmanager
def serve_fake_wcp(folder: Path) -> Iterator[tuple[str, str]]:
    """Serve the fake on a free port of 127.0.0.1; yields its ``host:port`` and its certificate (PEM)."""
    cert, key = self_signed_pem(folder, "127.0.0.1", ip_san="127.0.0.1")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeWcpLogin)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", cert.read_text()
    finally:
        server.shutdown()
