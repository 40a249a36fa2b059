"""The generator writes the real layout, deterministically, with every broken-file kind."""
from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from workloads.images import dataset, imagenet
from workloads.images import synthetic as synth

from .support import BREEDS, PER_BREED


def _digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def test_layout_names_and_kinds(data_root, manifest):
    images = data_root / "dogs" / "Images"
    folders = sorted(p.name for p in images.iterdir())
    assert len(folders) == BREEDS
    names = imagenet.categories()
    for folder in folders:
        wnid, _, breed = folder.partition("-")
        assert wnid in imagenet.DOG_WNIDS
        assert names[imagenet.DOG_WNIDS[wnid]] == breed.replace("_", " ")  # folder names match torchvision
    files = sorted(str(p.relative_to(images)) for p in images.rglob("*.jpg"))
    assert files == sorted(manifest["files"])
    kinds = [entry["kind"] for entry in manifest["files"].values()]
    assert kinds.count("rgb") == BREEDS * PER_BREED
    assert sorted(k for k in kinds if k != "rgb") == sorted(synth.BROKEN_KINDS)
    for name in files:
        wnid = name.split("-", 1)[0]
        assert Path(name).name.startswith(f"{wnid}_")
    assert dataset.read_labels_file(data_root / "dogs" / dataset.LABELS_FILE) == list(names)


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        synth.generate(tmp_path / name / "dogs", breeds=2, images_per_breed=2, broken=True, seed=seed)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")


def test_second_call_is_a_no_op_and_new_parameters_regenerate(tmp_path):
    dogs = tmp_path / "dogs"
    first = synth.generate(dogs, breeds=2, images_per_breed=2)
    one = next((dogs / "Images").rglob("*.jpg"))
    stamp = one.stat().st_mtime_ns
    assert synth.generate(dogs, breeds=2, images_per_breed=2) == first
    assert one.stat().st_mtime_ns == stamp
    again = synth.generate(dogs, breeds=3, images_per_breed=1)
    assert len(again["files"]) == 3
    assert len(list((dogs / "Images").rglob("*.jpg"))) == 3


def test_refuses_to_overwrite_a_dataset_it_did_not_write(tmp_path):
    (tmp_path / "dogs" / "Images" / "n02085620-Chihuahua").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="not generated here"):
        synth.generate(tmp_path / "dogs")


def test_unknown_broken_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown broken-file kinds"):
        synth.generate(tmp_path / "dogs", broken=["sideways"])


def test_colours_are_distinct_and_the_colour_model_separates_them():
    import torch

    colours = synth.class_colours()
    assert len(set(colours.values())) == len(colours) == len(imagenet.DOG_WNIDS)
    model = synth.colour_classifier().eval()
    mean, std = torch.tensor(dataset.MEAN), torch.tensor(dataset.STD)
    batch = torch.stack([((torch.tensor(rgb) / 255 - mean) / std).view(3, 1, 1).expand(3, 8, 8)
                         for rgb in colours.values()])
    with torch.no_grad():
        predicted = model(batch).argmax(1).tolist()
    assert predicted == list(colours)


def test_the_log_line_counts_the_odd_files_as_the_run_will(tmp_path, caplog):
    """Odd but decodable files are converted and scored, the others skipped: the line says
    which is which, as the run's ``images_converted`` and ``images_failed`` will."""
    with caplog.at_level(logging.INFO, logger="workloads.images.synthetic"):
        synth.generate(tmp_path / "dogs", breeds=2, images_per_breed=2, broken=True)
    assert ("generated 10 images (2 breeds; 3 the run converts and scores (images_converted): grayscale, cmyk,"
            " png; 3 it skips and counts (images_failed): truncated, empty, not_image) under") in caplog.text
