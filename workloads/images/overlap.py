"""One task's files classified with decoding overlapped with the model: the files are cut
into forward batches; a reader thread reads batch n+2's bytes and a decoder thread
decodes and preprocesses batch n+1 (on its own CUDA stream on a GPU) while this thread
runs the model on batch n (:mod:`workloads.images.prefetch`).

``depth=0`` does the same steps one after the other in this thread: the baseline, and
what a CPU worker does by default (its cores are the model's: a decoder thread there
takes them from it).
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from workloads.images import dataset, jpeg, prefetch


@dataclass
class Outcome:
    """What one task's files gave: files classified (in order), their top-k, failures,
    conversions, images per decoder backend, and where the time went: ``wait`` for the
    next decoded batch (the decode side was slower than the model), ``decode`` (summed
    on the decoder thread, overlapped), ``forward`` (the model, its lock's wait apart)."""

    files: list[str] = field(default_factory=list)
    top: list[list[int]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    converted: list[tuple[str, str]] = field(default_factory=list)
    backends: Counter = field(default_factory=Counter)
    wait_seconds: float = 0.0
    decode_seconds: float = 0.0
    lock_seconds: float = 0.0
    forward_seconds: float = 0.0


def classify_files(predict: Callable | None, images_dir: str, files: Sequence[str], recipe: str,
                   forward_batch: int, device: str, depth: int = 2, precision: str | None = None,
                   only: str | None = None) -> Outcome:
    """Classify ``files`` with ``predict`` (``ModelPlugin.predict``), decoding ahead by
    ``depth`` batches. ``predict=None`` decodes only (the decode-only rate: each batch
    is still waited for on the GPU). ``only`` restricts the decoder chain to one backend."""
    outcome = Outcome()
    decoded_on = "cuda" if device == "cuda" else "cpu"

    def read(names: list[str]) -> jpeg.RawBatch:
        return jpeg.read_batch(images_dir, names)

    def decode(raw: jpeg.RawBatch) -> jpeg.Loaded:
        started = time.perf_counter()
        loaded = jpeg.decode_batch(raw, recipe, decoded_on, only=only)
        outcome.decode_seconds += time.perf_counter() - started
        return loaded

    waited = time.perf_counter()
    for loaded in prefetch.pipeline(dataset.make_batches(list(files), forward_batch), [read, decode], depth,
                                    name="images-prefetch"):
        outcome.wait_seconds += time.perf_counter() - waited
        outcome.failed += loaded.failed
        outcome.converted += loaded.converted
        outcome.backends.update(loaded.backends)
        batch = loaded.use()
        if batch is not None:
            outcome.files += loaded.kept
            if predict is None:
                _finish(batch)
            else:
                top, lock_wait, forward = predict(batch, chunk=forward_batch, precision=precision)
                outcome.top += top
                outcome.lock_seconds += lock_wait
                outcome.forward_seconds += forward
        waited = time.perf_counter()
    return outcome


def _finish(batch) -> None:
    """Wait until ``batch`` is computed (on a GPU: its stream done), as the model would."""
    if batch.device.type == "cuda":
        import torch

        torch.cuda.current_stream().synchronize()
