"""Before any benchmark runs: every worker has the client's and scheduler's dask and
distributed, can import what the benchmarks need, and has the device asked for; the
scheduler can import this project (it unpickles the task graphs, whose functions are the
project's). Workers or a scheduler that lack the project get it shipped.

All problems are gathered into ONE :class:`PreflightError` that names each worker and
what it lacks, e.g.::

    preflight failed on 1 of 2 workers:
      tcp://10.0.3.7:40123 (dask-worker-1): missing package 'xgboost' (ModuleNotFoundError: ...)
"""
from __future__ import annotations

import importlib.metadata
import logging
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workloads.cluster.endpoint import redact
from workloads.core.errors import PreflightError
from workloads.observe import environment

if TYPE_CHECKING:
    from workloads.runs.benchmarks import Hook

logger = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the workloads package
DISTRIBUTION = "dask-tkg"
_WHEEL_SOURCES = ("pyproject.toml", "README.md", "workloads", "bench")  # what the wheel is built from


@dataclass(frozen=True)
class Preflight:
    """What the preflight found: the device every worker will use, and per-worker facts."""

    device: str  # cpu | cuda
    workers: dict[str, dict[str, Any]] = field(default_factory=dict)  # address -> probe facts
    client: dict[str, Any] = field(default_factory=dict)
    scheduler_versions: dict[str, str] = field(default_factory=dict)
    shipped_project: bool = False


def check(client, workers: Iterable[str], packages: Iterable[str], device: str = "cpu",
          ship: bool = True, hooks: Iterable[Hook] = ()) -> Preflight:
    """Probe ``workers`` and raise PreflightError listing every problem; ``device`` may be
    ``auto`` (resolved to cuda only when every worker has it). With ``ship``, workers
    or a scheduler that cannot import this project get it with ``client.upload_file``
    (which gives it to the scheduler and every worker). ``hooks`` are the benchmarks' own
    checks (their ``preflight``, :mod:`workloads.runs.benchmarks`), run once the common
    ones pass, on the resolved device."""
    workers = sorted(workers)
    packages = tuple(dict.fromkeys(packages))
    if device not in ("cpu", "cuda", "auto"):
        raise PreflightError(f"device must be cpu, cuda or auto, got {device!r}")
    facts = client.run(environment.probe, packages, device, workers=workers)
    scheduler_has_project = on_scheduler(client, environment.project_importable)
    shipped = False
    lacking = sum(not f["project_importable"] for f in facts.values())
    if ship and (lacking or not scheduler_has_project):
        logger.info("shipping the workloads package to %d worker(s)%s that lack it", lacking,
                    "" if scheduler_has_project else " and the scheduler")
        ship_project(client)
        shipped = True
        facts = client.run(environment.probe, packages, device, workers=workers)
        scheduler_has_project = on_scheduler(client, environment.project_importable)
    mine = environment.client_facts()
    scheduler, problems = version_problems(client, workers)
    if not scheduler_has_project:  # it unpickles the task graphs, whose functions are the project's
        problems.setdefault("scheduler", []).append(
            "cannot import the workloads package (install it, or let the runner ship it)")
    for address, found in sorted(facts.items()):
        issues = problems.setdefault(address, [])
        for package, reason in found["missing"].items():
            issues.append(f"missing package {package!r} ({reason})")
        if not found["project_importable"]:
            issues.append("cannot import the workloads package (install it, or let the runner ship it)")
        if device == "cuda" and not _has_cuda(found, packages):
            issues.append("device cuda requested but no CUDA device"
                          + (" (torch.cuda.is_available() is False)" if "torch" in packages else " (no GPU via NVML)"))
    resolved = device
    if device == "auto":
        resolved = "cuda" if all(_has_cuda(f, packages) for f in facts.values()) else "cpu"
    for hook in hooks:
        if any(problems.values()):
            break
        for address, found in hook(client, workers, facts, resolved).items():
            problems.setdefault(address, []).extend(found)
    problems = {k: v for k, v in problems.items() if v}
    if problems:
        failed = [k for k in problems if k != "scheduler"]
        lines = [f"preflight failed on {len(failed)} of {len(workers)} workers"
                 + (" and the scheduler" if "scheduler" in problems else "") + ":"]
        for address, issues in problems.items():
            where = f"scheduler {redact(client.scheduler.address)}" if address == "scheduler" else \
                _label(address, facts.get(address))
            lines.append(f"  {where}: " + "; ".join(issues))
        raise PreflightError("\n".join(lines))
    return Preflight(resolved, dict(sorted(facts.items())), mine, scheduler, shipped)


def on_scheduler(client, function, *args):
    """``client.run_on_scheduler(function, *args)``; a scheduler that cannot import what
    unpickling or running ``function`` needs is a one-line PreflightError naming the
    scheduler and the module (the runner's own calls are pickled by value, see
    :mod:`workloads.observe.environment`, and need nothing of this project there)."""
    try:
        return client.run_on_scheduler(function, *args)
    except ImportError as exc:
        missing = f"missing module {exc.name!r}" if exc.name else "an import failed"
        reason = (str(exc).splitlines() or [""])[0]
        raise PreflightError(f"preflight failed on the scheduler {redact(client.scheduler.address)}: {missing}"
                             f" ({type(exc).__name__}: {reason})") from None


AGREEING_PACKAGES = ("dask", "distributed")  # must be the client's on the scheduler and every worker


def version_problems(client, workers: list[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The scheduler's package versions, and per place (``scheduler`` or a worker address)
    each package of :data:`AGREEING_PACKAGES` whose version differs from the client's, from
    distributed's own ``Client.get_versions(check=True)`` (whose mismatch table it warns)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the same mismatches are in the PreflightError, per worker
        found = client.get_versions(check=True)
    mine = found["client"]["packages"]
    scheduler = found["scheduler"]["packages"]
    problems: dict[str, list[str]] = {}
    for name in AGREEING_PACKAGES:
        if scheduler.get(name) != mine.get(name):
            problems.setdefault("scheduler", []).append(f"{name} {scheduler.get(name)} != client {mine.get(name)}")
    for address in workers:
        theirs = (found["workers"].get(address) or {}).get("packages", {})
        for name in AGREEING_PACKAGES:
            if theirs.get(name) != mine.get(name):
                problems.setdefault(address, []).append(
                    f"{name} {theirs.get(name)} != client {mine.get(name)} / scheduler {scheduler.get(name)}")
    return scheduler, problems


def ship_project(client) -> None:
    """Give every worker (also those that join later) this project's package, as
    ``upload_file`` of its wheel, which workers put on ``sys.path``."""
    folder = Path(tempfile.mkdtemp(prefix="dask-tkg-ship-"))
    client.upload_file(str(project_wheel(folder)))


def project_wheel(folder: Path) -> Path:
    """The package as an importable archive in ``folder``: the wheel of the installed
    distribution (rebuilt from its own RECORD), or the wheel pip builds from the checkout's
    pyproject.toml. Named ``.zip``: ``upload_file`` imports .zip/.egg archives, and a pure
    Python wheel is one."""
    installed = _installed_files()
    target = folder / f"{DISTRIBUTION.replace('-', '_')}.zip"
    if installed is not None:
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            for source, name in installed:
                zf.write(source, name)
        return target
    source = folder / "source"  # a copy: setuptools writes build/ and egg-info beside the sources
    root = PACKAGE_DIR.parent
    shutil.copytree(root, source, ignore=lambda d, names: [n for n in names if Path(d) == root
                                                            and n not in _WHEEL_SOURCES])
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "--quiet", "--wheel-dir", str(folder), str(source)],
                           capture_output=True, text=True, timeout=300, check=False)
    wheels = sorted(folder.glob("*.whl"))
    if built.returncode != 0 or not wheels:
        raise PreflightError("could not build this project's wheel to ship to the workers: "
                             + (built.stderr.strip().splitlines() or ["no wheel written"])[-1])
    wheels[-1].rename(target)
    return target


def _installed_files() -> list[tuple[Path, str]] | None:
    """(file, name in the wheel) of the installed distribution whose ``workloads`` is the
    one running now; None when running from a checkout."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    if Path(str(dist.locate_file("workloads"))).resolve() != PACKAGE_DIR:
        return None
    files = [(Path(str(dist.locate_file(f))), str(f)) for f in dist.files or []
             if f.parts[0] in ("workloads", "bench") and f.suffix != ".pyc"]
    # metadata left in a checkout by a build lists the files of that time, not of now
    return files if all(source.is_file() for source, _ in files) else None


def _has_cuda(found: dict[str, Any], packages: tuple[str, ...]) -> bool:
    if "torch" in packages:
        return bool(found.get("torch_cuda"))
    return bool(found["hardware"]["gpus"])


def _label(address: str, found: dict[str, Any] | None) -> str:
    name = (found or {}).get("name")
    return f"{address} (name {name})" if name and name != address else address
