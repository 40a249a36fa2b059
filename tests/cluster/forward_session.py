"""``python -m tests.cluster.forward_session OUTPUTS`` : the runner's session against stack
outputs whose scheduler is a ClusterIP Service, as a data scientist's machine runs it.

Run by tests/cluster/test_port_forward.py in a mount namespace whose resolv.conf names only
127.0.0.1 (the in-cluster name's lookup stays on loopback). Prints one JSON line per step:
``connected`` (address dialled, forward, dashboard answer, workers, a computation), then,
after a line on stdin (the test deleted the scheduler pod), ``after`` (what dropped and how
soon, the forward reopened to the new pod, a new client's computation there), then ``closed``
(whether the local ports still accept once the session is closed).
"""
from __future__ import annotations

import http.client
import json
import socket
import ssl
import sys
import time
import urllib.parse

from distributed import Client

from workloads.cluster import endpoint
from workloads.cluster.session import ClusterSession
from workloads.core.errors import EndpointError

DROP_WITHIN_S = 60.0
NEW_SCHEDULER_WITHIN_S = 180.0


def say(event: str, **facts) -> None:
    print(json.dumps({"event": event, **facts}), flush=True)


def accepts(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def dashboard_answer(session: ClusterSession) -> int:
    """The dashboard's answer through the forward, as a browser that trusts the stack's CA gets
    it: https with the scheduler's certificate (the Helm backend), whose name is the scheduler's
    in the outputs, not the forward's 127.0.0.1."""
    url = urllib.parse.urlsplit(session.dashboard())
    host = url.hostname
    assert host is not None, url
    if url.scheme == "http":
        connection = http.client.HTTPConnection(host, url.port, timeout=30)
    else:
        ca = session.security().tls_ca_file
        context = ssl.create_default_context(**({"cadata": ca} if "-----BEGIN" in ca else {"cafile": ca}))
        connection = http.client.HTTPSConnection(host, url.port, timeout=30, context=context)
        connection.sock = context.wrap_socket(socket.create_connection((host, url.port), timeout=30),
                                              server_hostname=session.security().server_hostname)
    try:
        connection.request("GET", url.path or "/")
        return connection.getresponse().status
    finally:
        connection.close()


def connected(session: ClusterSession, workers: int) -> None:
    client = session.connect()
    found = session.wait(workers, timeout=60)
    answer = dashboard_answer(session)
    say("connected", address=client.scheduler.address, forward=session.forward.describe() if session.forward else None,
        pod=session.forward.target.pod if session.forward and session.forward.target else None,
        dashboard=session.dashboard(),
        dashboard_status=answer, workers=found, total=client.submit(sum, [1, 2, 3]).result(timeout=30))


def after_deletion(session: ClusterSession, drops: list[tuple[float, str]], deleted_at: float, workers: int) -> None:
    forward = session.forward
    assert forward is not None, "the session reaches the scheduler through a forward"
    deadline = deleted_at + DROP_WITHIN_S
    while not drops and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        forward.check()
        check = None
    except EndpointError as exc:
        check = str(exc)
    facts = {"drops": forward.drops, "told": [why for _, why in drops], "check": check,
             "seconds_to_drop": round(drops[0][0] - deleted_at, 1) if drops else None}
    total, error = None, None
    while total is None and time.monotonic() < deleted_at + NEW_SCHEDULER_WITHIN_S:
        try:  # a new client through the same local address: forwarded to the new scheduler pod
            forwarded = session.forwarded
            assert forwarded is not None, "the session reaches the scheduler through a forward"
            with Client(forwarded.scheduler_address, security=session.security(), timeout=30) as client:
                client.wait_for_workers(workers, timeout=NEW_SCHEDULER_WITHIN_S)
                total, error = client.submit(sum, [4, 5, 6]).result(timeout=30), None
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            time.sleep(2)
    say("after", **facts, reopened=forward.reopened, pod=forward.target.pod if forward.target else None,
        total=total, error=error,
        seconds_to_new_scheduler=round(time.monotonic() - deleted_at, 1))


def main(outputs_file: str, workers: int) -> None:
    where = endpoint.read_outputs_file(outputs_file)
    drops: list[tuple[float, str]] = []
    session = ClusterSession(where, echo=lambda text, error=False: print(text, file=sys.stderr, flush=True))
    session.on_forward_drop = lambda why: drops.append((time.monotonic(), why))
    with session:
        connected(session, workers)
        sys.stdin.readline()  # the test deleted the scheduler pod
        after_deletion(session, drops, time.monotonic(), workers)
        forward = session.forward
        assert forward is not None, "the session reaches the scheduler through a forward"
        local = [forward.address(p) for p in forward.service_ports]
    say("closed", accepting=[a for a in local if accepts(a)])


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
