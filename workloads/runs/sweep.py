"""One invocation of the runner as a sweep: for each worker count, start or reach the cluster,
scale or restrict it, wait for its workers and run the preflight, then run each benchmark and
append its record. :class:`Runner` only sequences the parts that live in their own modules:
the cluster session, the worker watch, stopping, instrumentation and the record.
``workloads/run.py`` is its command line."""
from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from workloads import tuning
from workloads.cluster import endpoint as endpoints
from workloads.cluster import local, preflight
from workloads.cluster import session as sessions
from workloads.cluster.session import ClusterSession
from workloads.cluster.stopping import Stopper, stop_reason
from workloads.cluster.watch import WorkerWatch
from workloads.core.commands import load_yaml
from workloads.core.config import cache_dir
from workloads.core.errors import DatasetError, WorkersLostError, WorkloadError
from workloads.observe import gpu_pods, gpu_usage, instrumentation
from workloads.runs import benchmarks, record, results, summary
from workloads.runs.record import Placement, RunContext, RunOutcome

logger = logging.getLogger("workloads.run")

PROFILES_FILE = Path(__file__).resolve().parents[1] / "cluster" / "profiles.yaml"  # cluster sizes per profile
EXIT_OK, EXIT_FAILED, EXIT_SETUP, EXIT_INTERRUPTED = 0, 1, 2, 130


def echo_stdout(text: str, error: bool = False) -> None:
    print(text, file=sys.stderr if error else sys.stdout, flush=True)


def benchmark_profile(module: ModuleType, profile: str) -> dict[str, Any]:
    """The ``profile`` section of ``workloads/<bench>/profiles.yaml`` (empty if absent)."""
    path = Path(str(module.__file__)).with_name("profiles.yaml")
    return dict(load_yaml(path).get(profile) or {}) if path.exists() else {}


class Runner:
    """One invocation: resolve the endpoint, then for each worker count start/scale or
    restrict, wait, preflight, and run each benchmark, writing a record per run.

    The cluster session (:class:`ClusterSession`), stopping (:class:`Stopper`) and the
    record (:mod:`workloads.runs.record`) each live in their own module; this class only
    sequences them."""

    def __init__(self, args: argparse.Namespace, modules: dict[str, ModuleType], echo=echo_stdout):
        self.args = args
        self.modules = modules
        self.echo = echo
        self.profile = load_yaml(PROFILES_FILE)[args.profile]
        self.stopper = Stopper()
        self.done = results.succeeded_configs(args.output) if args.resume else {}
        self.records: list[dict[str, Any]] = []
        self.session: ClusterSession | None = None
        self.context: RunContext | None = None
        self.scheduler_lost: str | None = None  # why the sweep stopped early
        self.where: endpoints.Endpoint | None = None  # set beforehand: a cluster made for this run (--own-cluster)
        self.person: str | None = None  # whose run (--own-cluster: the person's name; else the OS user)
        self.held_since: float | None = None  # when the cluster was asked for, if before execute (--own-cluster)
        self.gpu: gpu_usage.GpuUsage | None = None  # what the run's cluster held of the GPUs, for each record

    @property
    def live(self) -> ClusterSession:
        """The cluster session: every step below runs inside the one :meth:`execute` opens."""
        if self.session is None:
            raise RuntimeError("no cluster session: Runner.execute opens it")
        return self.session

    @property
    def ctx(self) -> RunContext:
        """The run's context, set by :meth:`execute` before any benchmark runs."""
        if self.context is None:
            raise RuntimeError("no run context: Runner.execute sets it")
        return self.context

    # ------------------------------------------------------------------ top level
    def execute(self) -> int:
        args = self.args
        where = self.where or endpoints.resolve(args.stack, args.outputs, args.scheduler_address, args.local)
        self.echo(f"cluster: {where.describe()}")
        data_dir, generated = self.data_root(where)
        if where.local and not generated:
            check_local_data_root(data_dir, self.modules)
        self.context = RunContext(profile=args.profile, device_requested=args.device,
                                  max_lost_workers=args.max_lost_workers, endpoint_kind=where.kind,
                                  local=where.local, output=args.output, data_dir=data_dir,
                                  data_generated=generated, adaptive=args.adaptive)
        with ClusterSession(where, echo=self.echo, dashboard_address=args.dashboard_address) as self.session, \
                self.held_gpus(where) as self.gpu:
            self.session.on_forward_drop = self.forward_dropped
            for count in args.workers or [None]:
                code = self.run_count(count)
                if code != EXIT_OK:
                    return code
                if self.scheduler_lost:
                    self.echo(f"error: {self.scheduler_lost}: the sweep stops here", error=True)
                    return EXIT_FAILED
        return EXIT_FAILED if any(r["status"] != "succeeded" for r in self.records) else EXIT_OK

    def held_gpus(self, where: endpoints.Endpoint) -> gpu_usage.GpuUsage:
        """What the cluster holds of the GPUs, from now (or from when it was asked for): a local
        cluster's as the runner starts it, a remote one's from its pods."""
        since = self.held_since or time.time()
        if where.local:
            return gpu_usage.GpuUsage(gpu_usage.LocalGpus(), self.person, since=since)
        pods = sessions.dask_pods(where)
        if isinstance(pods, str):
            return gpu_usage.GpuUsage(gpu_usage.Unread(pods), self.person, since=since)
        try:
            core = pods.core_api()
        except WorkloadError as exc:
            return gpu_usage.GpuUsage(gpu_usage.Unread(f"the kubeconfig cannot be used: {exc}"), self.person,
                                      pods.namespace, pods.cluster, since)
        sampler = gpu_pods.PodSampler(core, pods.namespace, pods.selector, pods.describe(), client=self.client_now)
        return gpu_usage.GpuUsage(sampler, self.person, pods.namespace, pods.cluster, since)

    def client_now(self) -> Any:
        """The session's Dask client while it runs, else None (for the pod sampler's thread)."""
        session = self.session
        return session.client if session is not None and session.running() else None

    def data_root(self, where: endpoints.Endpoint) -> tuple[Path, bool]:
        if self.args.data_dir:
            return Path(self.args.data_dir).expanduser().absolute(), False
        if where.data_dir:
            return Path(where.data_dir), False
        if where.local:
            return cache_dir() / "data" / self.args.profile, True
        raise WorkloadError(f"no --data-dir, and {where.source} names no dataset mount: pass --data-dir"
                            " (the dataset root as the workers see it)")

    def run_count(self, count: int | None) -> int:
        """Everything for one worker count (None: the profile's locally, every worker of a
        remote cluster); returns EXIT_SETUP when the cluster is unfit."""
        if self.all_done_before_start(count):
            return EXIT_OK
        started = time.perf_counter()
        try:
            placement = self.prepare(count)
        except (WorkloadError, KeyboardInterrupt) as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            error = stop_reason(exc) if interrupted else str(exc)
            if not interrupted:
                self.echo(f"error: {exc}", error=True)
            for name in self.modules:
                self.write(name, Placement(count=count or self.profile["workers"]),
                           RunOutcome(status="interrupted" if interrupted else "failed", error=error,
                                      phases={"setup": time.perf_counter() - started}))
            if interrupted:
                raise
            return EXIT_SETUP
        self.echo(f"preflight: {len(placement.connected)} worker(s) ok, device {placement.device}")
        for name, module in self.modules.items():
            self.run_one(name, module, placement)
            if self.scheduler_lost:
                break
        return EXIT_OK

    def prepare(self, count: int | None) -> Placement:
        """Start or reach the cluster, wait for its workers, run the preflight."""
        session = self.live
        timeout = self.args.wait_timeout or self.profile.get("wait_timeout_s", 300)
        if session.endpoint.local:
            want = self.start_local(count)
        else:
            session.connect()
            want = session.remote_target(count)
            if self.args.adaptive:
                session.adapt(*self.args.adaptive)
                want, count = max(1, self.args.adaptive[0]), None  # every worker the autoscaler gives
            elif count is not None and not session.scale(want, timeout):
                session.say_restricted(len(session.workers()))
        connected = session.wait(want, timeout)
        if session.endpoint.local and self.gpu is not None and isinstance(self.gpu.holders, gpu_usage.LocalGpus):
            self.gpu.holders.workers_joined(time.time())
        self.say_failure_detection()
        used = connected if count is None and not session.endpoint.local else connected[:want]
        packages = [p for m in self.modules.values() for p in m.REQUIRED_PACKAGES]
        checked = preflight.check(session.client, connected, packages, self.args.device,
                                  hooks=benchmarks.preflight_hooks(self.modules.values()))
        return Placement(count=len(used), used=tuple(used), connected=tuple(connected), checked=checked)

    def start_local(self, count: int | None) -> int:
        """The local cluster for ``count`` (started again when the plan changes); its GPUs
        held from the moment it is asked for."""
        session, plan, asked = self.live, self.plan_for(count), time.time()
        before = session.cluster
        want = session.use_local(plan)
        if session.cluster is not before and self.gpu is not None and isinstance(self.gpu.holders,
                                                                                gpu_usage.LocalGpus):
            why = ("a local cluster of CPU workers (--device cpu)" if self.args.device == "cpu" else
                   "a local cluster of CPU workers (no GPU that NVML and dask-cuda find here)")
            self.gpu.holders.cluster_started(plan.gpus and plan.n_workers, asked, why)
        return want

    def say_failure_detection(self) -> None:
        """Once per cluster: how soon a silent worker or an unreachable scheduler is noticed."""
        if self.live.detection is not None:
            return
        found = self.live.failure_detection()
        ttl = found["worker_ttl_s"]
        self.echo(f"failure detection: a silent worker is restarted after {ttl:.0f} s (scheduler worker-ttl),"
                  f" an unresponsive connection dropped after {found['tcp_timeout_s']:.0f} s" if ttl else
                  "failure detection: the scheduler has no worker-ttl: a silent worker is never removed"
                  " (set distributed.scheduler.worker-ttl on the scheduler)")
        if ttl and ttl > 2 * tuning.WORKER_TTL_S:
            self.echo(f"warning: the scheduler's worker-ttl is {ttl:.0f} s: a partitioned worker stalls runs that"
                      f" long (the program deploys {tuning.WORKER_TTL_S} s)", error=True)

    def plan_for(self, count: int | None) -> local.LocalPlan:
        return local.plan(count or self.profile["workers"], self.args.device, self.args.allocator, cap=count is None)

    # ------------------------------------------------------------------ resume
    def all_done_before_start(self, count: int | None) -> bool:
        """With --resume and a fixed device: every benchmark of this count already
        succeeded, known before any cluster starts (when the count is known then)."""
        if not self.done or self.args.device not in ("cpu", "cuda"):
            return False
        where = self.live.endpoint
        planned = self.plan_for(count).n_workers if where.local else (count or where.expected_workers)
        if not planned:
            return False
        found = {n: self.previous_success(n, m, planned, self.args.device) for n, m in self.modules.items()}
        if not all(found.values()):
            return False
        for name, previous in found.items():
            if previous is not None:
                self.say_skipped(name, previous, planned)
        return True

    def previous_success(self, name: str, module: ModuleType, count: int,
                         device: str | None) -> dict[str, Any] | None:
        """The succeeded record of this configuration (see ``results.config_key``), if
        ``--resume`` found one."""
        if not self.done:
            return None
        try:
            config = module.make_config(self.args, benchmark_profile(module, self.args.profile),
                                        self.ctx.data_dir, device)
        except Exception:  # a config that cannot be made is reported by the run itself
            return None
        key = results.config_key(name, {"profile": self.args.profile, "device": device, "workers": count,
                                        "benchmark": record.benchmark_options(config),
                                        "adaptive": self.args.adaptive})
        return self.done.get(key)

    def say_skipped(self, name: str, found: dict[str, Any], count: int) -> None:
        self.echo(f"{name}: {count} worker(s), profile {self.args.profile}: skipped (--resume), succeeded"
                  f" at {found.get('started_at', '?')}")

    # ------------------------------------------------------------------ one run
    def run_one(self, name: str, module: ModuleType, placement: Placement) -> None:
        """Run one benchmark; a restricted run that loses a worker while a spare is
        connected is run again there (the record names both)."""
        found = self.previous_success(name, module, len(placement.used), placement.device)
        if found is not None:
            self.say_skipped(name, found, len(placement.used))
            return
        self.echo(f"{name}: {len(placement.used)} worker(s), profile {self.args.profile}, device {placement.device}")
        started_at = results.utc_now()
        lost, replaced = [], []
        while True:
            outcome, replacement, escaping = self.attempt(name, module, placement, started_at)
            lost += list(outcome.workers_lost or ())
            if replacement is None:
                break
            gone, spare = replacement
            replaced.append({"lost": endpoints.redact(gone), "replaced_by": endpoints.redact(spare)})
            self.echo(f"{name}: worker {endpoints.redact(gone)} lost; running again with {endpoints.redact(spare)}")
            used = tuple(spare if a == gone else a for a in placement.used)
            placement = dataclasses.replace(placement, used=used)
        outcome = dataclasses.replace(outcome, workers_lost=tuple(lost), workers_replaced=tuple(replaced))
        written = self.write(name, placement, outcome)  # a result already measured is never lost
        self.echo(f"{name}: {summary.status(written)} in {summary.seconds(written):.1f} s"
                  + (f": {outcome.error}" if outcome.error else ""), error=bool(outcome.error))
        self.say_gpu_usage(name, written.get(results.GPU_USAGE) or {})
        if escaping is not None:  # Ctrl-C, SIGTERM, or a BaseException: the sweep stops
            raise escaping

    def say_gpu_usage(self, name: str, usage: dict[str, Any]) -> None:
        """One line, where the run's cluster held a GPU: held, its three parts, and busy."""
        if not usage.get("held_gpu_seconds"):
            return
        busy = usage.get("busy_gpu_seconds")
        self.echo(f"{name}: GPUs held {usage['held_gpu_seconds']:.1f} GPU-s, {usage.get('gpus')} at most (waiting"
                  f" {usage['waiting_gpu_seconds']:.1f}, working {usage['working_gpu_seconds']:.1f}, idle"
                  f" {usage['idle_gpu_seconds']:.1f}); busy "
                  + (f"{busy:.1f} GPU-s ({usage.get('busy_source')})" if busy is not None else "not measured"))

    def attempt(self, name: str, module: ModuleType, placement: Placement, started_at: str
                ) -> tuple[RunOutcome, tuple[str, str] | None, BaseException | None]:
        """One try of a run: its outcome, (lost, spare) when it must run again there, and
        the exception to raise once the outcome is recorded (an interruption)."""
        args, client = self.args, self.live.client
        timer = results.PhaseTimer()
        config, metrics, artifacts, status, error = None, {}, {}, "succeeded", None
        watch: WorkerWatch | None = None
        inst = None
        replacement: tuple[str, str] | None = None
        escaping: BaseException | None = None
        span: list[float] = []  # when the benchmark's timed phases began and ended
        restricted = len(placement.used) < len(placement.connected)
        try:
            section = benchmark_profile(module, args.profile)
            if self.ctx.data_generated:
                module.generate(self.ctx.data_dir, section)
            config = module.make_config(args, section, self.ctx.data_dir, placement.device)
            if restricted:
                config = restrict(config, list(placement.used), len(placement.connected))
            watch = WorkerWatch(
                client, args.max_lost_workers, placement.used if restricted else None, self.stopper.stop_run,
                spares=[a for a in placement.connected if a not in placement.used],
                on_replace=lambda why: self.stopper.stop_run(why, status="replace"))
            run_id = instrumentation.make_run_id(name, len(placement.used), started_at)
            with instrumentation.instrument(client, args.output, run_id,
                                            performance_report=args.performance_report) as inst, watch, \
                    self.stopper.running():
                span = [time.time()]
                try:
                    metrics = module.run(client, config, timer)
                finally:
                    span.append(time.time())
            if watch.exceeded:  # the run finished before the stop reached it
                raise WorkersLostError(watch.exceeded)
        except KeyboardInterrupt as exc:
            status, error = getattr(exc, "status", "interrupted"), stop_reason(exc)
            if status == "replace":
                replacement = watch.replacement if watch is not None else None
            elif status == "interrupted":
                escaping = exc
        except BaseException as exc:
            status, error = "failed", self.failure(exc)
            if not isinstance(exc, Exception):
                escaping = exc
        finally:
            if span and self.gpu is not None:  # working, and busy, also after a failure
                self.gpu.ran(span[0], span[-1], inst.samples if inst is not None else ())
            if inst is not None:  # utilization and the performance report, also after a failure
                artifacts.update(inst.artifacts)
                if inst.metrics:
                    metrics = {**(metrics or {}), "utilization": inst.metrics}
                if args.adaptive and "utilization" in artifacts:
                    metrics = {**(metrics or {}), "worker_count_timeline": self.worker_timeline(artifacts)}
        outcome = RunOutcome(status=status, error=error, timer=timer, config=config, metrics=metrics or {},
                             started_at=started_at, artifacts=artifacts,
                             workers_lost=tuple(watch.losses()) if watch is not None else None)
        return outcome, replacement, escaping

    def worker_timeline(self, artifacts: dict[str, str]) -> list[dict[str, Any]]:
        """An adaptive run's worker count over time, from its utilization samples."""
        from workloads.cluster import scaling
        from workloads.observe import utilization

        try:
            samples = utilization.read_samples(Path(self.args.output) / artifacts["utilization"])
            return scaling.worker_count_timeline(samples)
        except (OSError, ValueError) as exc:
            logger.warning("worker count over time not recorded: %s", exc)
            return []

    def failure(self, exc: BaseException) -> str:
        """The error of a failed run; a lost scheduler also ends the sweep."""
        error = f"{type(exc).__name__}: {exc}"
        logger.debug("run failed", exc_info=True)
        if self.live.forward is not None and self.live.forward.drops:
            self.scheduler_lost = f"lost the scheduler: {self.live.forward.drops[-1]}"
            error = f"{self.scheduler_lost} ({error.splitlines()[0]})"
        elif not self.live.endpoint.local and not self.live.running():
            self.scheduler_lost = f"lost the scheduler at {endpoints.redact(self.live.endpoint.scheduler_address)}"
            error = f"{self.scheduler_lost} ({error.splitlines()[0]})"
        return error

    def forward_dropped(self, why: str) -> None:
        """The port-forward to the scheduler dropped (its pod gone, the API server lost): the
        scheduler this run used is gone with it, so the run fails naming the drop and the
        sweep stops (called on the forward's watch thread)."""
        self.scheduler_lost = f"lost the scheduler: {why}"
        self.stopper.stop_run(self.scheduler_lost)

    def write(self, name: str, placement: Placement, outcome: RunOutcome) -> dict[str, Any]:
        """Build and append one record (also for runs that never started)."""
        cluster = record.cluster_facts(self.ctx, placement, self.live)
        usage = self.gpu.record() if self.gpu is not None else None
        built = record.build(name, self.ctx, placement, outcome, cluster, gpu_usage=usage)
        results.append_record(self.args.output, built)
        self.records.append(built)
        return built


def check_local_data_root(data_dir: Path, modules: dict[str, ModuleType]) -> None:
    """Refuse a ``--data-dir`` that is not a directory here, before a local cluster starts:
    its workers read the same file system, and each benchmark would otherwise fail on them
    with a worker traceback of its own. A remote cluster's path is the workers' to see."""
    if data_dir.is_dir():
        return
    what = "is not a directory" if data_dir.exists() else "does not exist"
    expected = "; ".join(f"{name}: {benchmarks.layout(module)}" for name, module in modules.items())
    raise DatasetError(f"--data-dir {data_dir} {what}. It is the dataset root the local cluster's workers read, and"
                       f" should hold {expected}. Give the directory that holds these, or leave --data-dir out to"
                       " run on data generated for the profile")


def restrict(config: Any, addresses: list[str], connected: int) -> Any:
    """The config with ``workers`` set to ``addresses`` (see the protocol's optional field)."""
    if (not dataclasses.is_dataclass(config) or isinstance(config, type)
            or "workers" not in {f.name for f in dataclasses.fields(config)}):
        raise WorkloadError(f"the cluster has {connected} workers and this run wants {len(addresses)}, but the"
                            " benchmark's config has no `workers` field to restrict it: scale the cluster instead")
    return dataclasses.replace(config, workers=tuple(addresses))
