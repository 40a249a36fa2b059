"""Textured images for the reduced-precision agreement figure, in the Stanford Dogs layout.

The workload's generated trees give each class one flat colour, so any classifier
separates them by a wide margin and "bf16 agrees with fp32" could not fail. Here a
class is an oriented sine grating (its own orientation and spatial frequency) over a
colour that is half the class's and half drawn per image; each image also gets its
own phase, an orientation and frequency jitter, a size and pixel noise. Classes then
overlap in mean colour and differ in texture, and a head fitted to them has the small
decision margins a real classifier has on hard images.

The class set depends on ``breeds`` only (not on ``seed``), so a tree drawn with one
seed (the probe head's fitting images) and another with a different seed (the images
the agreement is measured on) hold the same classes and no common image.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from workloads.images import imagenet
from workloads.images.dataset import IMAGES_DIR, LABELS_FILE

MANIFEST = ".textured-images.json"
CLASSES_SEED = 7  # fixes which ImageNet dog classes a tree of N breeds holds


def classes(breeds: int) -> list[tuple[str, int]]:
    """The (wnid, ImageNet index) of a tree with ``breeds`` classes."""
    wnids = sorted(imagenet.DOG_WNIDS)
    if not 1 <= breeds <= len(wnids):
        raise ValueError(f"breeds must be 1..{len(wnids)}, got {breeds}")
    chosen = sorted(np.random.default_rng(CLASSES_SEED).choice(len(wnids), size=breeds, replace=False))
    return [(wnids[i], imagenet.DOG_WNIDS[wnids[i]]) for i in chosen]


def generate(dogs_dir: str | Path, breeds: int, images_per_breed: int, seed: int,
             size: tuple[int, int] = (300, 420)) -> dict[str, Any]:
    """Write the tree under ``dogs_dir`` (a no-op when it holds these parameters already);
    returns its manifest ({"params", "files": {relative path: sha256}})."""
    from workloads.images.synthetic import write_labels_file

    dogs = Path(dogs_dir)
    params = {"breeds": breeds, "images_per_breed": images_per_breed, "seed": seed, "size": list(size)}
    marker = dogs / MANIFEST
    if marker.exists() and json.loads(marker.read_text()).get("params") == params:
        return json.loads(marker.read_text())
    rng = np.random.default_rng(seed)
    files = {}
    for position, (wnid, index) in enumerate(classes(breeds)):
        folder = f"{wnid}-{imagenet.categories()[index].replace(' ', '_')}"
        (dogs / IMAGES_DIR / folder).mkdir(parents=True, exist_ok=True)
        for number in range(images_per_breed):
            rel = f"{folder}/{wnid}_{seed * 100000 + number}.jpg"
            path = dogs / IMAGES_DIR / rel
            _image(rng, position, breeds, size).save(path, format="JPEG", quality=90)
            files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    write_labels_file(dogs / LABELS_FILE, imagenet.categories())
    manifest = {"params": params, "files": files}
    marker.write_text(json.dumps(manifest, indent=1))
    return manifest


def _image(rng: np.random.Generator, position: int, breeds: int, size: tuple[int, int]):
    from PIL import Image

    width, height = (int(v) for v in rng.integers(size[0], size[1] + 1, size=2))
    angle = np.pi * position / breeds + rng.normal(0, np.pi / (6 * breeds))
    period = 12.0 + 28.0 * ((position * 5) % breeds) / max(1, breeds - 1) + rng.normal(0, 1.5)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    wave = np.sin(2 * np.pi * (x * np.cos(angle) + y * np.sin(angle)) / period + rng.uniform(0, 2 * np.pi))
    class_colour = np.array([(position * 97) % 256, (position * 57 + 80) % 256, (position * 31 + 160) % 256])
    colour = 0.5 * class_colour + 0.5 * rng.uniform(0, 255, size=3)
    pixels = colour + 70.0 * wave[..., None] + rng.normal(0, 18, size=(height, width, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def shared_images(first: dict[str, Any], second: dict[str, Any]) -> int:
    """How many images (by content) two manifests have in common."""
    return len(set(first["files"].values()) & set(second["files"].values()))
