"""The Stanford Dogs layout: walk it, read its label files, decode and preprocess images.

Layout under the dataset directory (``<data root>/dogs``)::

    Images/<wnid>-<breed>/<wnid>_<n>.jpg       the images (walked sorted, deterministic)
    imagenet1000_clsidx_to_labels.txt          optional: ``151: 'Chihuahua',`` per class
    wnids.txt or LOC_synset_mapping.txt        optional: wnid -> ImageNet class index

The wnid file may hold either one wnid per line in class-index order (ImageNet's
``LOC_synset_mapping.txt``: ``n01440764 tench, Tinca tinca``; line number = index), or
explicit pairs ``151 n02085620`` / ``151: n02085620``. Without one, the ImageNet-1k dog
classes built into :mod:`workloads.images.imagenet` are used (they cover every Stanford
Dogs folder). Class names come from the labels file, else from torchvision.

Functions here run on the workers (walking, decoding); nothing imports torch at module
level.
"""
from __future__ import annotations

import ast
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workloads.core.errors import DatasetError
from workloads.images import imagenet

logger = logging.getLogger(__name__)

IMAGES_DIR = "Images"
LABELS_FILE = "imagenet1000_clsidx_to_labels.txt"
WNIDS_FILES = ("wnids.txt", "LOC_synset_mapping.txt")
IMAGE_SUFFIXES = (".jpg", ".jpeg")

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
# name -> (resize, crop, normalise)
RECIPES: dict[str, tuple[int, int, bool]] = {
    "imagenet": (256, 224, True),  # torchvision's ImageNet evaluation recipe
    "seed": (256, 250, False),  # the paper's notebook's: crop 250, no normalisation
}

_WNID = re.compile(r"^n\d{8}$")


# ----------------------------------------------------------------------------- walking
@dataclass(frozen=True)
class Listing:
    """What the walk found: files relative to the images directory, and how to score them."""

    images_dir: str
    files: tuple[str, ...]  # "<wnid>-<breed>/<file>.jpg", sorted
    labels: tuple[str, ...]  # 1000 ImageNet class names, index = class
    labels_source: str
    wnid_index: dict[str, int]  # wnid -> ImageNet class index (may be partial)
    index_source: str
    ignored: int  # files in breed folders that are not *.jpg/*.jpeg


def walk_images(images_dir: str | os.PathLike) -> tuple[list[str], int]:
    """Every ``<breed folder>/<file>.jpg`` under ``images_dir``, sorted; and how many
    other files were skipped."""
    root = Path(images_dir)
    if not root.is_dir():
        raise DatasetError(f"images directory {root} does not exist (expected <data root>/dogs/Images)")
    files, ignored = [], 0
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        for entry in sorted(folder.iterdir()):
            if not entry.is_file():
                continue
            if entry.suffix.lower() in IMAGE_SUFFIXES:
                files.append(f"{folder.name}/{entry.name}")
            else:
                ignored += 1
    if not files:
        raise DatasetError(f"no *.jpg files in {root}/<wnid>-<breed>/")
    return files, ignored


def list_dataset(dataset_dir: str, limit: int | None = None) -> Listing:
    """Walk ``dataset_dir/Images`` and read the label files next to it (runs on a worker,
    which sees the shared volume). ``limit`` keeps the first N files of the sorted walk."""
    dogs = Path(dataset_dir)
    walked, ignored = walk_images(dogs / IMAGES_DIR)
    files = walked if limit is None else walked[:limit]
    labels_path = dogs / LABELS_FILE
    if labels_path.is_file():
        labels, labels_source = read_labels_file(labels_path), f"file:{labels_path}"
    else:
        labels, labels_source = list(imagenet.categories()), "torchvision"
    wnids_path = next((dogs / name for name in WNIDS_FILES if (dogs / name).is_file()), None)
    if wnids_path is not None:
        wnid_index, index_source = read_wnids_file(wnids_path), f"file:{wnids_path}"
    else:
        wnid_index, index_source = dict(imagenet.DOG_WNIDS), "builtin:imagenet-dogs"
    return Listing(str(dogs / IMAGES_DIR), tuple(files), tuple(labels), labels_source,
                   wnid_index, index_source, ignored)


def read_labels_file(path: str | os.PathLike) -> list[str]:
    """Parse ``imagenet1000_clsidx_to_labels.txt`` (a Python dict literal, one
    ``151: 'Chihuahua',`` per line) into 1000 names by index."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        mapping = ast.literal_eval(text.strip())
    except (SyntaxError, ValueError):
        mapping = {}
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip().lstrip("{").rstrip("}").rstrip(",").strip()
            if not line:
                continue
            key, _, value = line.partition(":")
            try:
                mapping[int(key)] = ast.literal_eval(value.strip())
            except (SyntaxError, ValueError):
                raise DatasetError(f"{path}:{number}: expected `<index>: '<name>',`, got {line!r}") from None
    if not isinstance(mapping, dict) or sorted(mapping) != list(range(len(mapping))) or not mapping:
        raise DatasetError(f"{path}: expected class indices 0..N-1, got {len(mapping)} entries")
    return [str(mapping[i]) for i in range(len(mapping))]


def read_wnids_file(path: str | os.PathLike) -> dict[str, int]:
    """Parse ``wnids.txt`` into wnid -> class index (see the module docstring)."""
    result: dict[str, int] = {}
    lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    index = 0
    for number, line in enumerate(lines, 1):
        if not line or line.startswith("#"):
            continue
        tokens = line.replace(":", " ").split()
        if tokens[0].isdigit() and len(tokens) > 1 and _WNID.match(tokens[1]):
            result[tokens[1]] = int(tokens[0])
        elif _WNID.match(tokens[0]):
            result[tokens[0]] = index
            index += 1
        else:
            raise DatasetError(f"{path}:{number}: expected `<wnid> [names]` or `<index> <wnid>`, got {line!r}")
    return result


def breed_of(folder: str) -> str:
    """``n02085620-Chihuahua`` -> ``Chihuahua``; underscores become spaces (the paper's rule)."""
    _, _, breed = folder.partition("-")
    return (breed or folder).replace("_", " ")


def wnid_of(folder: str) -> str | None:
    wnid = folder.partition("-")[0]
    return wnid if _WNID.match(wnid) else None


def make_batches(files: Sequence[str], batch_size: int) -> list[list[str]]:
    """Split the file list into tasks of ``batch_size`` images (never one task per image)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return [list(files[i:i + batch_size]) for i in range(0, len(files), batch_size)]


# ----------------------------------------------------------------------------- decoding
@dataclass(frozen=True)
class Decoded:
    image: Any  # PIL.Image in RGB, or None when it failed
    converted_from: str | None  # "L", "CMYK", "PNG/RGBA", ... when it was not an RGB JPEG
    error: str | None


def decode(path: str | os.PathLike) -> Decoded:
    """Open one file as an RGB image. Grayscale, CMYK, palette or alpha images and
    non-JPEG formats under a .jpg name are converted; empty, truncated and non-image
    files come back with a reason instead of raising."""
    from PIL import Image, UnidentifiedImageError

    try:
        if os.path.getsize(path) == 0:
            return Decoded(None, None, "empty file (0 bytes)")
        with Image.open(path) as image:
            image.load()
            fmt, mode = image.format or "unknown", image.mode
            rgb = image.convert("RGB") if mode != "RGB" else image.copy()
    except UnidentifiedImageError:
        return Decoded(None, None, "not an image (unrecognised format)")
    except OSError as exc:
        text = str(exc)
        if "truncated" in text.lower():  # "image file is truncated ...", "Truncated File Read"
            return Decoded(None, None, f"truncated image: {text}")
        return Decoded(None, None, f"unreadable image: {text}")
    except Exception as exc:  # decoders raise a zoo of types (SyntaxError, ValueError, ...)
        return Decoded(None, None, f"undecodable image: {type(exc).__name__}: {exc}")
    parts = [fmt] if fmt != "JPEG" else []
    if mode != "RGB":
        parts.append(mode)
    return Decoded(rgb, "/".join(parts) or None, None)


def preprocess(image, recipe: str = "imagenet"):
    """Resize(256) -> CenterCrop -> ToTensor (-> Normalize with ImageNet mean/std):
    a float32 tensor of shape (3, crop, crop)."""
    from torchvision.transforms import functional as F

    try:
        resize, crop, normalise = RECIPES[recipe]
    except KeyError:
        raise ValueError(f"unknown preprocess recipe {recipe!r}; known: {', '.join(RECIPES)}") from None
    tensor = F.to_tensor(F.center_crop(F.resize(image, resize), crop))
    return F.normalize(tensor, MEAN, STD) if normalise else tensor


def load_batch(images_dir: str, files: Sequence[str], recipe: str):
    """Decode and preprocess a batch. Returns (tensor (N,3,H,W) or None, the files in
    it, failures [(file, reason)], conversions [(file, from)])."""
    import torch

    tensors, kept, failed, converted = [], [], [], []
    for name in files:
        decoded = decode(os.path.join(images_dir, name))
        if decoded.error is not None:
            failed.append((name, decoded.error))
            continue
        if decoded.converted_from:
            converted.append((name, decoded.converted_from))
        tensors.append(preprocess(decoded.image, recipe))
        kept.append(name)
    batch = torch.stack(tensors) if tensors else None
    return batch, kept, failed, converted
