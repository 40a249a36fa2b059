"""Fault injection that runs on the workers: models that kill their worker's process (a
real SIGKILL, the nanny restarts it) or slow down, and an XGBoost callback that kills
one rank mid-training.

Workers find the fault directory in ``DASK_TKG_FAULTS`` (set before the cluster starts,
so restarted workers inherit it). A fault is armed by a file ``arm-<name>`` there and
fires once: the first worker to reach it creates ``fired-<name>`` (exclusively), writes
its address and the time into it, and dies. Without the arm file nothing happens, so the
same model gives the undisturbed run.
"""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

FAULTS_ENV = "DASK_TKG_FAULTS"
KILL_AT_FORWARD = 3  # a worker's 3rd forward pass: the warm-up, one batch, then death mid-infer
SLOW_FORWARD_S = 0.4


def faults_dir() -> Path:
    return Path(os.environ[FAULTS_ENV])


def arm(name: str) -> None:
    (faults_dir() / f"arm-{name}").touch()


def fired(name: str) -> dict | None:
    """What the fault wrote when it fired (address, time), or None."""
    path = faults_dir() / f"fired-{name}"
    return json.loads(path.read_text()) if path.exists() and path.stat().st_size else None


def reset(name: str) -> None:
    for prefix in ("arm", "fired", "forward"):
        (faults_dir() / f"{prefix}-{name}").unlink(missing_ok=True)


def fire(name: str, signum: int = signal.SIGKILL) -> None:
    """Kill (or, with SIGSTOP, freeze: a worker that goes silent, as behind a network
    partition) this process if fault ``name`` is armed and has not fired yet."""
    directory = faults_dir()
    if not (directory / f"arm-{name}").exists():
        return
    try:
        descriptor = os.open(directory / f"fired-{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    from distributed import get_worker

    with os.fdopen(descriptor, "w") as fh:
        fh.write(json.dumps({"address": get_worker().address, "time": time.time(), "pid": os.getpid()}))
        fh.flush()
        os.fsync(fh.fileno())
    os.kill(os.getpid(), signum)


def _colour_module(on_forward):
    import torch
    from torch import nn

    from workloads.images.synthetic import colour_classifier

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = colour_classifier()
            self.calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            on_forward(self.calls, x)
            return self.inner(x)

    return Wrapped()


def killing_colour_classifier():
    """The colour classifier; armed (``images-kill``), the worker dies at its
    ``KILL_AT_FORWARD``-th forward pass."""
    def on_forward(calls, x):
        if calls == KILL_AT_FORWARD:
            fire("images-kill")
    return _colour_module(on_forward)


def freezing_colour_classifier():
    """The colour classifier; armed (``images-freeze``), the worker stops itself (SIGSTOP)
    at its ``KILL_AT_FORWARD``-th forward pass: its process, heartbeats and sockets stay,
    silent, until something acts on it."""
    def on_forward(calls, x):
        if calls == KILL_AT_FORWARD:
            fire("images-freeze", signal.SIGSTOP)
    return _colour_module(on_forward)


def slow_colour_classifier():
    """The colour classifier taking ``SLOW_FORWARD_S`` per forward pass; each pass after
    the warm-up touches ``forward-slow`` in the fault directory (so a test knows the
    ``infer`` phase is under way)."""
    def on_forward(calls, x):
        if calls > 1:
            (faults_dir() / "forward-slow").touch()
        time.sleep(SLOW_FORWARD_S)
    return _colour_module(on_forward)


def kill_rank_callback(rank_name: str, at_round: int):
    """An XGBoost training callback: armed (``taxi-kill``), the worker named
    ``rank_name`` dies after boosting round ``at_round``."""
    import xgboost as xgb

    class KillRank(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log) -> bool:
            from distributed import get_worker

            if epoch == at_round and str(get_worker().name) == rank_name:
                fire("taxi-kill")
            return False

    return KillRank()


def _replace(owner: type, name: str, value: object) -> None:
    """Set ``owner.name`` to ``value`` in this process: the fault's hook into the reader."""
    setattr(owner, name, value)


class FailingTaxiReads(WorkerPlugin):
    """A Dask worker plugin (``Client.register_plugin``) that makes reading the bytes of
    one taxi file fail with EIO in the worker processes, the way a read(2) on an NFS soft
    mount fails while its server does not answer: the first ``failures`` reads of a chunk
    of ``file_name`` (None: every one) raise ``OSError(EIO)``. Failures are counted in the
    fault directory, so they add up over both workers. Also shortens the reader's pause
    between attempts."""

    name = "failing-taxi-reads"

    def __init__(self, file_name: str, failures: int | None, backoff_s: float = 0.05):
        self.file_name, self.failures, self.backoff_s = file_name, failures, backoff_s

    def setup(self, worker=None) -> None:
        from workloads.taxi import io

        stream = io._RangeStream
        real = vars(stream).get("_real_readinto", stream.readinto)
        _replace(stream, "_real_readinto", real)
        self._saved_backoff = io.READ_BACKOFF_S
        io.READ_BACKOFF_S = self.backoff_s
        plugin = self

        def readinto(self, buffer):
            if os.path.basename(self._file.name) == plugin.file_name and plugin._take_a_failure():
                import errno

                raise OSError(errno.EIO, "Input/output error")
            return real(self, buffer)

        _replace(stream, "readinto", readinto)

    def teardown(self, worker=None) -> None:
        from workloads.taxi import io

        _replace(io._RangeStream, "readinto", vars(io._RangeStream)["_real_readinto"])
        io.READ_BACKOFF_S = self._saved_backoff

    def _take_a_failure(self) -> bool:
        if self.failures is None:
            (faults_dir() / "read-failed").open("a").write("x")
            return True
        for n in range(self.failures):
            try:
                os.close(os.open(faults_dir() / f"read-failed-{n}", os.O_CREAT | os.O_EXCL, 0o644))
                return True
            except FileExistsError:
                continue
        return False


def read_failures() -> int:
    """How many reads ``FailingTaxiReads`` failed since the last ``reset_read_failures``."""
    always = faults_dir() / "read-failed"
    return len(list(faults_dir().glob("read-failed-*"))) + (len(always.read_text()) if always.exists() else 0)


def reset_read_failures() -> None:
    for path in faults_dir().glob("read-failed*"):
        path.unlink()
