"""The runner's own error types. Each message names what is wrong and where."""
from __future__ import annotations


class WorkloadError(RuntimeError):
    """Base class: a run that cannot go on, with a message meant for the user."""


class EndpointError(WorkloadError):
    """Stack outputs, scheduler address or local cluster are unusable."""


class PreflightError(WorkloadError):
    """A worker lacks a package, a device, or runs other library versions."""


class DatasetError(WorkloadError):
    """The dataset root, a directory or a file pattern is missing or empty."""


class WorkersLostError(WorkloadError):
    """More workers were lost during a run than the run allows."""
