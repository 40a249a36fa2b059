"""The runner's own error types. Each message names what is wrong and where."""
from __future__ import annotations


class WorkloadError(RuntimeError):
    """Base class: a run that cannot go on, with a message meant for the user."""


class EndpointError(WorkloadError):
    """Stack outputs, scheduler address or local cluster are unusable."""


class PreflightError(WorkloadError):
    """A worker or the scheduler lacks a package, a device, or runs other library versions."""


class DatasetError(WorkloadError):
    """The dataset root, a directory or a file pattern is missing or empty."""


class WorkerError(WorkloadError):
    """A failure on a worker that its one-line message explains, naming the worker: the runner
    prints that line, and the worker logs no traceback of it (``workloads.images.model``)."""


class WorkersLostError(WorkloadError):
    """More workers were lost during a run than the run allows."""


class RunStopped(KeyboardInterrupt):
    """The run was stopped from outside the benchmark, in the runner's main thread: by
    SIGINT or SIGTERM (``status`` interrupted) or by the worker-loss watch (``status``
    failed). A KeyboardInterrupt, as Ctrl-C is, so that no ``except Exception`` in a
    benchmark swallows it and distributed cancels whatever the main thread waits on."""

    def __init__(self, reason: str, status: str = "interrupted", exit_code: int = 130):
        super().__init__(reason)
        self.reason, self.status, self.exit_code = reason, status, exit_code
