"""Jobs for the plain processes of :mod:`bench.helper` (images): the model-only limit,
the tuned single-process loop and the naive loop. Each runs in a child; ``state`` is
its private dict. Every job reports what it actually ran with (decoder, folding,
threads), so the record shows it next to the Dask side's own report.
"""
from __future__ import annotations

import time
from typing import Any


def load_model(state: dict[str, Any], spec: dict[str, Any], threads: int) -> dict[str, Any]:
    """The Dask workers' own model holder (:class:`ModelPlugin`), loaded the way a worker
    loads it (threads, folding, channels-last, precision, a warm-up pass at the run's
    forward batch)."""
    from bench.pairs import process_facts
    from workloads.images import model

    plugin = model.ModelPlugin(model.ModelSpec(**spec))
    plugin.load_model(threads)
    state["plugin"] = plugin
    return {"threads": plugin.threads, "batchnorm_folded": plugin.batchnorm_folded,
            "warmup_batch": plugin.spec.warmup_batch, "setup_seconds": plugin.setup_seconds, **process_facts()}


def preload(state: dict[str, Any], images_dir: str, files: list[str], recipe: str, decode: str) -> int:
    """Decode and preprocess ``files`` once (untimed), with the workers' decoder: the
    tensors the limit runs on."""
    from workloads.images import jpeg

    state["batch"] = _decode(images_dir, files, recipe, jpeg.resolve(decode, "cpu"), "cpu")[0]
    return len(state["batch"])


def forward(state: dict[str, Any], chunk: int) -> dict[str, Any]:
    """Model only: classify the preloaded tensors, ``chunk`` images per forward pass."""
    plugin, batch = state["plugin"], state["batch"]
    started = time.perf_counter()
    plugin.predict(batch, chunk=chunk)
    return {"started": started, "finished": time.perf_counter(), "images": len(batch)}


def tuned_loop(state: dict[str, Any], images_dir: str, files: list[str], recipe: str, batch_size: int,
               forward_batch: int, decode: str, prefetch: int | None = None) -> dict[str, Any]:
    """What one worker task does (``workloads.images.benchmark.classify_batch``), batch
    after batch, in this one process: the workers' decoder (:func:`jpeg.resolve`) and
    decode path (:func:`overlap.classify_files`, the same prefetch depth), the same model
    holder (folded, channels-last, all of this process's threads)."""
    from workloads.images import jpeg, overlap

    plugin = state["plugin"]
    decoder = jpeg.resolve(decode, plugin.device)
    depth = prefetch if prefetch is not None else (2 if decoder == "gpu" else 0)
    images = 0
    started = time.perf_counter()
    for i in range(0, len(files), batch_size):
        names = files[i:i + batch_size]
        if decoder == "pil":
            batch, kept = _decode(images_dir, names, recipe, "pil", plugin.device)
            if batch is not None:
                plugin.predict(batch, chunk=forward_batch)
        else:
            kept = overlap.classify_files(plugin.predict, images_dir, names, recipe, forward_batch,
                                          "cuda" if decoder == "gpu" else "cpu", depth).files
        images += len(kept)
    return {"started": started, "finished": time.perf_counter(), "images": images, "decoder": decoder,
            "batchnorm_folded": plugin.batchnorm_folded, "threads": plugin.threads, "prefetch": depth}


def load_naive(state: dict[str, Any], name: str, weights: str, seed: int, threads: int,
               channels_last: bool, precision: str) -> dict[str, Any]:
    """A model as the paper's notebook builds it: the same network and weights, one
    process, ``torch.set_num_threads(threads)``, nothing else (no folding, no warm-up)."""
    import torch

    from bench.pairs import process_facts
    from workloads.images import model

    torch.set_num_threads(threads)
    net = model.build_model(name, weights, seed)
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
    state.update(net=net, channels_last=channels_last, precision=precision)
    return {"threads": torch.get_num_threads(), "batchnorm_folded": False, **process_facts()}


def naive_loop(state: dict[str, Any], images_dir: str, files: list[str], recipe: str,
               batch_size: int) -> dict[str, Any]:
    """PIL decode + preprocess + forward, batch after batch, in this one process."""
    import torch

    net = state["net"]
    dtype = {"bf16": torch.bfloat16}.get(state["precision"])
    images = 0
    started = time.perf_counter()
    for i in range(0, len(files), batch_size):
        batch, kept = _decode(images_dir, files[i:i + batch_size], recipe, "pil", "cpu")
        if batch is None:
            continue
        if state["channels_last"]:
            batch = batch.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode(), torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            net(batch).float().topk(5, dim=1)
        images += len(kept)
    return {"started": started, "finished": time.perf_counter(), "images": images, "decoder": "pil",
            "batchnorm_folded": False, "threads": torch.get_num_threads()}


def _decode(images_dir: str, files: list[str], recipe: str, decoder: str, device: str):
    """(batch tensor or None, kept files) through the path a worker task takes for ``decoder``."""
    from workloads.images import dataset, jpeg

    if decoder == "pil":
        batch, kept, _, _ = dataset.load_batch(images_dir, files, recipe)
    else:
        batch, kept, _, _ = jpeg.load_batch(images_dir, files, recipe, "cuda" if decoder == "gpu" else "cpu")
    return batch, kept
