"""The bf16 agreement figure can fail: textured classes, a probe head judged on images it
never saw, and a comparison of logits that drops when precision is deliberately broken."""
from __future__ import annotations

import pytest

from bench.images import probe, textured
from workloads.images import dataset


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("textured")
    fit = textured.generate(root / "fit", breeds=3, images_per_breed=6, seed=1, size=(230, 260))
    held_out = textured.generate(root / "eval", breeds=3, images_per_breed=4, seed=2, size=(230, 260))
    return root, fit, held_out


def test_fit_and_eval_trees_hold_the_same_classes_and_no_common_image(trees):
    root, fit, held_out = trees
    assert textured.shared_images(fit, held_out) == 0
    assert textured.shared_images(fit, fit) == len(fit["files"]) == 18
    folders = {name.split("/")[0] for name in fit["files"]}
    assert folders == {name.split("/")[0] for name in held_out["files"]} and len(folders) == 3
    # a second call with the same parameters writes nothing new
    assert textured.generate(root / "eval", breeds=3, images_per_breed=4, seed=2, size=(230, 260)) == held_out


def test_classes_overlap_in_mean_colour(trees):
    """Not one flat colour per class: the mean colour alone does not tell the classes apart."""
    import numpy as np
    from PIL import Image

    root, fit, _ = trees
    means: dict[str, list] = {}
    for name in fit["files"]:
        pixels = np.asarray(Image.open(root / "fit" / dataset.IMAGES_DIR / name), dtype=np.float64)
        means.setdefault(name.split("/")[0], []).append(pixels.mean(axis=(0, 1)))
    spread_within = np.mean([np.std(v, axis=0).mean() for v in means.values()])
    assert spread_within > 15  # grey levels: the per-image colour varies inside a class


@pytest.fixture(scope="module")
def weights(trees, tmp_path_factory):
    """A resnet18 probe head fitted on the `fit` tree (the bench's fitting code, in-process)."""
    root, _, _ = trees
    listing = dataset.list_dataset(str(root / "fit"))
    kept, feats = probe.features(listing.images_dir, list(listing.files), "imagenet", "resnet18", 0)
    classes = [listing.wnid_index[dataset.wnid_of(f.split("/", 1)[0])] for f in kept]
    weight, bias = probe.fit_head(feats, classes)
    return probe.save(str(tmp_path_factory.mktemp("weights") / "probe.pt"), "resnet18", 0, weight, bias)


def _compare(trees, weights, **kwargs):
    root, _, _ = trees
    listing = dataset.list_dataset(str(root / "eval"))
    spec = dict(model="resnet18", weights=weights, device="cpu", seed=0, channels_last=True, fold_batchnorm=True)
    return probe.summarise([probe.logit_agreement(listing.images_dir, list(listing.files), "imagenet", spec, 1,
                                                  **kwargs)])


def test_logits_of_bf16_stay_close_to_fp32_on_held_out_images(trees, weights):
    summary = _compare(trees, weights, candidate="bf16")
    assert summary["images"] == 12
    assert summary["cosine_mean"] > 0.99 and summary["top1_agreement"] >= 0.75


def test_agreement_falls_when_precision_is_deliberately_broken(trees, weights):
    intact = _compare(trees, weights, candidate="bf16")
    broken = _compare(trees, weights, candidate="bf16", perturb=0.3)
    assert broken["cosine_mean"] < intact["cosine_mean"] - 0.01
    assert broken["top1_agreement"] < intact["top1_agreement"]
    assert broken["cosine_min"] < 0.99
