"""What bounds the GPU pipeline when a goal is missed: the torch profiler over the same
task code the Dask worker runs (``overlap.classify_files``: reads, decoder threads, the
model), ``threads`` tasks at once, in this process. The summary names the top operators
by device time and by host time, how busy the GPU is (kernel time / wall time) and how
long the model thread waits for decoded batches; the full tables go to a text file."""
from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def profile_pipeline(plugin, images_dir: str, tasks: Sequence[Sequence[str]], forward_batch: int, device: str,
                     depth: int, threads: int, precision: str, table_path: Path, rows: int = 15) -> dict:
    """Run ``tasks`` under the profiler; returns the summary (and writes the tables)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from workloads.images import overlap

    def one(files):
        return overlap.classify_files(plugin.predict, images_dir, files, "imagenet", forward_batch, device, depth,
                                      precision)

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    config, all_threads = _all_threads_config()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, [tasks[0][:forward_batch]] * threads))  # warm-up outside the profile
        with profile(activities=activities, experimental_config=config) as prof:
            started = time.perf_counter()
            outcomes = list(pool.map(one, tasks))
            if device == "cuda":
                torch.cuda.synchronize()
            wall = time.perf_counter() - started
    events = prof.key_averages()
    device_key = _device_key(events) if device == "cuda" else None
    tables = []
    if device_key:
        tables.append(f"# top {rows} by {device_key}\n" + events.table(sort_by=device_key, row_limit=rows))
    tables.append(f"# top {rows} by self_cpu_time_total\n" + events.table(sort_by="self_cpu_time_total",
                                                                          row_limit=rows))
    table_path.write_text("\n\n".join(tables) + "\n", encoding="utf-8")
    images = sum(len(o.files) for o in outcomes)
    busy = sum(getattr(e, device_key) for e in events if _is_kernel(e)) / 1e6 if device_key else None
    return {
        "images": images,
        "wall_seconds": round(wall, 3),
        "images_per_second_under_profiler": round(images / wall, 1) if wall else None,
        "gpu_kernel_busy_fraction": round(busy / wall, 3) if busy is not None and wall else None,
        "model_thread_wait_for_decode_seconds": round(sum(o.wait_seconds for o in outcomes), 3),
        "forward_seconds": round(sum(o.forward_seconds for o in outcomes), 3),
        "decode_seconds": round(sum(o.decode_seconds for o in outcomes), 3),
        "top_device_ops": _top(events, device_key, rows) if device_key else [],
        "top_host_ops": _top(events, "self_cpu_time_total", rows),
        "tables": str(table_path),
        "host_ops_of_all_threads": all_threads,
    }


def _all_threads_config():
    """The profiler records host operators of the thread that starts it only, unless told
    to record all threads (``_ExperimentalConfig(profile_all_threads=True)``, torch 2.7+):
    the tasks and decoder threads here are other threads."""
    try:
        from torch._C._profiler import _ExperimentalConfig

        return _ExperimentalConfig(profile_all_threads=True), True
    except (ImportError, TypeError):
        return None, False


def _device_key(events) -> str | None:
    """The attribute that holds device time (``self_device_time_total`` in torch 2.4 and later,
    ``self_cuda_time_total`` in older versions)."""
    for key in ("self_device_time_total", "self_cuda_time_total"):
        if events and hasattr(events[0], key):
            return key
    return None


def _is_kernel(event) -> bool:
    kind = str(getattr(event, "device_type", ""))
    return "CUDA" in kind and not getattr(event, "is_user_annotation", False)


def _top(events, key: str, rows: int) -> list[dict]:
    ranked = sorted(events, key=lambda e: getattr(e, key), reverse=True)[:rows]
    return [{"op": e.key, "calls": e.count, "ms": round(getattr(e, key) / 1e3, 2)} for e in ranked]
