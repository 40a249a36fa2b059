"""Batched JPEG decoding behind one fallback chain: the GPU's JPEG hardware engines
first, then its CUDA cores, then the CPU, per image, with the backend that decoded each
image counted.

Backends (:data:`BACKENDS`), in the order a CUDA worker tries them (:data:`GPU_CHAIN`):

* ``nvimgcodec-hw``: nvImageCodec's ``BackendKind.HW_GPU_ONLY`` (the GPU's dedicated
  JPEG engines: A100, H100, H200 have them; most other GPUs do not);
* ``nvimgcodec-cuda``: ``BackendKind.GPU_ONLY`` (nvJPEG on the CUDA cores);
* ``nvimgcodec-hybrid``: ``BackendKind.HYBRID_CPU_GPU`` (Huffman on the CPU, the rest on
  the GPU);
* ``torchvision-cuda``: ``torchvision.io.decode_jpeg(list, device="cuda")`` (nvJPEG
  through torchvision: for a worker without nvImageCodec);
* ``torchvision-cpu``: ``decode_jpeg`` on the CPU (libjpeg-turbo), the last resort and
  the only backend of a CPU worker;
* ``nvimgcodec-cpu``: ``BackendKind.CPU_ONLY`` (nvImageCodec's libjpeg-turbo extension
  on its own CPU threads), in no default chain: measured on its own (``only``), and what
  the tests run the nvImageCodec adapter with on a machine without a GPU.

What nvImageCodec reports, and how this module reads it (nvImageCodec Python API
reference, https://docs.nvidia.com/cuda/nvimagecodec/py_api.html, classes ``Backend``,
``BackendKind``, ``Decoder``; source ``python/decoder.cpp`` and ``python/backend_kind.cpp``
at NVIDIA/nvImageCodec 36b4ee8): a ``Decoder(backends=[Backend(kind)])`` is allowed only
that kind; its batched ``decode`` returns a list with ``None`` at every position it
could not decode, never raising for one bad image; nothing reports which backend
decoded what, nor whether a kind exists on this GPU. So each kind gets its own
``Decoder`` (what decoded an image is then known), a kind counts as available when its
decoder decodes a small probe JPEG (:func:`detect`), and the images one backend returns
``None`` for go to the next backend in the chain. A backend that raises (a broken
library, a CUDA error) is dropped from that decoder's chain with a warning: never fatal.
Files no backend decodes go back to the caller, which reports them (the PIL path).

GPU-only libraries (nvImageCodec, torch's CUDA) are imported only inside the functions
that use them; :func:`choose_chain` takes an :class:`Availability`, so the choice is
tested on a machine without them.
"""
from __future__ import annotations

import contextlib
import io
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

NVIMGCODEC_KINDS = {"nvimgcodec-hw": "HW_GPU_ONLY", "nvimgcodec-cuda": "GPU_ONLY",
                    "nvimgcodec-hybrid": "HYBRID_CPU_GPU", "nvimgcodec-cpu": "CPU_ONLY"}
BACKENDS = ("nvimgcodec-hw", "nvimgcodec-cuda", "nvimgcodec-hybrid", "torchvision-cuda", "nvimgcodec-cpu",
            "torchvision-cpu")
GPU_BACKENDS = ("nvimgcodec-hw", "nvimgcodec-cuda", "nvimgcodec-hybrid", "torchvision-cuda")
GPU_CHAIN = (*GPU_BACKENDS, "torchvision-cpu")
CPU_CHAIN = ("torchvision-cpu",)
# nvImageCodec's default is ":fancy_upsampling=0"; libjpeg-turbo (torchvision on the CPU,
# PIL) upsamples chroma the fancy way, so this keeps the GPU path's pixels next to the CPU's
NVIMGCODEC_OPTIONS = ":fancy_upsampling=1"

# a backend: a list of JPEG byte strings -> one decoded image (C,H,W) uint8 tensor or None each
Backend = Callable[[Sequence[bytes]], list]


@dataclass(frozen=True)
class Availability:
    """Which backends this process can use (:func:`detect`), and why not the others."""

    cuda: bool = False
    torchvision_cuda: bool = False
    nvimgcodec_version: str | None = None
    nvimgcodec_kinds: frozenset[str] = frozenset()  # BACKENDS names whose probe decode worked
    reasons: dict[str, str] = field(default_factory=dict)  # backend -> why it is not available

    def has(self, backend: str) -> bool:
        if backend == "torchvision-cpu":
            return True
        if backend == "torchvision-cuda":
            return self.cuda and self.torchvision_cuda
        if backend == "nvimgcodec-cpu":
            return backend in self.nvimgcodec_kinds
        return self.cuda and backend in self.nvimgcodec_kinds


def choose_chain(device: str, availability: Availability, only: str | None = None) -> tuple[str, ...]:
    """The backends a worker whose model runs on ``device`` tries, best first; always
    ending with ``torchvision-cpu``. ``only`` keeps one backend (and the CPU after it):
    how the decode-only rate of each backend is measured."""
    if only is not None:
        if only not in BACKENDS:
            raise ValueError(f"decoder backend must be one of {BACKENDS}, got {only!r}")
        if not availability.has(only):
            why = availability.reasons.get(only, "not available on this worker")
            raise ValueError(f"decoder backend {only!r} is not available: {why}")
        return (only,) if only == "torchvision-cpu" else (only, "torchvision-cpu")
    candidates = CPU_CHAIN if device != "cuda" else GPU_CHAIN
    return tuple(name for name in candidates if availability.has(name))


class BatchDecoder:
    """Decodes batches through ``chain`` (see the module docstring); ``counts`` holds how
    many images each backend decoded. ``backends`` maps names to callables (default: the
    real ones, built on first use); tests pass their own."""

    def __init__(self, chain: Sequence[str], device: str = "cpu", backends: dict[str, Backend] | None = None):
        unknown = [name for name in chain if backends is None and name not in BACKENDS]
        if unknown or not chain:
            raise ValueError(f"decoder chain must be a non-empty sequence of {BACKENDS}, got {tuple(chain)!r}")
        self.chain = list(chain)
        self.device = device
        self.counts: Counter[str] = Counter()
        self.dropped: dict[str, str] = {}  # backend -> the error that removed it
        self._backends = dict(backends or {})

    def decode(self, raw: dict[int, bytes]) -> tuple[dict, dict[int, str]]:
        """({key: decoded (C,H,W) uint8 tensor}, {key: backend}) for the entries of
        ``raw`` some backend decoded; the others are left out for the caller to report."""
        pending = dict(raw)
        images: dict = {}
        used: dict[int, str] = {}
        for name in list(self.chain):
            if not pending:
                break
            keys = list(pending)
            try:
                outputs = self._backend(name)([pending[key] for key in keys])
            except Exception as exc:  # the whole backend is unusable: the next one takes over
                self._drop(name, exc)
                continue
            for key, image in zip(keys, outputs, strict=True):
                if image is not None:
                    images[key] = image
                    used[key] = name
                    del pending[key]
                    self.counts[name] += 1
        return images, used

    def _backend(self, name: str) -> Backend:
        if name not in self._backends:
            self._backends[name] = make_backend(name)
        return self._backends[name]

    def _drop(self, name: str, exc: Exception) -> None:
        self.chain.remove(name)
        self.dropped[name] = f"{type(exc).__name__}: {exc}"
        logger.warning("decoder backend %s failed (%s): dropped, the next in the chain takes over",
                       name, self.dropped[name])


# ----------------------------------------------------------------------------- the real backends
def make_backend(name: str) -> Backend:
    if name in NVIMGCODEC_KINDS:
        return _nvimgcodec_backend(NVIMGCODEC_KINDS[name])
    if name == "torchvision-cuda":
        return lambda batch: _torchvision_decode(batch, "cuda")
    if name == "torchvision-cpu":
        return lambda batch: _torchvision_decode(batch, "cpu")
    raise ValueError(f"decoder backend must be one of {BACKENDS}, got {name!r}")


def _nvimgcodec_backend(kind: str) -> Backend:
    import torch
    from nvidia import nvimgcodec

    on_cpu = kind == "CPU_ONLY"
    device_id = nvimgcodec.NVIMGCODEC_DEVICE_CPU_ONLY if on_cpu else nvimgcodec.NVIMGCODEC_DEVICE_CURRENT
    backend = nvimgcodec.Backend(getattr(nvimgcodec.BackendKind, kind))
    decoder = nvimgcodec.Decoder(device_id=device_id, backends=[backend],
                                 options=NVIMGCODEC_OPTIONS)
    # what the CPU path does: no EXIF rotation (torchvision's decode_jpeg default, PIL's open)
    params = nvimgcodec.DecodeParams(apply_exif_orientation=False, color_spec=nvimgcodec.ColorSpec.SRGB)

    def decode(batch: Sequence[bytes]) -> list:
        streams = [_rgb_code_stream(nvimgcodec, data) for data in batch]
        usable = [i for i, stream in enumerate(streams) if stream is not None]
        outputs: list = [None] * len(batch)
        if not usable:
            return outputs
        cuda_stream = 0 if on_cpu else torch.cuda.current_stream().cuda_stream
        decoded = decoder.decode([streams[i] for i in usable], params=params, cuda_stream=cuda_stream)
        for i, image in zip(usable, decoded, strict=True):
            if image is not None:  # HWC interleaved RGB -> a CHW view
                outputs[i] = _as_tensor(torch, image).permute(2, 0, 1)
        return outputs

    return decode


def _as_tensor(torch, image):
    """The decoded image as a tensor without a copy: DLPack for device buffers (it also
    orders the consumer's stream after the decode), the array interface for host ones
    (nvImageCodec's DLPack export calls the CUDA runtime even for those)."""
    if image.buffer_kind.name == "STRIDED_HOST":
        import numpy as np

        return torch.from_numpy(np.asarray(image))
    return torch.from_dlpack(image)


def _rgb_code_stream(nvimgcodec, data: bytes):
    """A ``CodeStream`` of ``data`` if it holds a three-channel image, else None:
    grayscale and CMYK files go on to a backend that reports them as converted
    (nvImageCodec would turn them into RGB silently), and a header nvImageCodec cannot
    parse raises on first use (``num_channels``: "Failed to get image info"), which must
    not fail the batch."""
    try:
        stream = nvimgcodec.CodeStream(data)
        return stream if stream.num_channels == 3 else None
    except RuntimeError:
        return None


def _torchvision_decode(batch: Sequence[bytes], device: str) -> list:
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    tensors = [torch.frombuffer(bytearray(data), dtype=torch.uint8) for data in batch]
    if not tensors:
        return []
    try:
        return list(decode_jpeg(tensors, mode=ImageReadMode.UNCHANGED, device=device))
    except RuntimeError:  # one file it rejects fails the whole call: one by one
        outputs = []
        for tensor in tensors:
            try:
                outputs.append(decode_jpeg(tensor, mode=ImageReadMode.UNCHANGED, device=device))
            except RuntimeError:
                outputs.append(None)
        return outputs


# ----------------------------------------------------------------------------- detection
def probe_jpeg(width: int = 256, height: int = 192) -> bytes:
    """A small baseline 4:2:0 JPEG (what every backend, the hardware engines included, decodes)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (180, 90, 30)).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def detect(device: str = "cuda") -> Availability:
    """What this process can decode with: each backend decodes :func:`probe_jpeg` once."""
    reasons: dict[str, str] = {}
    try:
        import torch
    except ImportError as exc:
        return Availability(reasons=dict.fromkeys(BACKENDS[:-1], f"torch does not import ({exc})"))
    cuda = device == "cuda" and torch.cuda.is_available()
    if not cuda:
        why = "the model runs on the CPU" if device != "cuda" else "torch.cuda.is_available() is False"
        reasons.update(dict.fromkeys(GPU_BACKENDS, why))
    sample = probe_jpeg()
    torchvision_cuda = cuda and _probe(make_backend, "torchvision-cuda", sample, reasons)
    version, kinds = None, set()
    try:
        from nvidia import nvimgcodec

        version = getattr(nvimgcodec, "__version__", "unknown")
    except Exception as exc:  # ImportError, or its CUDA libraries failing to load
        for name in NVIMGCODEC_KINDS:
            reasons.setdefault(name, f"nvidia.nvimgcodec does not import ({type(exc).__name__}: {exc})")
    else:
        wanted = NVIMGCODEC_KINDS if cuda else ("nvimgcodec-cpu",)
        kinds = {name for name in wanted if _probe(make_backend, name, sample, reasons)}
    return Availability(cuda, torchvision_cuda, version, frozenset(kinds), reasons)


def _probe(factory: Callable[[str], Backend], name: str, sample: bytes, reasons: dict[str, str]) -> bool:
    try:
        [image] = factory(name)([sample])
    except Exception as exc:
        reasons[name] = f"{type(exc).__name__}: {exc}"
        return False
    if image is None or tuple(image.shape) != (3, 192, 256):
        reasons[name] = "decoded nothing from a baseline JPEG (no such engine on this GPU?)"
        return False
    return True


_detected: dict[str, Availability] = {}
_detect_lock = threading.Lock()
_pools: dict[tuple[str, str | None], DecoderPool] = {}


def availability(device: str) -> Availability:
    """:func:`detect`, once per process and device."""
    with _detect_lock:
        if device not in _detected:
            _detected[device] = detect(device)
            found = _detected[device]
            logger.info("JPEG decoders on %s: %s", device,
                        ", ".join(name for name in BACKENDS if found.has(name)))
        return _detected[device]


class DecoderPool:
    """Up to ``size`` :class:`BatchDecoder` of one chain, each with its own CUDA stream
    on a GPU, lent to one thread at a time (nvImageCodec decoders are not shared between
    threads at once, and are too costly to build per task)."""

    def __init__(self, device: str, only: str | None = None, size: int = 4):
        self.device, self.only, self.size = device, only, size
        self._free: list[tuple[BatchDecoder, object]] = []
        self._made = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def borrow(self) -> Iterator[tuple[BatchDecoder, object]]:
        """(decoder, its CUDA stream or None), for the ``with`` block."""
        with self._cond:
            while not self._free and self._made >= self.size:
                self._cond.wait()
            if self._free:
                entry = self._free.pop()
            else:
                self._made += 1
                entry = None
        if entry is None:
            try:
                entry = self._make()
            except BaseException:
                with self._cond:
                    self._made -= 1
                    self._cond.notify()
                raise
        try:
            yield entry
        finally:
            with self._cond:
                self._free.append(entry)
                self._cond.notify()

    def counts(self) -> Counter:
        """Images decoded by each backend, over every decoder of this pool."""
        with self._cond:
            return sum((decoder.counts for decoder, _ in self._free), Counter())

    def _make(self) -> tuple[BatchDecoder, object]:
        stream = None
        if self.device == "cuda":
            import torch

            stream = torch.cuda.Stream()
        return BatchDecoder(choose_chain(self.device, availability(self.device), self.only), self.device), stream


def pool(device: str, only: str | None = None, size: int = 4) -> DecoderPool:
    """This process's :class:`DecoderPool` for ``device`` (and ``only``)."""
    with _detect_lock:
        key = (device, only)
        if key not in _pools:
            _pools[key] = DecoderPool(device, only, size)
        return _pools[key]


def probe(device: str = "cuda", found: Availability | None = None) -> dict:
    """For a preflight on each worker (``client.run(probe, "cuda")``): the chain this
    worker would decode with, nvImageCodec's version, and why each missing backend is
    missing. ``ok`` is False on a CUDA worker that can decode on the CPU alone."""
    found = found if found is not None else availability(device)
    chain = choose_chain(device, found)
    return {"device": device, "chain": list(chain), "nvimgcodec": found.nvimgcodec_version,
            "hardware_decoder": found.has("nvimgcodec-hw"),
            "missing": {name: found.reasons[name] for name in BACKENDS if name in found.reasons},
            "ok": device != "cuda" or chain[0] != "torchvision-cpu"}


def preflight_problems(reports: dict[str, dict]) -> dict[str, list[str]]:
    """{worker: [problem]} from :func:`probe` reports gathered with ``client.run``: a GPU
    worker that would decode on its CPU alone is a problem (the GPU path would be bound
    by a few cores); a GPU without JPEG engines is not (it decodes on its CUDA cores)."""
    problems: dict[str, list[str]] = {}
    for worker, report in sorted(reports.items()):
        if not report["ok"]:
            why = "; ".join(f"{name}: {reason}" for name, reason in report["missing"].items()
                            if name in GPU_BACKENDS)
            problems[worker] = [f"GPU worker would decode JPEGs on its CPU only ({why})"]
    return problems
