"""Starting govmomi's vcsim for the vCenter-facing tests: the build (``scripts/build_vcsim.sh``, a
no-op when the cached binary is current), a process on a free 127.0.0.1 port with a TLS
certificate and an enforced login, and the software packages its hosts report (software.go).
Imported by tests/vcenter/conftest.py's session fixture and by tests that need hosts of their own.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from components.vsphere.providers.session import VCenterConnection
from tests.kube.processes import terminate
from workloads.core.config import cache_dir

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "build_vcsim.sh"
CACHE = cache_dir() / "vcsim"


@dataclass(frozen=True)
class Vcsim:
    """A running simulator: where it listens and how to log in."""

    host: str
    port: int
    user: str
    password: str = field(repr=False)
    cert_file: str
    key_file: str

    @property
    def ca_pem(self) -> str:
        return Path(self.cert_file).read_text()

    def connection(self, **overrides) -> VCenterConnection:
        values: dict[str, Any] = dict(server=self.host, user=self.user, password=self.password, ca_pem=self.ca_pem,
                                      port=self.port)
        values.update(overrides)
        return VCenterConnection(**values)

    def props(self, **overrides) -> dict:
        """Connection properties as a dynamic provider receives them."""
        return {**self.connection().props(), **overrides}


def _build() -> Path:
    try:
        proc = subprocess.run(["bash", str(BUILD_SCRIPT)], check=False, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.fail("scripts/build_vcsim.sh did not finish within 15 minutes")
    if proc.returncode != 0:
        pytest.fail(
            f"scripts/build_vcsim.sh failed (exit {proc.returncode}); vcsim is needed for these tests:\n"
            f"{(proc.stdout + proc.stderr)[-3000:]}"
        )
    binary = Path(proc.stdout.strip().splitlines()[-1])
    if not os.access(binary, os.X_OK):
        pytest.fail(f"scripts/build_vcsim.sh reported {binary}, which is not an executable")
    return binary


# The NVIDIA vGPU Manager VIB every simulated host holds by default: vGPU 19.5's, the release the
# current defaults' guest driver pairs with (components/vsphere/providers/vgpu_manager.py).
VGPU_19_5_MANAGER = {"name": "NVD-AIE_ESXi_8.0.0_Driver", "version": "580.159.01-1OEM.800.1.0.20613240",
                     "vendor": "NVIDIA", "summary": "NVIDIA AI Enterprise vGPU driver for VMWare ESX-8.0.0"}
DEFAULT_PACKAGES = {"*": [VGPU_19_5_MANAGER]}


@contextmanager
def running_vcsim(folder: Path, host_packages: dict | None = None):
    """A vcsim process on a free loopback port (``host_packages``: software.go's -host-packages)."""
    binary = _build()
    log = (folder / "stderr.log").open("w+")
    user = "administrator@vsphere.local"
    password = "Vc$im-" + secrets.token_urlsafe(12) + "!"
    cert, key = CACHE / "cert.pem", CACHE / "key.pem"
    proc = subprocess.Popen(
        [str(binary), "-listen", "127.0.0.1:0", "-cert", str(cert), "-key", str(key), "-username", user,
         "-password", password, "-host-packages",
         json.dumps(DEFAULT_PACKAGES if host_packages is None else host_packages)],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    assert proc.stdout is not None  # stdout=PIPE
    try:
        selector = selectors.DefaultSelector()
        selector.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + 30
        line = ""
        while not line and time.monotonic() < deadline and proc.poll() is None:
            if selector.select(timeout=0.5):
                line = proc.stdout.readline()
        if not line:
            proc.kill()
            log.seek(0)
            pytest.fail(f"vcsim did not report its URL within 30 s: {log.read()[-2000:]}")
        info = json.loads(line)
        yield Vcsim(
            host=info["host"],
            port=int(info["port"]),
            user=user,
            password=password,
            cert_file=str(cert),
            key_file=str(key),
        )
    finally:
        if proc.poll() is None:
            terminate(proc)
        proc.stdout.close()
        log.close()
