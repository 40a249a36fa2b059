"""Walking, label files, decoding every bad-file kind, preprocessing vs torchvision."""
from __future__ import annotations

import pytest
from PIL import Image

from workloads.core.errors import DatasetError
from workloads.images import dataset, imagenet

EXPECTED = {  # kind -> (error reason fragment, converted-from)
    "rgb": (None, None),
    "grayscale": (None, "L"),
    "cmyk": (None, "CMYK"),
    "png": (None, "PNG"),
    "truncated": ("truncated image", None),
    "empty": ("empty file (0 bytes)", None),
    "not_image": ("not an image", None),
}


def test_walk_is_sorted_and_skips_other_files(data_root, manifest, tmp_path):
    files, ignored = dataset.walk_images(data_root / "dogs" / "Images")
    assert files == sorted(manifest["files"]) and ignored == 0
    tree = tmp_path / "Images" / "n02085620-Chihuahua"
    tree.mkdir(parents=True)
    for name in ("b.jpg", "a.JPEG", "notes.txt"):
        (tree / name).write_bytes(b"x")
    assert dataset.walk_images(tmp_path / "Images") == (["n02085620-Chihuahua/a.JPEG", "n02085620-Chihuahua/b.jpg"], 1)


def test_walk_errors_name_the_directory(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        dataset.walk_images(tmp_path / "nope")
    (tmp_path / "Images" / "n1-x").mkdir(parents=True)
    with pytest.raises(DatasetError, match=r"no \*\.jpg files"):
        dataset.walk_images(tmp_path / "Images")


def test_every_kind_decodes_or_fails_with_its_reason(data_root, manifest):
    images = data_root / "dogs" / "Images"
    seen = set()
    for name, entry in manifest["files"].items():
        reason, converted = EXPECTED[entry["kind"]]
        decoded = dataset.decode(images / name)
        seen.add(entry["kind"])
        if reason:
            assert decoded.image is None and reason in decoded.error, (name, decoded.error)
        else:
            assert decoded.error is None and decoded.image.mode == "RGB"
            assert decoded.converted_from == converted
    assert seen == set(EXPECTED)


def test_load_batch_keeps_order_and_reports_failures(data_root, manifest):
    names = list(manifest["files"])
    batch, kept, failed, converted = dataset.load_batch(str(data_root / "dogs" / "Images"), names, "imagenet")
    bad = {n for n, e in manifest["files"].items() if e["kind"] in ("truncated", "empty", "not_image")}
    assert kept == [n for n in names if n not in bad]
    assert {n for n, _ in failed} == bad
    assert sorted(k for _, k in converted) == ["CMYK", "L", "PNG"]
    assert tuple(batch.shape) == (len(kept), 3, 224, 224)


@pytest.mark.parametrize("size", [(500, 375), (375, 500), (120, 90), (256, 256)])
def test_preprocessing_matches_torchvision(size):
    import numpy as np
    import torch
    from torchvision import transforms as T

    rng = np.random.default_rng(sum(size))
    image = Image.fromarray(rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8), "RGB")
    imagenet_recipe = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                                 T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    seed_recipe = T.Compose([T.Resize(256), T.CenterCrop(250), T.ToTensor()])
    ours = dataset.preprocess(image, "imagenet")
    assert ours.shape == (3, 224, 224) and ours.dtype == torch.float32
    assert torch.equal(ours, imagenet_recipe(image))
    assert torch.equal(dataset.preprocess(image, "seed"), seed_recipe(image))
    with pytest.raises(ValueError, match="unknown preprocess recipe"):
        dataset.preprocess(image, "fancy")


def test_labels_file_formats(tmp_path):
    literal = tmp_path / "labels.txt"
    literal.write_text("{0: 'tench, Tinca tinca',\n 1: \"carpenter's kit, tool kit\",\n 2: 'Chihuahua'}\n")
    assert dataset.read_labels_file(literal) == ["tench, Tinca tinca", "carpenter's kit, tool kit", "Chihuahua"]
    cut = tmp_path / "cut.txt"  # no closing brace: parsed line by line
    cut.write_text("{0: 'tench',\n 1: 'goldfish',\n")
    assert dataset.read_labels_file(cut) == ["tench", "goldfish"]
    broken = tmp_path / "broken.txt"
    broken.write_text("{0: 'tench',\n 1 goldfish\n")
    with pytest.raises(DatasetError, match=r"broken.txt:2"):
        dataset.read_labels_file(broken)
    gap = tmp_path / "gap.txt"
    gap.write_text("{0: 'a', 2: 'c'}")
    with pytest.raises(DatasetError, match=r"indices 0\.\.N-1"):
        dataset.read_labels_file(gap)


def test_wnids_file_formats(tmp_path):
    ordered = tmp_path / "LOC_synset_mapping.txt"
    ordered.write_text("n01440764 tench, Tinca tinca\nn01443537 goldfish\n")
    assert dataset.read_wnids_file(ordered) == {"n01440764": 0, "n01443537": 1}
    explicit = tmp_path / "wnids.txt"
    explicit.write_text("# comment\n151 n02085620\n152: n02085782\n")
    assert dataset.read_wnids_file(explicit) == {"n02085620": 151, "n02085782": 152}
    bad = tmp_path / "bad.txt"
    bad.write_text("Chihuahua\n")
    with pytest.raises(DatasetError, match=r"bad\.txt:1"):
        dataset.read_wnids_file(bad)


def test_listing_prefers_files_next_to_images(data_root, tmp_path):
    listing = dataset.list_dataset(str(data_root / "dogs"), limit=3)
    assert len(listing.files) == 3 and listing.labels_source.startswith("file:")
    assert listing.index_source == "builtin:imagenet-dogs" and listing.wnid_index == imagenet.DOG_WNIDS
    dogs = tmp_path / "dogs"
    (dogs / "Images" / "n02085620-Chihuahua").mkdir(parents=True)
    (dogs / "Images" / "n02085620-Chihuahua" / "n02085620_1.jpg").write_bytes(b"")
    (dogs / "wnids.txt").write_text("7 n02085620\n")
    listing = dataset.list_dataset(str(dogs))
    assert listing.labels_source == "torchvision" and len(listing.labels) == 1000
    assert listing.wnid_index == {"n02085620": 7} and listing.index_source.startswith("file:")


def test_breeds_batches_and_imagenet_table():
    assert dataset.breed_of("n02086240-Shih-Tzu") == "Shih-Tzu"
    assert dataset.breed_of("n02085936-Maltese_dog") == "Maltese dog"
    assert dataset.wnid_of("n02085936-Maltese_dog") == "n02085936" and dataset.wnid_of("misc") is None
    assert [len(b) for b in dataset.make_batches(list("abcdefg"), 3)] == [3, 3, 1]
    with pytest.raises(ValueError):
        dataset.make_batches(["a"], 0)
    names = imagenet.categories()
    assert names[imagenet.DOG_WNIDS["n02085620"]] == "Chihuahua"
    assert names[imagenet.DOG_WNIDS["n02113978"]] == "Mexican hairless"
    assert names[imagenet.DOG_WNIDS["n02116738"]] == "African hunting dog"


def test_other_shapes_of_bad_files(tmp_path):
    import numpy as np

    good = tmp_path / "good.jpg"
    Image.fromarray(np.full((64, 64, 3), 90, np.uint8)).save(good)
    (tmp_path / "cut.jpg").write_bytes(good.read_bytes()[:200])  # cut inside the headers
    assert dataset.decode(tmp_path / "cut.jpg").error.startswith("truncated image")
    Image.fromarray(np.zeros((20, 30, 4), np.uint8)).save(tmp_path / "rgba.jpg", format="PNG")
    Image.fromarray(np.zeros((20, 30, 3), np.uint8)).convert("P").save(tmp_path / "gif.jpg", format="GIF")
    assert dataset.decode(tmp_path / "rgba.jpg").converted_from == "PNG/RGBA"
    decoded = dataset.decode(tmp_path / "gif.jpg")
    assert decoded.converted_from == "GIF/P" and decoded.image.mode == "RGB"
