"""Jobs for the plain processes of :mod:`bench.helper` (images): the model-only limit
and the plain single-process loop. Each runs in a child; ``state`` is its private dict.
"""
from __future__ import annotations

import time
from typing import Any


def load_model(state: dict[str, Any], spec: dict[str, Any], threads: int) -> dict[str, Any]:
    """The Dask workers' own model holder (:class:`ModelPlugin`), loaded the way a worker
    loads it (threads, channels-last, precision, one warm-up pass)."""
    from workloads.images import model

    plugin = model.ModelPlugin(model.ModelSpec(**spec))
    plugin._load(threads)
    state["plugin"] = plugin
    return {"threads": plugin.threads, "setup_seconds": plugin.setup_seconds}


def preload(state: dict[str, Any], images_dir: str, files: list[str], recipe: str) -> int:
    """Decode and preprocess ``files`` once (untimed): the tensors the limit runs on."""
    from workloads.images import dataset

    batch, kept, _, _ = dataset.load_batch(images_dir, files, recipe)
    state["batch"] = batch
    return len(kept)


def forward(state: dict[str, Any], chunk: int) -> dict[str, Any]:
    """Model only: classify the preloaded tensors, timed."""
    plugin, batch = state["plugin"], state["batch"]
    started = time.perf_counter()
    plugin.predict(batch, chunk=chunk)
    return {"started": started, "finished": time.perf_counter(), "images": len(batch)}


def load_plain(state: dict[str, Any], name: str, weights: str, seed: int, threads: int,
               channels_last: bool, precision: str) -> dict[str, Any]:
    """A plain model as a notebook would build it: the same network and weights, one
    process, ``torch.set_num_threads(threads)``, nothing else set."""
    import torch

    from workloads.images import model

    torch.set_num_threads(threads)
    net = model.build_model(name, weights, seed)
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
    state.update(net=net, channels_last=channels_last, precision=precision)
    return {"threads": torch.get_num_threads()}


def plain_loop(state: dict[str, Any], images_dir: str, files: list[str], recipe: str,
               batch_size: int) -> dict[str, Any]:
    """Decode + preprocess + forward, batch after batch, in this one process, timed."""
    import torch

    from workloads.images import dataset

    net = state["net"]
    dtype = {"bf16": torch.bfloat16}.get(state["precision"])
    images = 0
    started = time.perf_counter()
    for i in range(0, len(files), batch_size):
        batch, kept, _, _ = dataset.load_batch(images_dir, files[i:i + batch_size], recipe)
        if batch is None:
            continue
        if state["channels_last"]:
            batch = batch.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode(), torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            net(batch).float().topk(5, dim=1)
        images += len(kept)
    return {"started": started, "finished": time.perf_counter(), "images": images}
