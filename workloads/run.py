"""``python -m workloads.run``: run the paper's benchmarks on a Dask cluster and append one
JSON line per run to ``<output>/results.jsonl``.

Where: ``--stack NAME`` | ``--outputs FILE`` | ``--scheduler-address ADDR`` | ``--local``
(default: ``DASK_SCHEDULER_ADDRESS`` when set, else a local cluster). What:
``--benchmark images|taxi|all``, ``--profile smoke|small|reference``, ``--workers 1,2``
(a sweep), ``--device cpu|cuda|auto``, ``--data-dir`` (else the stack's dataset mount, or
data generated with a fixed seed for the local cluster).

Faults: a run survives up to ``--max-lost-workers`` (default 1) workers lost while it runs
(Dask recomputes their work; the taxi benchmark retries its training); one more fails it,
naming the lost workers. A lost scheduler fails the run and ends the sweep. SIGINT
(Ctrl-C) and SIGTERM stop the run the same way: its record says ``interrupted``, with the
phases measured so far. ``--resume`` skips the configurations ``results.jsonl`` already
holds as succeeded (:func:`workloads.results.config_key` says what "the same" means).

Exit codes: 0 all runs succeeded; 1 a run failed; 2 the setup is wrong (bad outputs,
unreachable scheduler, too few workers, failed preflight); 130 interrupted (SIGINT);
143 terminated (SIGTERM).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from contract import ContractError
from workloads import benchmarks, environment, instrumentation, local, preflight, results, summary
from workloads.config import cache_dir
from workloads import endpoint as endpoints
from workloads.exceptions import RunStopped, WorkersLostError, WorkloadError

logger = logging.getLogger("workloads.run")

PROFILES_FILE = Path(__file__).with_name("profiles.yaml")
EXIT_OK, EXIT_FAILED, EXIT_SETUP, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_MAX_LOST_WORKERS = 1  # one loss is Dask's to absorb; a second says something is wrong


def echo_stdout(text: str, error: bool = False) -> None:
    print(text, file=sys.stderr if error else sys.stdout, flush=True)


def load_yaml(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh) or {}


def benchmark_profile(module: ModuleType, profile: str) -> dict[str, Any]:
    """The ``profile`` section of ``workloads/<bench>/profiles.yaml`` (empty if absent)."""
    path = Path(module.__file__).with_name("profiles.yaml")
    return dict(load_yaml(path).get(profile) or {}) if path.exists() else {}


def import_benchmarks() -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Every registered benchmark that imports, and why the others do not."""
    modules, unavailable = {}, {}
    for name in benchmarks.BENCHMARKS:
        try:
            modules[name] = benchmarks.load(name)
        except ImportError as exc:
            unavailable[name] = f"{type(exc).__name__}: {exc}"
    return modules, unavailable


def worker_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected worker counts like 1,2,4, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"worker counts must be >= 1, got {text!r}")
    return counts


def lost_workers_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a worker count >= 0, got {text!r}")
    return value


def build_parser(modules: dict[str, ModuleType], unavailable: dict[str, str]) -> argparse.ArgumentParser:
    profiles = list(load_yaml(PROFILES_FILE))
    parser = argparse.ArgumentParser(
        prog="python -m workloads.run", description=__doc__.split("\n\n")[0],
        epilog="".join(f"benchmark {n!r} is not available here: {why}\n" for n, why in unavailable.items()) or None)
    where = parser.add_argument_group("where (one of; default: DASK_SCHEDULER_ADDRESS if set, else --local)")
    where.add_argument("--stack", metavar="NAME", help="read the outputs of this Pulumi stack (needs the pulumi CLI)")
    where.add_argument("--outputs", metavar="FILE", help="the JSON of `pulumi stack output --json --show-secrets`")
    where.add_argument("--scheduler-address", metavar="ADDR", help="tcp://host:8786")
    where.add_argument("--local", action="store_true", help="start a local cluster sized to this machine")
    what = parser.add_argument_group("what")
    what.add_argument("--benchmark", choices=[*benchmarks.BENCHMARKS, "all"], default="all")
    what.add_argument("--profile", choices=profiles, default="smoke", help="sizes (default: smoke)")
    what.add_argument("--data-dir", metavar="PATH",
                      help="dataset root as the workers see it (dogs/Images/..., taxi/...); default: the"
                           " stack's dataset mount, or generated data for the local cluster")
    what.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto",
                      help="auto: cuda when every worker has it (default)")
    what.add_argument("--workers", type=worker_counts, metavar="N[,N...]",
                      help="worker counts to sweep (default: the profile's)")
    what.add_argument("--output", metavar="DIR", default="results", help="results directory (default: results/)")
    what.add_argument("--wait-timeout", type=float, metavar="SECONDS", help="wait for workers (default: profile's)")
    what.add_argument("--performance-report", action=argparse.BooleanOptionalAction, default=True,
                      help="write distributed's HTML performance report of each run beside the results (default)")
    what.add_argument("--report", action=argparse.BooleanOptionalAction, default=True,
                      help="render <output>/report/report.html at the end (default)")
    what.add_argument("--allocator", choices=local.ALLOCATORS, default="auto",
                      help="local cluster: tcmalloc when installed (auto), or glibc")
    what.add_argument("--dashboard-address", default="127.0.0.1:8787",
                      help="local cluster's dashboard (default: this machine only; :0 for any free port)")
    what.add_argument("--max-lost-workers", type=lost_workers_limit, default=DEFAULT_MAX_LOST_WORKERS,
                      metavar="N", help="fail a run that loses more than N workers while it runs"
                                        f" (default: {DEFAULT_MAX_LOST_WORKERS})")
    what.add_argument("--resume", action="store_true",
                      help="skip the configurations results.jsonl already records as succeeded (same"
                           " benchmark, profile, device, worker count and benchmark options)")
    what.add_argument("-v", "--verbose", action="store_true")
    for module in dict.fromkeys(modules.values()):  # a module registered twice adds its options once
        module.add_arguments(parser)
    return parser


class Runner:
    """One invocation: resolve the endpoint, then for each worker count start/scale or
    restrict, wait, preflight, and run each benchmark, writing a record per run."""

    def __init__(self, args: argparse.Namespace, modules: dict[str, ModuleType], echo=echo_stdout):
        self.args = args
        self.modules = modules
        self.echo = echo
        self.profile = load_yaml(PROFILES_FILE)[args.profile]
        self.records: list[dict[str, Any]] = []
        self.endpoint: endpoints.Endpoint | None = None
        self.cluster = None
        self.client = None
        self.plan: local.LocalPlan | None = None
        self.done = results.succeeded_configs(args.output) if args.resume else {}
        self.scheduler_lost: str | None = None  # why the sweep stopped early
        self.signals = False  # set by main(): signal handlers are installed in the main thread
        self.in_run = False  # a benchmark's run() is executing
        self.abort: str | None = None  # the worker-loss watch's last reason
        self.stops_sent = 0  # SIGINTs sent by stop_run and not yet handled

    # ------------------------------------------------------------------ top level
    def execute(self) -> int:
        args = self.args
        self.endpoint = endpoints.resolve(args.stack, args.outputs, args.scheduler_address, args.local)
        self.echo(f"cluster: {self.endpoint.describe()}")
        data_dir, generated = self.data_root()
        try:
            for count in args.workers or [None]:
                code = self.run_count(count, data_dir, generated)
                if code != EXIT_OK:
                    return code
                if self.scheduler_lost:
                    self.echo(f"error: {self.scheduler_lost}: the sweep stops here", error=True)
                    return EXIT_FAILED
        finally:
            self.close()
        return EXIT_FAILED if any(r["status"] != "succeeded" for r in self.records) else EXIT_OK

    def data_root(self) -> tuple[Path, bool]:
        if self.args.data_dir:
            return Path(self.args.data_dir).expanduser().absolute(), False
        if self.endpoint.data_dir:
            return Path(self.endpoint.data_dir), False
        if self.endpoint.local:
            return cache_dir() / "data" / self.args.profile, True
        raise WorkloadError(f"no --data-dir, and {self.endpoint.source} names no dataset mount: pass --data-dir"
                            " (the dataset root as the workers see it)")

    def run_count(self, count: int | None, data_dir: Path, generated: bool) -> int:
        """Everything for one worker count; returns EXIT_SETUP when the cluster is unfit."""
        want = count or self.profile["workers"]
        if count is None and self.endpoint.expected_workers:  # the profile's size, at most what was deployed
            want = min(want, self.endpoint.expected_workers)
        timeout = self.args.wait_timeout or self.profile.get("wait_timeout_s", 300)
        if self.done and self.args.device in ("cpu", "cuda"):  # known before any cluster starts
            planned = self.plan_for(count).n_workers if self.endpoint.local else want
            if all(self.previous_success(n, m, planned, self.args.device, data_dir)
                   for n, m in self.modules.items()):
                for name, module in self.modules.items():
                    self.say_skipped(name, self.previous_success(name, module, planned, self.args.device,
                                                                 data_dir), planned)
                return EXIT_OK
        started = time.perf_counter()
        try:
            if self.endpoint.local:
                want = self.start_local(count)
            elif self.client is None:
                self.client = endpoints.connect(self.endpoint.scheduler_address, self.endpoint.security)
                self.echo(f"dashboard: {self.dashboard()}")
            self.scale(want)
            connected = endpoints.wait_for_workers(self.client, want, timeout, echo=self.echo)
            used = connected[:want]
            packages = [p for m in self.modules.values() for p in m.REQUIRED_PACKAGES]
            checked = preflight.check(self.client, connected, packages, self.args.device)
        except WorkloadError as exc:
            self.echo(f"error: {exc}", error=True)
            for name in self.modules:
                self.write(name, status="failed", count=want, error=str(exc),
                           phases={"setup": time.perf_counter() - started})
            return EXIT_SETUP
        except KeyboardInterrupt as exc:
            for name in self.modules:
                self.write(name, status="interrupted", count=want, error=stop_reason(exc),
                           phases={"setup": time.perf_counter() - started})
            raise
        self.echo(f"preflight: {len(connected)} worker(s) ok, device {checked.device}")
        for name, module in self.modules.items():
            self.run_one(name, module, used, connected, checked, data_dir, generated)
            if self.scheduler_lost:
                break
        return EXIT_OK

    # ------------------------------------------------------------------ resume
    def previous_success(self, name: str, module: ModuleType, count: int, device: str,
                         data_dir: Path) -> dict[str, Any] | None:
        """The succeeded record of this configuration (see ``results.config_key``), if
        ``--resume`` found one."""
        if not self.done:
            return None
        try:
            config = module.make_config(self.args, benchmark_profile(module, self.args.profile), data_dir, device)
        except Exception:  # a config that cannot be made is reported by the run itself
            return None
        options = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else None
        key = results.config_key(name, {"profile": self.args.profile, "device": device, "workers": count,
                                        "benchmark": options})
        return self.done.get(key)

    def say_skipped(self, name: str, record: dict[str, Any], count: int) -> None:
        self.echo(f"{name}: {count} worker(s), profile {self.args.profile}: skipped (--resume), succeeded"
                  f" at {record.get('started_at', '?')}")

    # ------------------------------------------------------------------ one run
    def run_one(self, name: str, module: ModuleType, used: list[str], connected: list[str],
                checked: preflight.Preflight, data_dir: Path, generated: bool) -> None:
        args = self.args
        done = self.previous_success(name, module, len(used), checked.device, data_dir)
        if done is not None:
            self.say_skipped(name, done, len(used))
            return
        timer = results.PhaseTimer()
        started_at = results.utc_now()
        config, metrics, artifacts = None, {}, {}
        status, error = "succeeded", None
        watch = inst = None
        self.echo(f"{name}: {len(used)} worker(s), profile {args.profile}, device {checked.device}")
        try:
            section = benchmark_profile(module, args.profile)
            if generated:
                module.generate(data_dir, section)
            config = module.make_config(args, section, data_dir, checked.device)
            if len(used) < len(connected):
                config = restrict(config, used, len(connected))
            watch = endpoints.WorkerWatch(self.client, args.max_lost_workers,
                                          used if len(used) < len(connected) else None, self.stop_run)
            run_id = instrumentation.make_run_id(name, len(used), started_at)
            with instrumentation.instrument(self.client, args.output, run_id,
                                            performance_report=args.performance_report) as inst, watch:
                self.in_run = True
                try:
                    metrics = module.run(self.client, config, timer)
                finally:
                    self.in_run = False
            if watch.exceeded:  # the run finished before the stop reached it
                raise WorkersLostError(watch.exceeded)
        except KeyboardInterrupt as exc:
            status, error = getattr(exc, "status", "interrupted"), stop_reason(exc)
            if status == "interrupted":
                raise
        except BaseException as exc:
            status, error = "failed", f"{type(exc).__name__}: {exc}"
            logger.debug("run failed", exc_info=True)
            if self.client is not None and not self.endpoint.local and self.client.status != "running":
                self.scheduler_lost = f"lost the scheduler at {endpoints.redact(self.endpoint.scheduler_address)}"
                error = f"{self.scheduler_lost} ({error.splitlines()[0]})"
            if not isinstance(exc, Exception):
                raise
        finally:
            if inst is not None:  # utilization and the performance report, also after a failure
                artifacts.update(inst.artifacts)
                if inst.metrics:
                    metrics = {**(metrics or {}), "utilization": inst.metrics}
            record = self.write(name, status=status, count=len(used), error=error, timer=timer,
                                config=config, metrics=metrics, started_at=started_at, used=used,
                                connected=connected, checked=checked, data_dir=data_dir,
                                generated=generated, artifacts=artifacts,
                                lost=watch.losses() if watch is not None else None)
            self.echo(f"{name}: {status} in {summary.seconds(record):.1f} s"
                      + (f": {error}" if error else ""), error=bool(error))

    def write(self, name: str, *, status: str, count: int, error: str | None = None,
              timer: results.PhaseTimer | None = None, phases: dict[str, float] | None = None,
              config: Any = None, metrics: dict | None = None, started_at: str | None = None,
              used: list[str] | None = None, connected: list[str] | None = None,
              checked: preflight.Preflight | None = None, data_dir: Path | None = None,
              generated: bool = False, artifacts: dict[str, str] | None = None,
              lost: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Build and append one record (also for runs that never started)."""
        used, connected = used or [], connected or []
        probes = checked.workers if checked else {}
        client_facts = checked.client if checked else environment.client_facts()
        cluster: dict[str, Any] = {"kind": "local" if self.endpoint.local else "remote", "workers": count}
        if self.client is not None and used and self.client.status == "running":  # a lost scheduler would hang it
            with contextlib.suppress(Exception):
                cluster = environment.record_cluster(
                    self.client, used, connected, probes, cluster["kind"], self.dashboard(),
                    self.plan.describe() if self.plan and self.endpoint.local else None)
        if lost is not None:
            cluster["workers_lost"] = lost
        record = results.make_record(
            benchmark=name, status=status,
            config={"profile": self.args.profile, "workers": count,
                    "device": checked.device if checked else self.args.device,
                    "device_requested": self.args.device,
                    "max_lost_workers": self.args.max_lost_workers,
                    "endpoint": self.endpoint.kind, "data_dir": str(data_dir) if data_dir else None,
                    "data_generated": generated,
                    "benchmark": dataclasses.asdict(config) if dataclasses.is_dataclass(config) else None},
            phases=timer.phases if timer else (phases or {}), metrics=metrics or {},
            versions=environment.record_versions(probes, used, client_facts),
            hardware=environment.record_hardware(probes, used, client_facts),
            cluster=cluster, started_at=started_at or results.utc_now(), error=error,
            artifacts=artifacts, unfinished=timer.unfinished if timer else None)
        results.append_record(self.args.output, record)
        self.records.append(record)
        return record

    # ------------------------------------------------------------------ cluster
    def start_local(self, count: int | None) -> int:
        """(Re)start the local cluster with ``count`` workers (the profile's, capped to the
        machine, when None); returns the number started."""
        want = self.plan_for(count)
        if self.plan == want and self.cluster is not None:
            return want.n_workers
        self.close()
        self.plan = want
        self.echo(f"starting a local cluster: {want.n_workers} worker(s) x {want.threads_per_worker} thread(s),"
                  f" {want.allocator}" + (f", {want.gpus} GPU(s)" if want.gpus else ""))
        from distributed import Client

        self.cluster = local.start(want, dashboard_address=self.args.dashboard_address)
        self.client = Client(self.cluster)
        self.echo(f"dashboard: {self.dashboard()}")
        return want.n_workers

    def plan_for(self, count: int | None) -> local.LocalPlan:
        return local.plan(count or self.profile["workers"], self.args.device, self.args.allocator, cap=count is None)

    def scale(self, want: int) -> None:
        """Remote clusters: scale where a cluster object exists (it does not for a bare
        scheduler address: then the run is restricted to ``want`` workers instead)."""
        cluster = None if self.endpoint.local else getattr(self.client, "cluster", None)
        if cluster is not None and hasattr(cluster, "scale"):
            cluster.scale(want)

    def dashboard(self) -> str:
        if self.cluster is not None:
            return self.cluster.dashboard_link
        return self.endpoint.dashboard_url or getattr(self.client, "dashboard_link", "") or ""

    def close(self) -> None:
        import asyncio

        for thing in (self.client, self.cluster):
            if thing is not None:
                with contextlib.suppress(Exception, asyncio.CancelledError):  # a lost scheduler cancels
                    thing.close()
        self.client = self.cluster = None

    # ------------------------------------------------------------------ stopping a run
    def stop_run(self, reason: str) -> None:
        """The worker-loss watch's verdict (event-loop thread): stop the run in the main
        thread the way Ctrl-C would, where signal handlers are installed."""
        self.abort = reason
        if self.signals:
            self.stops_sent += 1
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def on_signal(self, signum: int, frame: Any) -> None:
        """SIGINT and SIGTERM: stop the run (``interrupted``). A SIGINT sent by
        :meth:`stop_run` fails it instead, naming the lost workers."""
        if signum == signal.SIGINT and self.stops_sent:
            self.stops_sent -= 1
            if self.in_run:
                raise RunStopped(self.abort, status="failed", exit_code=EXIT_FAILED)
            return  # the run already ended: the watch's verdict fails it all the same
        raise RunStopped(f"interrupted ({signal.Signals(signum).name})", exit_code=128 + signum)


def restrict(config: Any, addresses: list[str], connected: int) -> Any:
    """The config with ``workers`` set to ``addresses`` (see the protocol's optional field)."""
    if not dataclasses.is_dataclass(config) or "workers" not in {f.name for f in dataclasses.fields(config)}:
        raise WorkloadError(f"the cluster has {connected} workers and this run wants {len(addresses)}, but the"
                            " benchmark's config has no `workers` field to restrict it: scale the cluster instead")
    return dataclasses.replace(config, workers=tuple(addresses))


def stop_reason(exc: BaseException) -> str:
    return exc.reason if isinstance(exc, RunStopped) else "interrupted (SIGINT)"


@contextlib.contextmanager
def signal_handlers(runner: Runner):
    """SIGINT and SIGTERM go to ``runner.on_signal`` while the runner runs (main thread
    only: elsewhere Python cannot install handlers, and Ctrl-C stays KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, runner.on_signal) for number in (signal.SIGINT, signal.SIGTERM)}
    runner.signals = True
    try:
        yield
    finally:
        runner.signals = False
        for number, handler in previous.items():
            signal.signal(number, handler)


def main(argv: list[str] | None = None) -> int:
    modules, unavailable = import_benchmarks()
    args = build_parser(modules, unavailable).parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    for noisy, level in (("distributed", logging.WARNING), ("tornado", logging.WARNING), ("bokeh", logging.ERROR)):
        logging.getLogger(noisy).setLevel(level)
    names = list(benchmarks.BENCHMARKS) if args.benchmark == "all" else [args.benchmark]
    missing = [n for n in names if n not in modules]
    if missing:
        print("error: " + "; ".join(f"benchmark {n!r} is not available: {unavailable[n]}" for n in missing),
              file=sys.stderr)
        return EXIT_SETUP

    runner = Runner(args, {n: modules[n] for n in names})
    code = EXIT_SETUP
    try:
        with signal_handlers(runner):
            code = runner.execute()
    except (ContractError, WorkloadError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = EXIT_SETUP
    except KeyboardInterrupt as exc:
        print(stop_reason(exc), file=sys.stderr)
        code = getattr(exc, "exit_code", EXIT_INTERRUPTED)
    finally:
        if runner.records:
            headlines = {n: getattr(m, "HEADLINE_METRICS", None) for n, m in runner.modules.items()}
            print("\n" + summary.render(runner.records, headlines))
            print(f"\n{len(runner.records)} record(s) appended to {Path(args.output) / results.RESULTS_FILE}")
            if args.report:
                print(render_report(args.output))
    return code


def render_report(output: str) -> str:
    """Render the report of everything in ``output``; a report problem never changes the
    exit code (the records are already safe on disk)."""
    try:
        from workloads.report import render

        return f"report: {render(output)}"
    except Exception as exc:  # noqa: BLE001
        logger.debug("report failed", exc_info=True)
        return f"report: not rendered ({type(exc).__name__}: {exc}); try python -m workloads.report {output}"


if __name__ == "__main__":
    sys.exit(main())
