"""The Dask side of the GPU benchmark: the real ``workloads.images.benchmark.run`` on local
clusters made by the runner's own ``workloads.cluster.local``.

* :class:`GpuCluster`: one worker for the GPU (``LocalCUDACluster`` where dask-cuda is
  installed, else a ``LocalCluster`` of one worker: one worker per GPU either way), its
  tasks decoding on the GPU ahead of the model (``--decode gpu``, ``prefetch``);
* :func:`cpu_scaling`: the paper's figure 9 on the CPU: the CPU path with 1, 2, 4, 8
  workers of 2 threads each, the same number of images per worker (each worker does the
  same work, so images/s against 1 worker's is the scaling).
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from workloads.runs.results import PhaseTimer


class GpuCluster:
    """A started one-worker cluster and client for the GPU runs (a context manager)."""

    def __init__(self, threads: int, device: str = "cuda"):
        from workloads.cluster import local

        self.plan = local.plan(1, device, threads_per_worker=threads)
        self._stack = contextlib.ExitStack()
        self.client: Any = None  # distributed.Client, made on __enter__

    def __enter__(self) -> GpuCluster:
        from distributed import Client

        from workloads.cluster import local

        cluster = self._stack.enter_context(local.start(self.plan, dashboard_address=":0"))
        self.client = self._stack.enter_context(Client(cluster))
        self.client.wait_for_workers(1)
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def run(self, config) -> dict:
        """One benchmark run's metrics (``images_per_second``: the ``infer`` phase)."""
        from workloads.images import benchmark

        timer = PhaseTimer()
        metrics = benchmark.run(self.client, config, timer)
        return {**metrics, "phases": dict(timer.phases)}

    def decoder_probe(self, device: str = "cuda") -> dict:
        """What the worker decodes with (the preflight's probe, on the real worker)."""
        from workloads.images import decoders

        return next(iter(self.client.run(decoders.probe, device).values()))


def images_config(dogs: str, model: str, device: str, precision: str, forward_batch: int, task_batches: int,
                  graph: str, prefetch: int, limit: int | None = None, agreement: int = 0):
    from workloads.images.benchmark import ImagesConfig

    return ImagesConfig(dataset_dir=dogs, model=model, device=device, precision=precision,
                        batch_size=forward_batch * task_batches, forward_batch=forward_batch, decode="gpu",
                        prefetch=prefetch, graph=graph, limit=limit, agreement_sample=agreement)


def cpu_scaling(dogs: str, model: str, workers: Sequence[int], threads: int, images_per_worker: int,
                repeats: int, precision: str = "fp32", batch: int = 32, echo: Callable[[str], None] = print) -> dict:
    """{workers: [images/s per repetition]} and each run's facts, for the CPU path
    (``--decode cpu``, the runner's default CPU settings) on ``n`` workers x ``threads``."""
    from distributed import Client

    from workloads.cluster import local
    from workloads.images.benchmark import ImagesConfig, run

    rates: dict[int, list[float]] = {}
    facts: dict[int, dict] = {}
    for count in workers:
        plan = local.plan(count, "cpu", threads_per_worker=threads)
        config = ImagesConfig(dataset_dir=dogs, model=model, device="cpu", precision=precision, batch_size=batch,
                              forward_batch=batch, decode="cpu", limit=images_per_worker * count, agreement_sample=0)
        started = time.perf_counter()
        with local.start(plan, dashboard_address=":0") as cluster, Client(cluster) as client:
            client.wait_for_workers(count)
            run(client, dataclasses.replace(config, limit=batch * count), PhaseTimer())  # warm-up: one task each
            rates[count] = []
            for _ in range(repeats):
                metrics = run(client, config, PhaseTimer())
                rates[count].append(metrics["images_per_second"])
        facts[count] = {"cluster": plan.describe(), "images": metrics["images_scored"],
                        "failed": metrics["images_failed"], "worker_seconds": metrics["worker_seconds"],
                        "wall_seconds": round(time.perf_counter() - started, 1)}
        echo(f"cpu path {count} x {threads} threads: {', '.join(f'{r:.1f}' for r in rates[count])} img/s")
    return {"rates": rates, "facts": facts, "config": dataclasses.asdict(config) | {"limit": "images_per_worker x n"}}
