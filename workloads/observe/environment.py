"""Facts for the record: library versions, hardware, the probe the preflight runs on
every worker, and what the runner asks of the scheduler.

The functions here also run on workers and schedulers that may not have this project
installed (a deployed cluster runs the stock Dask image; a user's own cluster has only
Dask), so the module is pickled by value: it uses the standard library and imports
everything else inside functions.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import socket
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import cloudpickle

# distribution names to report where installed (import name -> distribution candidates)
REPORTED = {
    "dask": ("dask",), "distributed": ("distributed",), "numpy": ("numpy",), "pandas": ("pandas",),
    "pyarrow": ("pyarrow",), "torch": ("torch",), "torchvision": ("torchvision",), "pillow": ("pillow",),
    "xgboost": ("xgboost", "xgboost-cpu"), "dask_cuda": ("dask-cuda",),
    "cudf": ("cudf-cu13", "cudf-cu12", "cudf"), "dask_cudf": ("dask-cudf-cu13", "dask-cudf-cu12", "dask-cudf"),
    "cloudpickle": ("cloudpickle",), "tornado": ("tornado",), "msgpack": ("msgpack",),
}


def package_versions() -> dict[str, str]:
    """Python and the installed versions of the packages that matter here (dask and
    distributed as actually imported)."""
    import dask
    import distributed

    versions = {"python": platform.python_version()}
    for name, distributions in REPORTED.items():
        for distribution in distributions:
            try:
                versions[name] = importlib.metadata.version(distribution)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    versions["dask"] = dask.__version__
    versions["distributed"] = distributed.__version__
    torch = sys.modules.get("torch")
    if torch is not None:
        versions["torch_cuda"] = torch.version.cuda
    return versions


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@contextmanager
def patched_environ(changes: dict[str, str | None]) -> Iterator[None]:
    """Apply ``changes`` to this process's environment (None unsets), then restore what
    was there before."""
    saved = {name: os.environ.get(name) for name in changes}
    try:
        _apply(changes)
        yield
    finally:
        _apply(saved)


def _apply(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def usable_cores() -> int:
    """Cores this process may use: ``dask.system.cpu_count()`` (the CPU affinity set and a
    cgroup quota; a fractional quota rounds up, as Dask's own LocalCluster sizing does)."""
    from dask.system import cpu_count

    return cpu_count()


def gpus() -> list[dict[str, Any]]:
    """NVIDIA GPUs this process can see (NVML; honours CUDA_VISIBLE_DEVICES only loosely)."""
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return []
    try:
        found = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            found.append({"name": name.decode() if isinstance(name, bytes) else name,
                          "memory_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)})
        return found
    finally:
        pynvml.nvmlShutdown()


def host_facts() -> dict[str, Any]:
    """This machine: host name, CPU model and counts, memory, GPUs."""
    try:
        import psutil

        memory = int(psutil.virtual_memory().total)
    except ImportError:
        memory = None
    return {"host": socket.gethostname(), "platform": platform.platform(), "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(), "usable_cores": usable_cores(), "memory_bytes": memory,
            "gpus": gpus()}


def probe(packages: Iterable[str], device: str, dask_worker=None) -> dict[str, Any]:
    """What the preflight needs from one worker (run with ``client.run``): versions,
    which of ``packages`` fail to import and why, whether the project imports, the CUDA
    devices torch sees (when torch is among ``packages``), and the host's facts.
    ``device`` is kept for checks that only matter for one device."""
    missing = {}
    for name in packages:
        try:
            importlib.import_module(name)
        except Exception as exc:  # ImportError, or a broken install raising anything
            missing[name] = f"{type(exc).__name__}: {exc}"
    facts = {"versions": package_versions(), "missing": missing, "project_importable": project_importable(),
             "hardware": host_facts(), "torch_cuda": None}
    if "torch" in packages and "torch" not in missing:
        import torch

        facts["torch_cuda"] = bool(torch.cuda.is_available())
        # the device a worker's "cuda" means (dask-cuda puts each worker's own GPU first)
        facts["cuda_device"] = torch.cuda.get_device_name(0) if facts["torch_cuda"] else None
    if dask_worker is not None:
        facts["name"] = str(dask_worker.name)
        facts["nthreads"] = dask_worker.state.nthreads
    return facts


def project_importable() -> bool:
    """Whether this process imports this project (a worker runs its tasks; the scheduler
    unpickles the task graphs, whose functions are the project's)."""
    try:
        importlib.import_module("workloads.images")
        return True
    except ImportError:
        return False


def scheduler_worker_ttl(dask_scheduler=None) -> float | None:
    """On the scheduler (``client.run_on_scheduler``): the worker-ttl its TTL check applies,
    never under 10 heartbeats (distributed scheduler.py ``check_worker_ttl``); None: no
    check at all."""
    from distributed.scheduler import heartbeat_interval

    ttl = dask_scheduler.worker_ttl
    return None if not ttl else max(ttl, 10 * heartbeat_interval(len(dask_scheduler.workers)))


def client_facts() -> dict[str, Any]:
    return {"versions": package_versions(), "hardware": host_facts()}


# ----------------------------------------------------------------------------- for the record
def record_versions(probes: dict[str, dict[str, Any]], used: list[str], client: dict[str, Any]) -> dict[str, Any]:
    """The versions on the workers that ran (the preflight made dask/distributed equal
    everywhere), plus the client's Python where it differs."""
    versions = dict(probes[used[0]]["versions"]) if used and used[0] in probes else dict(client["versions"])
    if client["versions"]["python"] != versions.get("python"):
        versions["client_python"] = client["versions"]["python"]
    return versions


def record_hardware(probes: dict[str, dict[str, Any]], used: list[str], client: dict[str, Any]) -> dict[str, Any]:
    """CPU model and count, GPU names over the hosts of the workers that ran."""
    hosts: dict[str, dict[str, Any]] = {}
    gpu_names: list[str] = []
    for address in used:
        found = probes.get(address, {})
        facts = found.get("hardware", {})
        hosts.setdefault(facts.get("host", address), facts)
        if found.get("cuda_device"):
            gpu_names.append(found["cuda_device"])
    first = next(iter(hosts.values()), client["hardware"])
    return {
        "cpu_model": first.get("cpu_model"),
        "cpu_count": sum(h.get("cpu_count") or 0 for h in hosts.values()),
        "usable_cores": sum(h.get("usable_cores") or 0 for h in hosts.values()),
        "gpus": gpu_names or [g["name"] for h in hosts.values() for g in h.get("gpus", [])],
        "hosts": [{k: h.get(k) for k in ("host", "cpu_model", "cpu_count", "usable_cores", "memory_bytes")}
                  | {"gpus": [g["name"] for g in h.get("gpus", [])]} for h in hosts.values()],
        "client": {k: client["hardware"].get(k) for k in ("host", "cpu_model", "cpu_count")},
    }


def record_cluster(client, used: list[str], connected: list[str], probes: dict[str, dict[str, Any]],
                   kind: str, dashboard: str = "", local_plan: dict[str, Any] | None = None) -> dict[str, Any]:
    """Workers, threads and GPUs of the run; the scheduler address without credentials."""
    from workloads.cluster.endpoint import redact

    info = client.scheduler_info(n_workers=-1)["workers"]
    threads = [info[a]["nthreads"] for a in used if a in info]
    cluster = {
        "kind": kind,
        "scheduler": redact(client.scheduler.address),
        "dashboard": redact(dashboard),
        "workers": len(used),
        "workers_connected": len(connected),
        "threads": sum(threads),
        "threads_per_worker": threads[0] if len(set(threads)) == 1 else threads,
        "gpus": _gpus(probes, used),
        "memory_limit_bytes": sum(int(info[a].get("memory_limit") or 0) for a in used if a in info),
        "worker_addresses": list(used),
    }
    if local_plan is not None:
        cluster["local"] = local_plan
    return cluster


# Workers and the scheduler of a deployed cluster may lack this project: ship these functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _gpus(probes: dict[str, dict[str, Any]], used: list[str]) -> int:
    """One per worker whose torch sees CUDA; without torch, the GPUs of the hosts (NVML)."""
    with_cuda = sum(1 for a in used if probes.get(a, {}).get("cuda_device"))
    if with_cuda:
        return with_cuda
    per_host = {}
    for address in used:
        hardware = probes.get(address, {}).get("hardware", {})
        per_host[hardware.get("host", address)] = len(hardware.get("gpus", []))
    return sum(per_host.values())
