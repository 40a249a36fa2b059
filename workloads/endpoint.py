"""Where the cluster is: stack outputs, a scheduler address, or a local cluster, turned
into one frozen :class:`Endpoint`; connecting to it and waiting for workers.

Nothing here imports pulumi: stack outputs come from the pulumi CLI
(``pulumi stack output --json --show-secrets``) or from the same JSON in a file, and are
validated by :func:`contract.parse_outputs`.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlsplit, urlunsplit

from workloads.contract import ContractError, StackOutputs, parse_outputs
from workloads.exceptions import EndpointError

logger = logging.getLogger(__name__)

PROJECT_DIR = Path(__file__).resolve().parents[1]  # where Pulumi.yaml lives


@dataclass(frozen=True)
class Endpoint:
    """A cluster to run on. ``kind`` is ``local`` (the runner starts one), ``stack``,
    ``outputs`` (a file), ``address`` (``--scheduler-address``) or ``environment``
    (``DASK_SCHEDULER_ADDRESS``, as set in the deployed Jupyter)."""

    kind: str
    source: str  # for messages: "stack dev", "outputs.json", ...
    scheduler_address: str | None = None  # None for local until started
    dashboard_url: str = ""
    security: Any = None  # distributed.security.Security with TLS, else None
    data_dir: str | None = None  # dataset root as the workers see it (stack outputs)
    expected_workers: int | None = None  # what the stack deployed
    outputs: StackOutputs | None = field(default=None, repr=False, compare=False)  # the stack's, when read

    @property
    def local(self) -> bool:
        return self.kind == "local"

    def describe(self) -> str:
        where = redact(self.scheduler_address) if self.scheduler_address else "a local cluster"
        return f"{where} (from {self.source})"


def local() -> Endpoint:
    return Endpoint(kind="local", source="--local")


def from_address(address: str, kind: str = "address", source: str = "--scheduler-address") -> Endpoint:
    if "://" not in address:
        address = f"tcp://{address}"
    if not address.startswith(("tcp://", "tls://", "inproc://", "ws://", "wss://")):
        raise EndpointError(f"{source}: scheduler address must look like tcp://host:8786, got {address!r}")
    if address.startswith("tls://"):
        raise EndpointError(f"{source}: {redact(address)} needs TLS credentials: use --stack or --outputs"
                            " (the stack outputs carry the CA and client certificate)")
    return Endpoint(kind=kind, source=source, scheduler_address=address)


def from_outputs(raw: Any, source: str, kind: str = "outputs") -> Endpoint:
    """Validate stack outputs (raises ContractError naming the key) and build the endpoint,
    with a TLS ``Security`` when the scheduler uses TLS."""
    outputs = parse_outputs(raw, source)
    security = security_from_outputs(outputs) if outputs.tls else None
    return Endpoint(kind=kind, source=source, scheduler_address=outputs.scheduler_address,
                    dashboard_url=outputs.dashboard_url, security=security,
                    data_dir=outputs.dataset_mount or None, expected_workers=outputs.workers, outputs=outputs)


def read_outputs_file(path: str | os.PathLike) -> Endpoint:
    """``--outputs FILE``: the JSON of ``pulumi stack output --json --show-secrets``."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EndpointError(f"--outputs {path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise EndpointError(f"--outputs {path}: not valid JSON ({exc})") from None
    return from_outputs(raw, str(path))


def read_stack(name: str, timeout: float = 120) -> Endpoint:
    """``--stack NAME``: ask the pulumi CLI for the stack's outputs, secrets included."""
    command = ["pulumi", "stack", "output", "--json", "--show-secrets", "--stack", name, "--non-interactive"]
    if shutil.which("pulumi") is None:
        raise EndpointError("--stack needs the pulumi CLI, which is not on PATH: install it, or on a machine"
                            " that has it run `pulumi stack output --json --show-secrets > outputs.json`"
                            " and pass --outputs outputs.json")
    cwd = PROJECT_DIR if (PROJECT_DIR / "Pulumi.yaml").exists() else None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env={**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"})
    except subprocess.TimeoutExpired:
        raise EndpointError(f"`{' '.join(command)}` did not answer within {timeout:.0f} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise EndpointError(f"`pulumi stack output --stack {name}` failed: {last}")
    try:
        raw = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise EndpointError(f"`pulumi stack output --stack {name}` did not print JSON ({exc})") from None
    return from_outputs(raw, f"stack {name}", kind="stack")


def from_environment() -> Endpoint | None:
    """The scheduler named by ``DASK_SCHEDULER_ADDRESS`` (dask config ``scheduler-address``),
    which the deployed Jupyter sets; None when unset."""
    import dask

    address = os.environ.get("DASK_SCHEDULER_ADDRESS") or dask.config.get("scheduler-address", None)
    return from_address(address, kind="environment", source="DASK_SCHEDULER_ADDRESS") if address else None


def resolve(stack: str | None = None, outputs: str | None = None, scheduler_address: str | None = None,
            use_local: bool = False) -> Endpoint:
    """The endpoint the command line asks for. With none given: ``DASK_SCHEDULER_ADDRESS``
    if set, else the local cluster. ContractError (bad outputs) passes through."""
    given = [flag for flag, value in (("--stack", stack), ("--outputs", outputs),
                                      ("--scheduler-address", scheduler_address), ("--local", use_local))
             if value]
    if len(given) > 1:
        raise EndpointError(f"choose one of {', '.join(given)}")
    if stack:
        return read_stack(stack)
    if outputs:
        return read_outputs_file(outputs)
    if scheduler_address:
        return from_address(scheduler_address)
    if use_local:
        return local()
    found = from_environment()
    if found is not None:
        logger.info("no cluster given: using DASK_SCHEDULER_ADDRESS %s", redact(found.scheduler_address))
        return found
    return Endpoint(kind="local", source="default (no --stack/--outputs/--scheduler-address)")


# ----------------------------------------------------------------------------- TLS
def security_from_outputs(outputs: StackOutputs):
    """A ``distributed.security.Security`` for the client, from the PEMs in the outputs."""
    return security_from_pems(outputs.tls_ca, outputs.tls_client_cert, outputs.tls_client_key)


def security_from_pems(ca: str, cert: str, key: str):
    """``Security`` built from the PEM text itself: distributed takes a value containing a
    newline as the contents (CA through ``cadata``), so no key is written to disk here."""
    from distributed.security import Security

    if not (cert and key):
        raise ContractError("TLS scheduler but no client certificate/key in the outputs")
    return Security(tls_ca_file=_pem(ca) if ca else None, tls_client_cert=_pem(cert), tls_client_key=_pem(key),
                    require_encryption=True)


def _pem(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def redact(address: str | None) -> str:
    """An address or URL without credentials (``user:pass@``) or query string."""
    if not address:
        return ""
    parts = urlsplit(address)
    if not parts.netloc:
        return address
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


# ----------------------------------------------------------------------------- connect
def connect(address: str, security: Any = None, timeout: float = 60):
    """A ``distributed.Client`` for ``address``, with a clear error when it does not answer."""
    from distributed import Client

    try:
        return Client(address, security=security, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise EndpointError(f"cannot reach the scheduler at {redact(address)} within {timeout:.0f} s: {exc}") from None
    except ValueError:  # distributed's message repeats the address, credentials included
        shown = redact(address) + (" (credentials not shown)" if "@" in address.split("://", 1)[-1] else "")
        raise EndpointError(f"{shown} is not an address distributed can connect to: host:port, an IPv6 host in"
                            " brackets, no user:password@") from None


# ----------------------------------------------------------------------------- worker loss
class WorkerWatch:
    """The workers that leave the scheduler unexpectedly while a run is on, from the
    scheduler's ``remove-worker``/``add-worker`` events (topic ``all``), and how long
    each took to be replaced (scheduler clock).

    An unrestricted run uses every worker: Dask recomputes a lost worker's tasks on the
    others (and on the worker that replaces it), so up to ``allowed`` losses are absorbed.
    A restricted run (``restricted``: the addresses it may use) loses a worker it uses: if a
    connected worker it does not use is left (``spares``), ``on_replace(message)`` asks for
    the run to go on there; else it goes on with the workers it has left. More than
    ``allowed`` losses, or the loss of every worker a restricted run may use with no spare
    left, sets :attr:`exceeded` to a message naming the lost workers and calls
    ``on_exceeded(message)`` once. Both callbacks run on the client's event-loop thread.
    Use as a context manager around the run.
    """

    def __init__(self, client, allowed: int, restricted: Iterable[str] | None = None,
                 on_exceeded: Callable[[str], None] | None = None, spares: Iterable[str] = (),
                 on_replace: Callable[[str], None] | None = None):
        self.client = client
        self.allowed = allowed
        self.restricted = frozenset(restricted or ())
        self.spares = [a for a in spares if a not in self.restricted]
        self.on_exceeded = on_exceeded
        self.on_replace = on_replace
        self.lost: list[tuple[str, float]] = []  # (address, scheduler time), in order
        self.joined: list[tuple[str, float]] = []
        self.exceeded: str | None = None
        self.replacement: tuple[str, str] | None = None  # (lost, spare) asked for
        self._lock = threading.Lock()
        self._active = False

    def __enter__(self) -> WorkerWatch:
        self._active = True
        self.client.subscribe_topic("all", self._on_event)
        return self

    def __exit__(self, *exc_info) -> None:
        with self._lock:  # after this, no callback is called
            self._active = False
        try:
            self.client.unsubscribe_topic("all")
        except Exception as exc:  # a lost scheduler: nothing left to unsubscribe from
            logger.debug("could not unsubscribe from worker events: %s", exc)

    def _on_event(self, event: tuple[float, dict[str, Any]]) -> None:
        stamp, message = event
        if not isinstance(message, dict):
            return
        action, address = message.get("action"), message.get("worker")
        if action == "add-worker":
            self.joined.append((address, stamp))
            if self.restricted and address not in self.restricted:
                self.spares.append(address)
            return
        if action != "remove-worker" or message.get("expected"):
            return
        if self.restricted and address not in self.restricted:  # a worker this run does not use
            self.spares = [a for a in self.spares if a != address]
            return
        self.lost.append((address, stamp))
        logger.warning("worker %s lost (%d so far; %d allowed)", redact(address), len(self.lost), self.allowed)
        self._judge(address)

    def _judge(self, address: str) -> None:
        names = ", ".join(redact(a) for a, _ in self.lost)
        with self._lock:
            if self.exceeded is not None or self.replacement is not None or not self._active:
                return
            if len(self.lost) > self.allowed:
                self._exceed(f"{len(self.lost)} worker(s) lost during the run, more than the {self.allowed}"
                             f" allowed (--max-lost-workers): {names}")
            elif self.restricted and self.spares and self.on_replace is not None:
                self.replacement = (address, self.spares.pop(0))
                self.on_replace(f"worker {redact(address)} lost: the run goes on with"
                                f" {redact(self.replacement[1])} in its place")
            elif self.restricted and self.restricted <= {a for a, _ in self.lost}:
                self._exceed(f"every worker this run is restricted to was lost and no other is connected: {names}")

    def _exceed(self, reason: str) -> None:
        self.exceeded = reason
        if self.on_exceeded is not None:
            self.on_exceeded(reason)

    def losses(self) -> list[dict[str, Any]]:
        """Each lost worker and the seconds until a worker joined after it (None if none
        did before the run ended)."""
        out = []
        for address, stamp in self.lost:
            after = [t for _, t in self.joined if t >= stamp]
            out.append({"address": redact(address),
                        "replaced_after_s": round(min(after) - stamp, 3) if after else None})
        return out
