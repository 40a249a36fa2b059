"""Child processes of the stand-ins (etcd, kube-apiserver, the real node's components): each in
its own process group, given SIGTERM when pytest dies, with its output in a log file; free
loopback ports; waiting until an HTTP endpoint answers."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (another process may take it before it is bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` of a log, or "(no log)" when there is none to read."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def die_with_parent() -> list[str]:
    """The command prefix that gives the child SIGTERM when pytest dies (PR_SET_PDEATHSIG,
    kept across exec), through util-linux's ``setpriv`` (Essential in Debian).

    Not a ``preexec_fn``: with one, Python forks instead of vforking and, in the child before
    exec, runs Python code and the at-fork handlers of every library this process has loaded
    (BLAS and torch thread pools, the in-process Dask clusters of earlier tests), which the
    ``subprocess`` documentation warns can deadlock in a process with threads; a render test
    once waited 900 s in this fixture's setup after the Dask tests had run."""
    setpriv = shutil.which("setpriv") if sys.platform == "linux" else None
    return [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []


class Process:
    """A child started in its own process group, so stopping it also stops its children.

    It also gets SIGTERM if the pytest process dies without tearing down (Linux).
    """

    def __init__(self, name: str, args: list[str], log: Path, cwd: Path):
        self.name = name
        self.log = log
        self._log_file = log.open("wb")
        self.proc = subprocess.Popen([*die_with_parent(), *args], cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=self._log_file, stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        pgid = self.proc.pid  # start_new_session: the child leads its own group
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=wait_s)
                # the leader is gone; make sure nothing else of its group lingers
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
                break
            except subprocess.TimeoutExpired:
                continue
        self._log_file.close()

    def tail(self, lines: int = 30) -> str:
        self._log_file.flush()
        return log_tail(self.log, lines)


def wait_http(url: str, ok: Callable[[int, bytes], bool], deadline: float, procs: list[Process], what: str,
              context: ssl.SSLContext | None = None, headers: dict | None = None, timeout_s: float = 60.0) -> bytes:
    """GET ``url`` until ``ok(status, body)``; fail at once when one of ``procs`` exits, and with
    their logs' tails at ``deadline`` (``timeout_s``, the time it stands for, names it)."""
    last = ""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),  # never via a proxy
                                         urllib.request.HTTPSHandler(context=context))
    while True:
        for p in procs:
            if not p.alive():
                raise RuntimeError(f"{p.name} exited with {p.proc.returncode} while waiting for {what}:\n{p.tail()}")
        try:
            req = urllib.request.Request(url, headers=headers or {})
            with opener.open(req, timeout=2) as resp:
                body = resp.read()
                if ok(resp.status, body):
                    return body
                last = f"HTTP {resp.status}: {body[:300]!r}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read()[:500]!r}"
        except (OSError, ValueError) as exc:
            last = repr(exc)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout_s:.0f} s (last: {last})\n"
                               + "\n".join(f"--- {p.name} ---\n{p.tail()}" for p in procs))
        time.sleep(0.1)


def terminate(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL when it has not exited after ``grace_s``; returns once it is reaped."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
