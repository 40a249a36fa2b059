"""ImageNet-1k facts the benchmark needs offline: class names and the dog classes' wnids.

Class names come from torchvision's weight metadata (no download). The wnid -> index
table covers the ImageNet-1k classes that Stanford Dogs draws on: indices 151-268 (the
118 dog breeds) and 273-275 (dingo, dhole, African hunting dog), in ImageNet's sorted-wnid
order (``imagenet_dogs.yaml`` beside this module, data kept as data). It lets the benchmark
score exact top-1/top-5 by class index without the dataset's own wnids file.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

DOGS_FILE = "imagenet_dogs.yaml"  # beside this module: read as a package resource (workers may get a zip)


def _dog_wnids() -> dict[str, int]:
    import yaml

    table = yaml.safe_load(resources.files(__package__).joinpath(DOGS_FILE).read_text(encoding="utf-8"))
    return {str(wnid): int(index) for wnid, index in table["dogs"].items()}


DOG_WNIDS: dict[str, int] = _dog_wnids()
if len(DOG_WNIDS) != 121 or sorted(DOG_WNIDS.values())[117] != 268:  # the table as shipped: ImageNet's 118 dogs + 3
    raise RuntimeError(f"{DOGS_FILE}: not ImageNet's dog classes (121 entries, the 118th index 268)")


@lru_cache(maxsize=1)
def categories() -> tuple[str, ...]:
    """The 1000 ImageNet class names as torchvision ships them (offline)."""
    from torchvision.models import ResNet50_Weights

    return tuple(ResNet50_Weights.IMAGENET1K_V2.meta["categories"])
