"""The limits the GPU pipeline is held to, measured in this process on the same GPU and
the same files as the Dask run:

* model-only: ``ModelPlugin.predict`` (the workers' own model holder: batch norm folded,
  channels-last, autocast, the top-k back on the host) on a batch already decoded on the
  device, per precision, batch size and graph mode (:func:`model_sweep`);
* decode-only per backend: decode + resize + crop + normalise of preloaded file bytes by
  one decoder backend (the hardware engines, the CUDA cores, torchvision's nvJPEG)
  (:func:`backend_rate`), and by every CPU core at once (one process per core)
  (:func:`cpu_cores_rate`);
* decode-only as the pipeline runs it: reads, the worker's decoder chain and the
  prefetch threads, ``threads`` tasks at once as on the Dask worker, no model
  (:func:`pipeline_decode_rate`).
"""
from __future__ import annotations

import logging
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

logger = logging.getLogger("bench.gpu")

GRAPH_PREFERENCE = ("eager", "cudagraph", "compile", "compile-cudagraphs")  # the simpler, the better, if as fast
SAME_SPEED = 0.03  # within 3 % of the fastest counts as as fast


@dataclass
class ModelRate:
    precision: str
    batch: int
    graph: str
    images_per_second: float
    load_seconds: float


@dataclass
class Sweep:
    rates: list[ModelRate] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # "graph" -> why it could not run

    def best(self, precision: str) -> ModelRate | None:
        """The fastest configuration for ``precision``; a simpler graph mode wins a near tie."""
        mine = [r for r in self.rates if r.precision == precision]
        if not mine:
            return None
        top = max(r.images_per_second for r in mine)
        close = [r for r in mine if r.images_per_second >= (1 - SAME_SPEED) * top]
        return min(close, key=lambda r: (GRAPH_PREFERENCE.index(r.graph), -r.images_per_second))

    def as_notes(self) -> list[dict]:
        return [{"precision": r.precision, "batch": r.batch, "graph": r.graph,
                 "images_per_second": round(r.images_per_second, 1), "load_seconds": round(r.load_seconds, 1)}
                for r in self.rates]


def load_plugin(model: str, device: str, graph: str, warmup_batch: int, threads: int):
    from workloads.images.model import ModelPlugin, ModelSpec

    plugin = ModelPlugin(ModelSpec(model=model, device=device, graph=graph, warmup_batch=warmup_batch,
                                   precision="fp32"))
    plugin.load_model(threads)
    return plugin


def model_only_rate(plugin, batch, precision: str, seconds: float = 1.5) -> float:
    """Images/s of ``plugin.predict`` on ``batch`` (preloaded) in ``precision``, for about ``seconds``."""
    plugin.predict(batch, chunk=len(batch), precision=precision)  # warm-up: kernels chosen, graph captured
    started, rounds = time.perf_counter(), 0
    while True:
        plugin.predict(batch, chunk=len(batch), precision=precision)  # ends with the top-k on the host
        rounds += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return rounds * len(batch) / elapsed


def model_sweep(model: str, device: str, preload, precisions: Sequence[str], batches: Sequence[int],
                graphs: Sequence[str], threads: int, seconds: float, sweep: Sweep | None = None,
                echo=print) -> Sweep:
    """Model-only rates for each graph mode x precision x batch size (``preload``: a
    decoded batch on the device, repeated to the batch size)."""
    import torch

    sweep = sweep or Sweep()
    for graph in graphs:
        started = time.perf_counter()
        try:
            plugin = load_plugin(model, device, graph, min(batches), threads)
        except Exception as exc:
            sweep.errors[graph] = f"{type(exc).__name__}: {exc}"
            echo(f"model-only {graph}: cannot load ({sweep.errors[graph]})")
            continue
        load_seconds = time.perf_counter() - started
        try:
            for precision in precisions:
                for size in batches:
                    batch = preload.repeat((size + len(preload) - 1) // len(preload), 1, 1, 1)[:size].contiguous()
                    rate = model_only_rate(plugin, batch, precision, seconds)
                    sweep.rates.append(ModelRate(precision, size, graph, rate, load_seconds))
                    echo(f"model-only {graph} {precision} batch {size}: {rate:,.0f} img/s")
        except Exception as exc:  # e.g. a capture that fails on this build: the other modes still count
            sweep.errors[graph] = f"{type(exc).__name__}: {exc}"
            echo(f"model-only {graph}: failed ({sweep.errors[graph]})")
        finally:
            plugin.teardown(None)
            del plugin
            if device == "cuda":
                torch.cuda.empty_cache()
    return sweep


# ----------------------------------------------------------------------------- decode-only
def preload_bytes(images_dir: str, files: Sequence[str], batch: int) -> list:
    from workloads.images import dataset, jpeg

    return [jpeg.read_batch(images_dir, names) for names in dataset.make_batches(list(files), batch)]


def backend_rate(raws: list, device: str, backend: str, recipe: str = "imagenet") -> dict:
    """Images/s of one backend decoding and preprocessing ``raws`` (preloaded bytes), and
    which backends actually decoded them (files it rejects fall to the CPU)."""
    from collections import Counter

    from workloads.images import decoders, jpeg

    chain = decoders.choose_chain(device, decoders.availability(device), only=backend)
    decoder = decoders.BatchDecoder(chain, device)
    _sync(jpeg.decode_batch(raws[0], recipe, device, decoder=decoder).use(), device)  # warm-up
    decoder.counts.clear()
    counts: Counter = Counter()
    started = time.perf_counter()
    images = 0
    for raw in raws:
        loaded = jpeg.decode_batch(raw, recipe, device, decoder=decoder)
        images += len(loaded.kept)
        counts.update(loaded.backends)
        _sync(loaded.use(), device)
    seconds = time.perf_counter() - started
    return {"images_per_second": images / seconds, "images": images, "seconds": round(seconds, 3),
            "decoded_by": dict(counts), "dropped": dict(decoder.dropped)}


def _cpu_decode_share(images_dir: str, files: list[str], batch: int, recipe: str) -> int:
    import torch

    from workloads.images import dataset, jpeg

    torch.set_num_threads(1)
    images = 0
    for names in dataset.make_batches(files, batch):
        images += len(jpeg.decode_batch(jpeg.read_batch(images_dir, names), recipe, "cpu").kept)
    return images


def cpu_cores_rate(images_dir: str, files: Sequence[str], processes: int, batch: int = 64,
                   recipe: str = "imagenet") -> dict:
    """Images/s of ``processes`` processes (one thread each) decoding and preprocessing
    ``files`` on the CPU (libjpeg-turbo through torchvision), reads included."""
    files = list(files)
    shares = [files[i::processes] for i in range(processes)]
    context = multiprocessing.get_context("spawn")  # never fork a process that holds a CUDA context
    with context.Pool(processes) as pool:
        pool.starmap(_cpu_decode_share, [(images_dir, share[:batch], batch, recipe) for share in shares])  # warm-up
        started = time.perf_counter()
        images = sum(pool.starmap(_cpu_decode_share, [(images_dir, share, batch, recipe) for share in shares]))
        seconds = time.perf_counter() - started
    return {"images_per_second": images / seconds, "images": images, "seconds": round(seconds, 3),
            "processes": processes}


def pipeline_decode_rate(images_dir: str, tasks: Sequence[Sequence[str]], forward_batch: int, device: str,
                         depth: int, threads: int, recipe: str = "imagenet") -> dict:
    """Images/s of the worker's decode path without the model: ``threads`` tasks at once
    (as the Dask worker's threads), each reading and decoding ahead as it would."""
    from collections import Counter

    from workloads.images import overlap

    def one(files):
        return overlap.classify_files(None, images_dir, files, recipe, forward_batch, device, depth)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, [tasks[0][:forward_batch]] * threads))  # warm-up: decoders and streams made
        started = time.perf_counter()
        outcomes = list(pool.map(one, tasks))
        seconds = time.perf_counter() - started
    images = sum(len(o.files) for o in outcomes)
    counts: Counter[str] = sum((o.backends for o in outcomes), Counter())
    return {"images_per_second": images / seconds, "images": images, "seconds": round(seconds, 3),
            "decoded_by": dict(counts), "failed": sum(len(o.failed) for o in outcomes)}


def _sync(batch, device: str) -> None:
    if device == "cuda" and batch is not None:
        import torch

        torch.cuda.current_stream().synchronize()
