"""A small Stanford-Dogs-like tree, generated with a fixed seed, and a model that reads it.

``generate`` writes ``<dogs>/Images/<wnid>-<breed>/<wnid>_<n>.jpg`` for N breeds x M
images, the breeds drawn from the real ImageNet dog classes (so folder names match
torchvision's category names and the paper's substring scoring works), plus
``imagenet1000_clsidx_to_labels.txt`` written from torchvision's category list. Each
image is its class's colour (a fixed 5x5x5-grid colour per ImageNet dog class) with mild
noise, so :func:`colour_classifier`, a three-input linear model with constructed weights,
predicts every plain image's class exactly: accuracy is checkable.

Optionally it adds the file kinds that are not plain RGB JPEGs, one of each:
``grayscale``/``cmyk`` (JPEGs in those modes) and ``png`` (a PNG under a .jpg name) must
be converted and scored; ``truncated``, ``empty`` (0 bytes) and ``not_image`` must be
skipped and counted. A manifest of what was written goes to ``<dogs>/.synth-images.json``;
a second call with the same parameters is a no-op.
"""
from __future__ import annotations

import io
import json
import logging
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workloads.images import imagenet
from workloads.images.dataset import IMAGES_DIR, LABELS_FILE, MEAN, STD

logger = logging.getLogger(__name__)

MANIFEST = ".synth-images.json"
LEVELS = (0, 64, 128, 192, 255)
PALETTE_SEED = 20580
CONVERTED_KINDS = ("grayscale", "cmyk", "png")
FAILED_KINDS = ("truncated", "empty", "not_image")
BROKEN_KINDS = CONVERTED_KINDS + FAILED_KINDS


@dataclass(frozen=True)
class TreeParams:
    breeds: int = 4
    images_per_breed: int = 6
    broken: tuple[str, ...] = ()
    seed: int = 0
    min_size: int = 160
    max_size: int = 360
    noise: int = 12
    labels_file: bool = True


def class_colours() -> dict[int, tuple[int, int, int]]:
    """ImageNet dog class index -> its RGB colour (distinct grid points, fixed)."""
    grid = [(r, g, b) for r in LEVELS for g in LEVELS for b in LEVELS]
    order = np.random.default_rng(PALETTE_SEED).permutation(len(grid))
    indices = sorted(imagenet.DOG_WNIDS.values())
    return {index: grid[order[i]] for i, index in enumerate(indices)}


def generate(dogs_dir: str | Path, breeds: int = 4, images_per_breed: int = 6,
             broken: bool | Iterable[str] = (), seed: int = 0, min_size: int = 160,
             max_size: int = 360, noise: int = 12, labels_file: bool = True) -> dict[str, Any]:
    """Write the tree under ``dogs_dir`` and return its manifest (see the module docstring).

    ``broken=True`` adds one file of every kind in :data:`BROKEN_KINDS`.
    """
    kinds = BROKEN_KINDS if broken is True else tuple(broken or ())
    unknown = set(kinds) - set(BROKEN_KINDS)
    if unknown:
        raise ValueError(f"unknown broken-file kinds {sorted(unknown)}; known: {', '.join(BROKEN_KINDS)}")
    params = TreeParams(breeds, images_per_breed, tuple(kinds), seed, min_size, max_size, noise, labels_file)
    if not 1 <= breeds <= len(imagenet.DOG_WNIDS):
        raise ValueError(f"breeds must be 1..{len(imagenet.DOG_WNIDS)}, got {breeds}")
    dogs = Path(dogs_dir)
    marker = dogs / MANIFEST
    if marker.exists():
        manifest = json.loads(marker.read_text())
        if manifest.get("params") == _jsonable(params):
            return manifest
        shutil.rmtree(dogs / IMAGES_DIR, ignore_errors=True)  # ours, with other parameters
    elif (dogs / IMAGES_DIR).exists():
        raise FileExistsError(f"{dogs / IMAGES_DIR} exists and was not generated here: refusing to touch it")

    rng = np.random.default_rng(seed)
    names = imagenet.categories()
    colours = class_colours()
    wnids = sorted(imagenet.DOG_WNIDS)
    chosen = sorted(rng.choice(len(wnids), size=breeds, replace=False))
    files: dict[str, dict[str, Any]] = {}
    folders = []
    for position in chosen:
        wnid = wnids[position]
        index = imagenet.DOG_WNIDS[wnid]
        folder = f"{wnid}-{names[index].replace(' ', '_')}"
        folders.append((folder, wnid, index))
        (dogs / IMAGES_DIR / folder).mkdir(parents=True, exist_ok=True)
        for number in _numbers(rng, images_per_breed):
            rel = f"{folder}/{wnid}_{number}.jpg"
            _image(rng, colours[index], params).save(dogs / IMAGES_DIR / rel, format="JPEG", quality=90)
            files[rel] = {"index": index, "kind": "rgb"}
    for i, kind in enumerate(kinds):
        folder, wnid, index = folders[i % len(folders)]
        rel = f"{folder}/{wnid}_{30000 + i}.jpg"
        (dogs / IMAGES_DIR / rel).write_bytes(_broken(kind, _image(rng, colours[index], params)))
        files[rel] = {"index": index, "kind": kind}
    if labels_file:
        write_labels_file(dogs / LABELS_FILE, names)
    manifest = {"params": _jsonable(params), "files": dict(sorted(files.items()))}
    marker.write_text(json.dumps(manifest, indent=1))
    logger.info("generated %d images (%d breeds%s) under %s", len(files), breeds, _what_the_run_counts(kinds), dogs)
    return manifest


def _what_the_run_counts(kinds: Iterable[str]) -> str:
    """The odd files as the run will count them: converted and scored (``images_converted``),
    or skipped (``images_failed``)."""
    converted = [k for k in kinds if k in CONVERTED_KINDS]
    skipped = [k for k in kinds if k in FAILED_KINDS]
    parts = ([f"{len(converted)} the run converts and scores (images_converted): {', '.join(converted)}"]
             if converted else [])
    parts += [f"{len(skipped)} it skips and counts (images_failed): {', '.join(skipped)}"] if skipped else []
    return "".join(f"; {part}" for part in parts)


def write_labels_file(path: str | Path, names: Iterable[str]) -> None:
    """``imagenet1000_clsidx_to_labels.txt`` in the original's format: ``{0: 'tench',`` ..."""
    lines = [f"{i}: {name!r}" for i, name in enumerate(names)]
    Path(path).write_text("{" + ",\n ".join(lines) + "}\n", encoding="utf-8")


def colour_classifier():
    """An ``nn.Module`` (mean colour -> linear layer over the 1000 ImageNet classes) whose
    constructed weights score each dog class by the squared distance between the image's
    mean colour and the class colour, in the normalised space of the ``imagenet``
    preprocessing recipe. Non-dog classes are never predicted. Use it as
    ``--model workloads.images.synthetic:colour_classifier``."""
    import torch
    from torch import nn

    linear = nn.Linear(3, 1000)
    mean, std = torch.tensor(MEAN), torch.tensor(STD)
    with torch.no_grad():
        linear.weight.zero_()
        linear.bias.fill_(-1e4)
        for index, rgb in class_colours().items():
            centre = (torch.tensor(rgb, dtype=torch.float32) / 255 - mean) / std
            linear.weight[index] = 2 * centre  # -|x - c|^2 = 2 x.c - |c|^2 - |x|^2
            linear.bias[index] = -(centre * centre).sum()
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), linear)


def _numbers(rng: np.random.Generator, count: int) -> list[int]:
    return sorted(int(n) for n in rng.choice(np.arange(100, 20000), size=count, replace=False))


def _image(rng: np.random.Generator, colour: tuple[int, int, int], params: TreeParams):
    from PIL import Image

    width, height = (int(v) for v in rng.integers(params.min_size, params.max_size + 1, size=2))
    pixels = np.asarray(colour, dtype=np.int16) + rng.integers(-params.noise, params.noise + 1,
                                                                size=(height, width, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def _broken(kind: str, image) -> bytes:
    buffer = io.BytesIO()
    if kind == "grayscale":
        image.convert("L").save(buffer, format="JPEG", quality=90)
    elif kind == "cmyk":
        image.convert("CMYK").save(buffer, format="JPEG", quality=90)
    elif kind == "png":
        image.save(buffer, format="PNG")
    elif kind == "truncated":
        image.save(buffer, format="JPEG", quality=90)
        return buffer.getvalue()[: len(buffer.getvalue()) // 2]
    elif kind == "empty":
        return b""
    elif kind == "not_image":
        return b"<html><body>404 Not Found</body></html>\n"
    return buffer.getvalue()


def _jsonable(params: TreeParams) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(params)))
