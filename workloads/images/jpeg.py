"""Decode and preprocess a batch with batched decoders (:mod:`workloads.images.decoders`):
on the CPU (libjpeg-turbo through torchvision, faster than the PIL path) or on
the worker's GPU (nvImageCodec on the JPEG hardware engines, then on the CUDA cores, then
torchvision's nvJPEG, then the CPU: the first backend in that chain this worker has).

``--decode`` chooses: ``pil`` (:func:`dataset.load_batch`, PIL for every file), ``cpu``
(this module on the CPU), ``gpu`` (this module on CUDA; a worker without CUDA falls back
to ``cpu``, logged once), ``auto`` (``gpu`` on CUDA workers, else ``cpu``).

A batch goes through two steps that :mod:`workloads.images.prefetch` can run on their own
threads, ahead of the model: :func:`read_batch` (file bytes, on a pool of reader threads:
reads release the GIL) and :func:`decode_batch` (decode, resize, crop, normalise).

The recipe is the PIL path's (:data:`dataset.RECIPES`): shorter side to 256 with
torchvision's rounding, antialiased bilinear, centre crop, ImageNet mean/std; pixel
values differ from PIL's by at most one grey level. Only files that start like a JPEG
and end with its end-of-image marker are decoded here; the others (a PNG under a .jpg
name, truncated, empty or non-image files) and any file every backend rejects (CMYK) take
the PIL path (:func:`dataset.decode`), which converts or reports them as ``--decode pil`` does.
Grayscale JPEGs are decoded here and reported as converted from ``L``. On the CPU the
decode runs on one torch thread: a worker's other threads are the model's. On the GPU,
per-image work is Python- and launch-bound, so at most :data:`GPU_DECODE_SLOTS` of a
worker's threads decode at once (more threads decoding together decode fewer images a
second), and images of one size are resized together, in one ``interpolate`` call per size.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from workloads.images import dataset, decoders

logger = logging.getLogger(__name__)

DECODES = ("auto", "cpu", "gpu", "pil")
GPU_DECODE_SLOTS = 4
CPU_DECODE_SLOTS = 256  # CPU decoding is not limited beyond the worker's own threads
READER_THREADS = 8  # file reads per process at once (page-cache or NFS reads release the GIL)
_JPEG_START, _JPEG_END = b"\xff\xd8\xff", b"\xff\xd9"
_warned: set[str] = set()
_readers: ThreadPoolExecutor | None = None
_readers_lock = threading.Lock()


@dataclass(frozen=True)
class RawBatch:
    """A batch's file names and the bytes of those that look like whole JPEGs
    ({index in ``files``: bytes}); the others are decoded (or reported) by PIL."""

    images_dir: str
    files: tuple[str, ...]
    raw: dict[int, bytes]


@dataclass
class Loaded:
    """A decoded, preprocessed batch: float32 (N,3,crop,crop) on the decode device or
    None, the files in it, failures [(file, reason)], conversions [(file, from)], and how
    many images each decoder backend decoded (``pil`` for the fallback path)."""

    batch: object
    kept: list[str]
    failed: list[tuple[str, str]]
    converted: list[tuple[str, str]]
    backends: Counter = field(default_factory=Counter)
    ready: Any = None  # a CUDA event the batch is complete at (decoded on a side stream)
    sources: list | None = field(default=None, repr=False)  # the decoded images, kept until the batch is done

    def as_tuple(self):
        return self.batch, self.kept, self.failed, self.converted

    def use(self):
        """The batch, safe to use on this thread's current CUDA stream: that stream waits
        for the decode stream's work, and the memory is not reused before it is done."""
        if self.ready is not None and self.batch is not None:
            import torch

            current = torch.cuda.current_stream()
            current.wait_event(self.ready)
            self.batch.record_stream(current)
            self.ready = None
        return self.batch


def gpu_available(device: str) -> bool:
    """Whether this process can decode on ``device`` (CUDA, and a torchvision with GPU decoding)."""
    if device != "cuda":
        return False
    try:
        import torch
        from torchvision.io import decode_jpeg  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def resolve(requested: str, device: str) -> str:
    """``pil``, ``cpu`` or ``gpu`` for a worker whose model runs on ``device``."""
    if requested not in DECODES:
        raise ValueError(f"decode must be one of {DECODES}, got {requested!r}")
    if requested in ("pil", "cpu"):
        return requested
    if gpu_available(device):
        return "gpu"
    if requested == "gpu" and device not in _warned:
        _warned.add(device)
        logger.warning("decode gpu requested but the model runs on %s, without CUDA: decoding on the CPU", device)
    return "cpu"


def is_clean_jpeg(data: bytes) -> bool:
    """Starts with a JPEG start-of-image and ends with its end-of-image marker."""
    return data[:3] == _JPEG_START and data.rstrip(b"\0")[-2:] == _JPEG_END


def load_batch(images_dir: str, files: Sequence[str], recipe: str, device: str = "cpu"):
    """:func:`dataset.load_batch` with batched decoders on ``device`` (``cpu`` or
    ``cuda``): (float32 tensor (N,3,crop,crop) on ``device`` or None, the files in it,
    failures [(file, reason)], conversions [(file, from)])."""
    loaded = decode_batch(read_batch(images_dir, files), recipe, device)
    loaded.use()
    return loaded.as_tuple()


def read_batch(images_dir: str, files: Sequence[str]) -> RawBatch:
    """The files' bytes, read on this process's reader threads."""
    paths = [os.path.join(images_dir, name) for name in files]
    contents = list(_reader_pool().map(_read_clean, paths)) if len(paths) > 1 else [_read_clean(p) for p in paths]
    return RawBatch(images_dir, tuple(files), {i: data for i, data in enumerate(contents) if data is not None})


def decode_batch(raw: RawBatch, recipe: str, device: str = "cpu", decoder: decoders.BatchDecoder | None = None,
                 stream=None, only: str | None = None) -> Loaded:
    """Decode and preprocess ``raw`` on ``device``. Without ``decoder``, one is borrowed
    from this process's pool (at most :data:`GPU_DECODE_SLOTS` at once on a GPU; ``only``
    restricts its chain to one backend), and on a GPU the work runs on that decoder's own
    CUDA stream: ``Loaded.ready`` is the event that marks its end (:meth:`Loaded.use`)."""
    try:
        resize, crop, normalise = dataset.RECIPES[recipe]
    except KeyError:
        raise ValueError(f"unknown preprocess recipe {recipe!r}; known: {', '.join(dataset.RECIPES)}") from None
    if decoder is not None:
        return _decode_on(raw, resize, crop, normalise, device, decoder, stream)
    slots = GPU_DECODE_SLOTS if device == "cuda" else CPU_DECODE_SLOTS
    with decoders.pool(device, only, slots).borrow() as (borrowed, own_stream):
        return _decode_on(raw, resize, crop, normalise, device, borrowed, stream or own_stream)


def _decode_on(raw: RawBatch, resize: int, crop: int, normalise: bool, device: str,
               decoder: decoders.BatchDecoder, stream) -> Loaded:
    if device == "cpu":
        with _one_thread():
            return _decode(raw, resize, crop, normalise, device, decoder)
    import torch

    with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
        loaded = _decode(raw, resize, crop, normalise, device, decoder)
        loaded.ready = torch.cuda.Event()
        loaded.ready.record(torch.cuda.current_stream())
        # this (decoder) thread waits for its stream before the decoded images are freed:
        # nvImageCodec owns their memory, outside torch's stream-ordered allocator
        loaded.ready.synchronize()
        loaded.sources = None
    return loaded


def _read_clean(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None  # the PIL path reports it
    return data if is_clean_jpeg(data) else None


def _reader_pool() -> ThreadPoolExecutor:
    global _readers  # noqa: PLW0603 (one pool per process, made on first use under the lock)
    with _readers_lock:
        if _readers is None:
            _readers = ThreadPoolExecutor(READER_THREADS, thread_name_prefix="jpeg-read")
        return _readers


def _decode(raw: RawBatch, resize: int, crop: int, normalise: bool, device: str,
            decoder: decoders.BatchDecoder) -> Loaded:
    import torch
    from torchvision.transforms.v2 import functional as F

    decoded, used = decoder.decode(raw.raw)
    images, loaded = [], Loaded(None, [], [], [], Counter(used.values()))
    for i, name in enumerate(raw.files):
        image = decoded.get(i)
        if image is not None and image.shape[0] == 1:
            image = image.expand(3, -1, -1)
            loaded.converted.append((name, "L"))
        elif image is not None and image.shape[0] != 3:
            loaded.backends[used[i]] -= 1
            image = None
        if image is None:
            result = dataset.decode(os.path.join(raw.images_dir, name))
            if result.error is not None:
                loaded.failed.append((name, result.error))
                continue
            if result.converted_from:
                loaded.converted.append((name, result.converted_from))
            loaded.backends["pil"] += 1
            image = F.pil_to_tensor(result.image)
        if image.device.type != device:  # a CPU backend in a GPU chain, or PIL
            image = image.to(device, non_blocking=True)
        images.append(image)
        loaded.kept.append(name)
    loaded.backends = +loaded.backends  # drop zero counts
    loaded.sources = images
    if not images:
        return loaded
    if device == "cpu":  # torchvision's uint8 resize: vectorised on the CPU
        batch = torch.stack([F.center_crop(F.resize(image, [resize], antialias=True), [crop])
                             for image in images]).float()
    else:
        batch = resize_crop_many(images, resize, crop)
    if normalise:
        mean = torch.tensor([255 * m for m in dataset.MEAN], device=batch.device).view(1, 3, 1, 1)
        std = torch.tensor([255 * s for s in dataset.STD], device=batch.device).view(1, 3, 1, 1)
        loaded.batch = batch.sub_(mean).div_(std)
    else:
        loaded.batch = batch.div_(255.0)
    return loaded


def resize_crop_many(images: Sequence, resize: int, crop: int):
    """:func:`resize_crop` of every image into one float32 (N,3,crop,crop) tensor, in the
    images' order; images of one size are stacked and resized in one call (photos come
    in few sizes: one call per size instead of one per image)."""
    import torch

    sizes: dict[tuple[int, int], list[int]] = {}
    for i, image in enumerate(images):
        sizes.setdefault(tuple(image.shape[-2:]), []).append(i)
    out = torch.empty((len(images), 3, crop, crop), dtype=torch.float32, device=images[0].device)
    for indices in sizes.values():
        group = torch.stack([images[i] for i in indices]) if len(indices) > 1 else images[indices[0]][None]
        crops = resize_crop(group, resize, crop)
        if len(indices) == len(images):
            out.copy_(crops)
        else:
            out[torch.tensor(indices, device=out.device)] = crops
    return out


def resize_crop(image, resize: int, crop: int):
    """uint8 (3,H,W) or (N,3,H,W) -> float32 (3|N,3,crop,crop), values 0..255: shorter
    side to ``resize`` (torchvision's output size), antialiased bilinear, centre crop
    (torchvision's offsets), in two calls instead of torchvision's many."""
    import torch.nn.functional as F

    single = image.dim() == 3
    batch = image[None] if single else image
    height, width = batch.shape[-2:]
    if height <= width:
        size = (resize, int(resize * width / height))
    else:
        size = (int(resize * height / width), resize)
    scaled = F.interpolate(batch.float(), size=size, mode="bilinear", antialias=True, align_corners=False)
    top = round((size[0] - crop) / 2.0)
    left = round((size[1] - crop) / 2.0)
    cropped = scaled[:, :, top:top + crop, left:left + crop]
    return cropped[0] if single else cropped


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Run this thread's torch ops on one thread (OpenMP's thread count is per calling
    thread: the model's own thread count, set where it runs, is not touched)."""
    import torch

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)
