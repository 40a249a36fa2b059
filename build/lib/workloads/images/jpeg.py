"""Decode and preprocess a batch with ``torchvision.io``: on the CPU (libjpeg-turbo, about
twice as fast as the PIL path) or on the worker's GPU (nvJPEG, so that a GPU worker's
cores only read bytes).

``--decode`` chooses: ``pil`` (:func:`dataset.load_batch`, PIL for every file), ``cpu``
(this module on the CPU), ``gpu`` (this module on CUDA; a worker without CUDA falls back
to ``cpu``, logged once), ``auto`` (``gpu`` on CUDA workers, else ``cpu``).

The recipe is the PIL path's (:data:`dataset.RECIPES`): shorter side to 256 with
torchvision's rounding, antialiased bilinear, centre crop, ImageNet mean/std; pixel
values differ from PIL's by at most one grey level. Only files that start like a JPEG
and end with its end-of-image marker are decoded here; the others (a PNG under a .jpg
name, truncated, empty or non-image files) and any file the decoder rejects (CMYK) take
the PIL path (:func:`dataset.decode`), which converts or reports them exactly as before.
Grayscale JPEGs are decoded here and reported as converted from ``L``. On the CPU the
decode runs on one torch thread: a worker's other threads are the model's. On the GPU,
per-image work is Python- and launch-bound, so at most :data:`GPU_DECODE_SLOTS` of a
worker's threads decode at once (measured on an H200: 16 threads decoding together
reached 1,250-1,650 images/s, 4 threads 2,400), and the resize is one
``torch.nn.functional.interpolate`` call per image.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Iterator, Sequence

from workloads.images import dataset

logger = logging.getLogger(__name__)

DECODES = ("auto", "cpu", "gpu", "pil")
GPU_DECODE_SLOTS = 4
_gpu_slots = threading.BoundedSemaphore(GPU_DECODE_SLOTS)
_JPEG_START, _JPEG_END = b"\xff\xd8\xff", b"\xff\xd9"
_warned: set[str] = set()


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
    """:func:`dataset.load_batch` with ``torchvision.io`` on ``device`` (``cpu`` or
    ``cuda``): (float32 tensor (N,3,crop,crop) on ``device`` or None, the files in it,
    failures [(file, reason)], conversions [(file, from)])."""
    try:
        resize, crop, normalise = dataset.RECIPES[recipe]
    except KeyError:
        raise ValueError(f"unknown preprocess recipe {recipe!r}; known: {', '.join(dataset.RECIPES)}") from None
    with _one_thread() if device == "cpu" else _gpu_slots:
        return _load(images_dir, files, resize, crop, normalise, device)


def read_jpegs(images_dir: str, files: Sequence[str]) -> dict:
    """{index in ``files``: its bytes as a uint8 tensor} for the files that read and look
    like whole JPEGs; the others are left out (the PIL path reports them)."""
    import torch

    raw = {}
    for i, name in enumerate(files):
        try:
            with open(os.path.join(images_dir, name), "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        if is_clean_jpeg(data):
            raw[i] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return raw


def decode_jpegs(raw: dict, device: str) -> dict:
    """{index: decoded image (C,H,W) uint8 on ``device``} for every entry of ``raw`` the
    decoder accepts, in one call where all of them decode; a file it rejects is left out
    (the PIL path reports it)."""
    from torchvision.io import ImageReadMode, decode_jpeg

    if not raw:
        return {}
    try:
        return dict(zip(raw, decode_jpeg(list(raw.values()), mode=ImageReadMode.UNCHANGED, device=device)))
    except RuntimeError:  # one file the decoder rejects fails the whole call: one by one
        decoded = {}
        for i, tensor in raw.items():
            try:
                decoded[i] = decode_jpeg(tensor, mode=ImageReadMode.UNCHANGED, device=device)
            except RuntimeError:
                continue
        return decoded


def _load(images_dir: str, files: Sequence[str], resize: int, crop: int, normalise: bool, device: str):
    import torch
    from torchvision.transforms.v2 import functional as F

    decoded = decode_jpegs(read_jpegs(images_dir, files), device)
    crops, kept, failed, converted = [], [], [], []
    for i, name in enumerate(files):
        image = decoded.get(i)
        if image is not None and image.shape[0] == 1:
            image = image.expand(3, -1, -1)
            converted.append((name, "L"))
        elif image is not None and image.shape[0] != 3:
            image = None
        if image is None:
            result = dataset.decode(os.path.join(images_dir, name))
            if result.error is not None:
                failed.append((name, result.error))
                continue
            if result.converted_from:
                converted.append((name, result.converted_from))
            image = F.pil_to_tensor(result.image).to(device)
        if device == "cpu":  # torchvision's uint8 resize: vectorised on the CPU
            crops.append(F.center_crop(F.resize(image, [resize], antialias=True), [crop]))
        else:
            crops.append(resize_crop(image, resize, crop))
        kept.append(name)
    if not crops:
        return None, kept, failed, converted
    batch = torch.stack(crops).float()
    if normalise:
        mean = torch.tensor([255 * m for m in dataset.MEAN], device=batch.device).view(1, 3, 1, 1)
        std = torch.tensor([255 * s for s in dataset.STD], device=batch.device).view(1, 3, 1, 1)
        return batch.sub_(mean).div_(std), kept, failed, converted
    return batch.div_(255.0), kept, failed, converted


def resize_crop(image, resize: int, crop: int):
    """uint8 (3,H,W) -> float32 (3,crop,crop), values 0..255: shorter side to ``resize``
    (torchvision's output size), antialiased bilinear, centre crop (torchvision's
    offsets), in two calls instead of torchvision's many."""
    import torch.nn.functional as F

    height, width = image.shape[-2:]
    if height <= width:
        size = (resize, int(resize * width / height))
    else:
        size = (int(resize * height / width), resize)
    scaled = F.interpolate(image[None].float(), size=size, mode="bilinear", antialias=True, align_corners=False)
    top = int(round((size[0] - crop) / 2.0))
    left = int(round((size[1] - crop) / 2.0))
    return scaled[0, :, top:top + crop, left:left + crop]


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
