"""How the model's forward pass is run on a GPU, beyond eager mode: options the GPU
benchmark measures against each other (``--graph``).

* ``cudagraph``: each input shape's forward pass (under its autocast dtype) is captured
  once into a CUDA graph and replayed: one launch per batch instead of one per kernel, so
  the model thread holds the GIL far less while decoding threads need it.
* ``compile``: ``torch.compile`` (inductor's fused kernels), default mode.
* ``compile-cudagraphs``: ``torch.compile(mode="reduce-overhead")``, inductor with its
  own CUDA graphs.

Captured graphs reuse their output buffer: the caller reads a result before the next
call (``ModelPlugin.predict`` turns it into top-k under its lock, in stream order).
"""
from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

GRAPHS = ("eager", "cudagraph", "compile", "compile-cudagraphs")
MAX_CAPTURED_SHAPES = 8  # graphs per model (batch size x precision); past that it runs eagerly


def accelerate(model, graph: str, device: str):
    """``model`` wrapped for ``graph`` (see the module docstring); ``eager`` returns it as is."""
    if graph not in GRAPHS:
        raise ValueError(f"graph must be one of {GRAPHS}, got {graph!r}")
    if graph == "eager":
        return model
    if device != "cuda" and graph in ("cudagraph", "compile-cudagraphs"):
        raise ValueError(f"graph {graph!r} needs device cuda (CUDA graphs), the model runs on {device}")
    if graph == "cudagraph":
        return CapturedModel(model)
    import torch

    return torch.compile(model, mode="reduce-overhead" if graph == "compile-cudagraphs" else None)


class CapturedModel:
    """Replays one CUDA graph per (input shape, dtype, autocast dtype) of ``model``."""

    def __init__(self, model, max_shapes: int = MAX_CAPTURED_SHAPES):
        self.model = model
        self.max_shapes = max_shapes
        self.graphs: dict[tuple, tuple] = {}

    def __call__(self, batch):
        import torch

        autocast = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else None
        kind = (tuple(batch.shape[1:]), batch.dtype, autocast, batch.is_contiguous(memory_format=torch.channels_last))
        size = batch.shape[0]
        # a smaller batch (a task's last) replays the smallest graph that holds it, padded:
        # no capture while other threads decode (their CUDA calls would break a capture)
        fits = [n for (n, other) in self.graphs if other == kind and n >= size]
        if not fits:
            if len(self.graphs) >= self.max_shapes:
                return self.model(batch)
            self.graphs[(size, kind)] = self._capture(batch)
            fits = [size]
        static_input, static_output, graph = self.graphs[(min(fits), kind)]
        static_input[:size].copy_(batch)
        graph.replay()
        return static_output[:size]

    def _capture(self, batch):
        import torch

        static_input = batch.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture: cuDNN picks its kernels here
            for _ in range(2):
                self.model(static_input)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: CUDA calls of the decoding threads meanwhile do not fail the capture
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            static_output = self.model(static_input)
        logger.info("captured a CUDA graph for input %s %s", tuple(batch.shape), batch.dtype)
        return static_input, static_output, graph
