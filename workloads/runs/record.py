"""Building one run's record from three frozen parts: what the whole invocation shares
(:class:`RunContext`), where the run ran (:class:`Placement`) and what it did
(:class:`RunOutcome`). ``workloads.runs.results`` owns the schema and the file."""
from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workloads.cluster import preflight
from workloads.observe import environment
from workloads.runs import results


@dataclass(frozen=True)
class RunContext:
    """Shared by every record of one invocation of the runner."""

    profile: str
    device_requested: str
    max_lost_workers: int
    endpoint_kind: str  # local | stack | outputs | address | environment
    local: bool
    output: str  # the results directory
    data_dir: Path | None = None
    data_generated: bool = False
    adaptive: tuple[int, int] | None = None  # --adaptive MIN,MAX


@dataclass(frozen=True)
class Placement:
    """The workers of one run: how many it asked for, which it used, which were connected,
    and what the preflight found on them."""

    count: int
    used: tuple[str, ...] = ()
    connected: tuple[str, ...] = ()
    checked: preflight.Preflight | None = None

    @property
    def device(self) -> str | None:
        return self.checked.device if self.checked else None


@dataclass(frozen=True)
class RunOutcome:
    """What one run did; ``phases`` is used when no timer ran (a setup failure)."""

    status: str
    error: str | None = None
    timer: results.PhaseTimer | None = None
    phases: dict[str, float] = field(default_factory=dict)
    config: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    artifacts: dict[str, str] = field(default_factory=dict)
    workers_lost: tuple[dict[str, Any], ...] | None = None
    workers_replaced: tuple[dict[str, Any], ...] = ()


def benchmark_options(config: Any) -> dict[str, Any] | None:
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    return None


def cluster_facts(context: RunContext, placement: Placement, session) -> dict[str, Any]:
    """The record's ``cluster``: asked of the scheduler while it answers (a lost scheduler
    would hang the question), else what the runner knows."""
    cluster: dict[str, Any] = {"kind": "local" if context.local else "remote", "workers": placement.count}
    probes = placement.checked.workers if placement.checked else {}
    if session is not None and session.running() and placement.used:
        with contextlib.suppress(Exception):
            cluster = environment.record_cluster(
                session.client, list(placement.used), list(placement.connected), probes, cluster["kind"],
                session.dashboard(), session.describe_plan())
    if session is not None and session.detection is not None:
        cluster["failure_detection"] = dict(session.detection)
    return cluster


def build(name: str, context: RunContext, placement: Placement, outcome: RunOutcome,
          cluster: dict[str, Any], gpu_usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """One record (also for a run that never started); ``gpu_usage``: what the cluster held of
    the GPUs over the record's window (``workloads.observe.gpu_usage``)."""
    checked = placement.checked
    probes = checked.workers if checked else {}
    client_facts = checked.client if checked else environment.client_facts()
    used = list(placement.used)
    if outcome.workers_lost is not None:
        cluster = {**cluster, "workers_lost": list(outcome.workers_lost)}
    if outcome.workers_replaced:
        cluster = {**cluster, "workers_replaced": list(outcome.workers_replaced)}
    timer = outcome.timer
    return results.make_record(
        benchmark=name, status=outcome.status,
        config={"profile": context.profile, "workers": placement.count,
                "device": placement.device or context.device_requested,
                "device_requested": context.device_requested,
                "max_lost_workers": context.max_lost_workers,
                "endpoint": context.endpoint_kind,
                "data_dir": str(context.data_dir) if context.data_dir else None,
                "data_generated": context.data_generated,
                "adaptive": list(context.adaptive) if context.adaptive else None,
                "benchmark": benchmark_options(outcome.config)},
        phases=timer.phases if timer else dict(outcome.phases), metrics=outcome.metrics or {},
        versions=environment.record_versions(probes, used, client_facts),
        hardware=environment.record_hardware(probes, used, client_facts),
        cluster=cluster, started_at=outcome.started_at or results.utc_now(), error=outcome.error,
        artifacts=dict(outcome.artifacts), unfinished=timer.unfinished if timer else None, gpu_usage=gpu_usage)
