"""The model, loaded once per worker by a worker plugin and shared by that worker's tasks.

The paper's notebook builds ResNet-50 inside every batch task; here :class:`ModelPlugin`
builds it once in ``setup`` (off the worker's event loop), moves it to the worker's device,
sets torch's thread count to the worker's share of cores (Dask starts workers with
``OMP_NUM_THREADS=1``) and runs one warm-up forward pass, so that the timed phase sees a
warm model. Forward passes on one worker are serialised by a lock: concurrent tasks
decode and preprocess in parallel while the model uses all the worker's cores (or its
GPU), instead of N tasks each oversubscribing the cores with N x threads.

A model that cannot load for a reason one line says (a weights file missing on a worker, one
it cannot read, one that holds no PyTorch weights) fails the registration with
:class:`ModelNotLoaded`, naming the file and the worker: not an ``OSError``, so the benchmark
does not broadcast it again as if a worker had left, and distributed's traceback of the failed
setup is not logged on the worker (the runner prints the line).
"""
from __future__ import annotations

import asyncio
import importlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from distributed import WorkerPlugin, get_worker

from workloads.core.errors import WorkerError
from workloads.images.graphs import GRAPHS, accelerate  # noqa: F401  (GRAPHS: the choices, for the config)
from workloads.observe.environment import usable_cores

logger = logging.getLogger(__name__)

PLUGIN_NAME = "workloads-images-model"
PRECISIONS = ("fp32", "bf16", "fp16")
PLUGIN_LOGGER = "distributed.worker"  # logs a plugin's failed setup, with its traceback


class WeightsNotFound(FileNotFoundError):
    """The weights file is not on this machine."""


class WeightsUnreadable(ValueError):
    """The weights file is there but gives no weights: unreadable (a directory, no permission,
    an I/O error) or not a file ``torch.load`` reads. Loading again reads the same file."""


class ModelNotLoaded(WorkerError):
    """The model cannot load on a worker, for the reason the message says."""


class ExplainedFailures(logging.Filter):
    """Drops distributed's record of a plugin setup that failed with a :class:`WorkerError`:
    its one line reaches the runner, the traceback says no more."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, WorkerError)


EXPLAINED = ExplainedFailures()


@dataclass(frozen=True)
class ModelSpec:
    """What to load and how to run it; picklable, sent to every worker."""

    model: str = "resnet50"  # torchvision model name, or "package.module:factory"
    weights: str = "random"  # a state-dict path as the workers see it, or "random"
    device: str = "cpu"  # cpu | cuda | auto (resolved on the worker)
    seed: int = 0  # random weights are drawn with this seed: identical on every worker
    precision: str = "fp32"  # fp32 | bf16 (autocast) | fp16 (autocast, CUDA only)
    channels_last: bool = True
    fold_batchnorm: bool = True  # merge each eval-mode conv + batch norm into one conv
    graph: str = "eager"  # eager | cudagraph | compile | compile-cudagraphs (workloads.images.graphs)
    torch_threads: int | None = None  # None: the worker's nthreads, capped at its usable cores
    warmup: bool = True
    crop: int = 224  # warm-up input size
    warmup_batch: int = 2  # warm-up batch: the run's forward batch, so its kernels are chosen before the clock


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` where torch sees a GPU, else ``cpu``; ``cuda`` without one raises."""
    import torch

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but torch.cuda.is_available() is False on this worker")
    if requested not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu, cuda or auto, got {requested!r}")
    return requested


def build_model(name: str, weights: str = "random", seed: int = 0):
    """A torchvision classifier by name (``resnet50``) or ``module:factory`` returning an
    ``nn.Module``; weights from a state-dict file, else the model's own initialisation
    drawn with ``seed``."""
    import torch

    torch.manual_seed(seed)
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"model {name!r}: cannot import the factory ({exc})") from None
        model = factory()
    else:
        import torchvision

        try:
            model = torchvision.models.get_model(name, weights=None)
        except ValueError:
            raise ValueError(f"model {name!r} is not a torchvision model name"
                             " (see torchvision.models.list_models()) nor a module:factory") from None
    if weights != "random":
        model.load_state_dict(load_state_dict(weights))
    return model.eval()


def fold_batchnorm(model) -> tuple[Any, bool]:
    """``model`` with every convolution + eval-mode batch norm pair merged into one
    convolution (the same outputs up to float rounding), and whether that was done.

    One pass over the activations instead of two: on CPUs with bf16 matrix units the
    convolutions are fast enough that separate batch-norm passes are a large part of a
    ResNet-50's bf16 time (without such units bf16 is slower than fp32 whatever the folding:
    ``images_bf16_vs_fp32`` in docs/results/*.json, docs/results/profiles/bf16-resnet50-avx2.txt).
    The folded model is ``torch.fx``'s trace of the original: a model without batch norm,
    one whose pairs cannot be merged, or one fx cannot trace (data-dependent control flow)
    is returned unchanged. A traced model runs the recorded tensor operations only, so
    Python side effects inside ``forward`` are gone from it: such a model wants
    ``--no-fold-batchnorm``."""
    from torch.fx.experimental.optimization import fuse
    from torch.nn.modules.batchnorm import _BatchNorm

    def norms(net) -> int:
        return sum(isinstance(module, _BatchNorm) for module in net.modules())

    before = norms(model)
    if not before:
        return model, False
    try:
        folded = fuse(model)
    except Exception as error:  # torch.fx raises many kinds (TraceError, TypeError, ...)
        logger.info("batch norm not folded: torch.fx cannot trace %s (%s)", type(model).__name__, error)
        return model, False
    if norms(folded) == before:
        return model, False
    return folded, True


def load_state_dict(path: str) -> dict[str, Any]:
    """A torchvision state dict from ``path`` (also accepts a checkpoint holding one under
    ``state_dict``/``model``, and strips DataParallel's ``module.`` prefixes)."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise WeightsNotFound(f"weights file {path} does not exist on this worker") from None
    except OSError as error:
        raise WeightsUnreadable(f"cannot be read ({error.strerror or error})") from None
    except Exception as error:  # a readable file torch.load refuses: its unpickler raises many kinds
        why = f"{type(error).__name__}: {first_line(error)}"
        raise WeightsUnreadable(f"is not a PyTorch weights file ({why})") from None
    for key in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict):
        raise ValueError(f"weights file {path} does not hold a state dict ({type(state).__name__})")
    return {k.removeprefix("module."): v for k, v in state.items()}


class ModelPlugin(WorkerPlugin):
    """Holds the model on one worker. Tasks reach it with :func:`worker_model`."""

    name = PLUGIN_NAME

    def __init__(self, spec: ModelSpec, only: list[str] | None = None):
        self.spec = spec
        self.only = tuple(only) if only else None  # load on these workers alone (a restricted run)
        self.model: Any = None  # the torch module, once load_model ran
        self.device: str = "cpu"  # resolved by load_model
        self.threads: int | None = None
        self.setup_seconds: float | None = None
        self.batchnorm_folded = False
        self._lock: threading.Lock | None = None

    async def setup(self, worker) -> None:
        if self.only is not None and worker.address not in self.only:
            return
        logging.getLogger(PLUGIN_LOGGER).addFilter(EXPLAINED)  # once: the same filter is not added twice
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, self.load_model, worker.state.nthreads)
        except WeightsNotFound:
            raise ModelNotLoaded(f"weights file {self.spec.weights} does not exist on worker {worker.address}:"
                                 " give --weights a path every worker sees") from None
        except WeightsUnreadable as error:
            raise ModelNotLoaded(f"weights file {self.spec.weights} on worker {worker.address} {error}:"
                                 " give --weights a torchvision state dict every worker can read") from None

    def load_model(self, nthreads: int) -> None:
        import torch

        start = time.perf_counter()
        spec = self.spec
        if spec.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {spec.precision!r}")
        self.device = resolve_device(spec.device)
        if spec.precision == "fp16" and self.device != "cuda":
            raise ValueError("precision fp16 needs device cuda (use bf16 on CPU)")
        # the worker's share of cores: its nthreads, but never more than its CPU quota
        # (the paper's script gives 8 threads to 6-CPU pods)
        self.threads = spec.torch_threads or max(1, min(nthreads, usable_cores()))
        torch.set_num_threads(self.threads)
        model = build_model(spec.model, spec.weights, spec.seed)
        if spec.fold_batchnorm:
            model, self.batchnorm_folded = fold_batchnorm(model)
        model = model.to(self.device)
        if spec.channels_last:
            model = model.to(memory_format=torch.channels_last)
        model.requires_grad_(False)  # inference only: autocast then keeps no cache of cast weights
        self.model = accelerate(model, spec.graph, self.device)
        self._lock = threading.Lock()
        if spec.warmup:
            self.predict(torch.zeros(spec.warmup_batch, 3, spec.crop, spec.crop))
        self.setup_seconds = time.perf_counter() - start
        logger.info("model %s on %s (%d threads) ready in %.1f s", spec.model, self.device,
                    self.threads, self.setup_seconds)

    def teardown(self, worker) -> None:
        self.model = None
        if self.device == "cuda":
            import torch

            torch.cuda.empty_cache()

    def predict(self, batch, k: int = 5, chunk: int | None = None,
                precision: str | None = None) -> tuple[list[list[int]], float, float]:
        """Top-``k`` class indices per image; also the seconds spent waiting for the
        model and running it. ``precision`` overrides the spec's (``fp32`` for the
        reference pass that checks a bf16/fp16 run's top-1 agreement)."""
        import torch

        if self.model is None:
            raise RuntimeError("the model plugin is not set up on this worker")
        cuda = self.device == "cuda"
        if self.spec.channels_last:
            batch = batch.contiguous(memory_format=torch.channels_last)
        if cuda and batch.device.type == "cpu":  # GPU-decoded batches are on the device already
            batch = batch.pin_memory()
        chunk = chunk or len(batch)
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision or self.spec.precision)
        if self._lock is None:
            raise RuntimeError("predict before load_model: the worker's model is not loaded")
        waited = time.perf_counter()
        with self._lock:
            started = time.perf_counter()
            if torch.get_num_threads() != self.threads:
                torch.set_num_threads(self.threads)
            outputs = []
            # no autocast cache: a captured CUDA graph must not point at casts freed on exit
            with torch.inference_mode(), torch.autocast(self.device, dtype=dtype, enabled=dtype is not None,
                                                        cache_enabled=False):
                for i in range(0, len(batch), chunk):
                    part = batch[i:i + chunk].to(self.device, non_blocking=cuda)
                    outputs.append(self.model(part).float().topk(k, dim=1).indices.cpu())
            top = torch.cat(outputs).tolist()
            finished = time.perf_counter()
        return top, started - waited, finished - started


def worker_model() -> ModelPlugin:
    """The plugin registered on the worker running the current task."""
    worker = get_worker()
    try:
        return worker.plugins[PLUGIN_NAME]
    except KeyError:
        raise RuntimeError(f"worker {worker.address} has no {PLUGIN_NAME!r} plugin:"
                           " register ModelPlugin before submitting batches") from None


def first_line(error: BaseException) -> str:
    """An exception's first line: torch's messages run to a paragraph of advice about pickles."""
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
