"""Where the cluster is: stack outputs, a scheduler address, or a local cluster, turned
into one frozen :class:`Endpoint`; connecting to it and waiting for workers.

Nothing here imports pulumi: stack outputs come from the pulumi CLI
(``pulumi stack output --json --show-secrets``) or from the same JSON in a file, and are
validated by :func:`contract.parse_outputs`.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import ssl
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from workloads.contract import ContractError, StackOutputs, parse_outputs
from workloads.core.errors import EndpointError

logger = logging.getLogger(__name__)

PROJECT_DIR = Path(__file__).resolve().parents[2]  # where Pulumi.yaml lives


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
    return from_outputs(outputs_file_json(path), str(path))


def outputs_file_json(path: str | os.PathLike) -> Any:
    """The JSON in an ``--outputs`` file."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EndpointError(f"--outputs {path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise EndpointError(f"--outputs {path}: not valid JSON ({exc})") from None


def read_stack(name: str, timeout: float = 120) -> Endpoint:
    """``--stack NAME``: ask the pulumi CLI for the stack's outputs, secrets included."""
    return from_outputs(stack_outputs_json(name, timeout), f"stack {name}", kind="stack")


def no_cli_hint(show_secrets: bool) -> str:
    """Where the outputs come from without the pulumi CLI: a person of a team never needs, nor is
    told to read, the stack's secrets; whoever runs the stack may."""
    if not show_secrets:
        return ("--stack needs the pulumi CLI, which is not on PATH: pass --outputs FILE instead, the team's"
                " document your platform team gives you (dask-tkg team-outputs writes it)")
    return ("--stack needs the pulumi CLI, which is not on PATH: install it, or on a machine that has it and the"
            " stack's secrets run `pulumi stack output --json --show-secrets > outputs.json` (keep that file"
            " private: it holds the scheduler's client key) and pass --outputs outputs.json")


def stack_outputs_json(name: str, timeout: float = 120, show_secrets: bool = True) -> Any:
    """The stack's outputs from the pulumi CLI; without ``show_secrets`` each secret reads
    ``"[secret]"`` (what a person without the stack's secrets runs with)."""
    command = ["pulumi", "stack", "output", "--json", *(["--show-secrets"] if show_secrets else []),
               "--stack", name, "--non-interactive"]
    if shutil.which("pulumi") is None:
        raise EndpointError(no_cli_hint(show_secrets))
    cwd = PROJECT_DIR if (PROJECT_DIR / "Pulumi.yaml").exists() else None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False,
                              env={**os.environ, "PULUMI_SKIP_UPDATE_CHECK": "true"})
    except subprocess.TimeoutExpired:
        raise EndpointError(f"`{' '.join(command)}` did not answer within {timeout:.0f} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise EndpointError(f"`pulumi stack output --stack {name}` failed: {last}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise EndpointError(f"`pulumi stack output --stack {name}` did not print JSON ({exc})") from None


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
    newline as the contents (CA through ``cadata``), so no key is written to disk here. Its
    connections check that the scheduler's certificate names the host dialled
    (``server_name.NamedServerSecurity``)."""
    from workloads.cluster.server_name import NamedServerSecurity

    if not (cert and key):
        raise ContractError("TLS scheduler but no client certificate/key in the outputs")
    return NamedServerSecurity(tls_ca_file=_pem(ca) if ca else None, tls_client_cert=_pem(cert),
                               tls_client_key=_pem(key), require_encryption=True)


def _certificate_refused(exc: BaseException | None) -> ssl.SSLCertVerificationError | None:
    """The certificate check that failed behind a connection error, if one did (distributed
    raises ``FatalCommClosedError`` from the ``SSLCertVerificationError``: comm/tcp.py)."""
    while exc is not None:
        if isinstance(exc, ssl.SSLCertVerificationError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


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
    try:
        return open_client(address, security, timeout)
    except (OSError, TimeoutError) as exc:
        refused = _certificate_refused(exc)
        if refused is not None:
            host = getattr(security, "server_hostname", None) or address.split("://", 1)[-1].rsplit(":", 1)[0]
            raise EndpointError(f"the scheduler at {redact(address)} presents a certificate that does not name"
                                f" {host}: {refused.verify_message}") from None
        raise EndpointError(f"cannot reach the scheduler at {redact(address)} within {timeout:.0f} s: {exc}") from None
    except ValueError:  # distributed's message repeats the address, credentials included
        shown = redact(address) + (" (credentials not shown)" if "@" in address.split("://", 1)[-1] else "")
        raise EndpointError(f"{shown} is not an address distributed can connect to: host:port, an IPv6 host in"
                            " brackets, no user:password@") from None


def open_client(address: str, security: Any = None, timeout: float = 60):
    """``distributed.Client(address, security=security, timeout=timeout)``, leaving nothing of it
    running when the constructor raises. distributed 2026.7.1 closes a client whose connection
    fails with OSError but keeps its IO-loop thread (``Client.close`` returns at once for a closed
    client), and on any other error (a malformed address's ValueError, a ``tls://`` address
    without ``Security``'s TypeError) leaves it "connecting" with that thread. Such a client is
    garbage in a reference cycle whose ``__del__`` closes it whenever the collector runs, on
    whichever thread: one that holds ``LoopRunner._lock`` (class-wide, not reentrant; starting
    any client holds it) then waits for that lock in ``LoopRunner.stop`` forever."""
    from distributed import Client

    client = Client.__new__(Client)  # a reference that outlives a constructor that raises
    try:
        client.__init__(address, security=security, timeout=timeout)
    except BaseException:
        _release(client)
        raise
    return client


def _release(client: Any) -> None:
    """Close a client whose constructor raised, then stop its IO loop; best effort, as the
    constructor's error is the one to report. Closed, its later ``__del__`` does nothing."""
    runner = vars(client).get("_loop_runner")
    if runner is None:  # it raised before starting anything
        return
    with contextlib.suppress(Exception):
        client.close()  # "connecting": closed on its own loop, which it then stops
    with contextlib.suppress(Exception):
        runner.stop()  # closed by distributed already: only the loop is left to stop
