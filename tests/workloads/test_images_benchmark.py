"""The images benchmark end to end on a real local cluster, with a model whose
predictions are known, so accuracy is checked exactly."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from workloads.core.errors import DatasetError
from workloads.images import benchmark, dataset, model
from workloads.images import synthetic as synth
from workloads.runs.results import PhaseTimer

from .support import COLOUR_MODEL

FAILED_KINDS = {"truncated": "truncated image", "empty": "empty file (0 bytes)", "not_image": "not an image"}


def expected_predictions(data_root, manifest) -> dict[str, int]:
    """Independently of the pipeline: nearest class colour to each decodable file's mean
    colour, in the normalised space the colour model works in."""
    colours = synth.class_colours()
    indices = np.array(list(colours))
    mean, std = np.array(dataset.MEAN), np.array(dataset.STD)
    centres = (np.array(list(colours.values())) / 255 - mean) / std
    expected = {}
    for name, entry in manifest["files"].items():
        if entry["kind"] in FAILED_KINDS:
            continue
        with Image.open(data_root / "dogs" / "Images" / name) as image:
            pixels = np.asarray(image.convert("RGB"), dtype=np.float64) / 255
        x = (pixels.reshape(-1, 3).mean(0) - mean) / std
        distances = ((centres - x) ** 2).sum(1)
        nearest, second = np.argsort(distances)[:2]
        assert distances[second] - distances[nearest] > 0.1, f"{name}: too close to call"
        expected[name] = int(indices[nearest])
    return expected


def config(data_root, **overrides) -> benchmark.ImagesConfig:
    values: dict[str, Any] = dict(dataset_dir=str(data_root / "dogs"), model=COLOUR_MODEL, batch_size=4,
                                  forward_batch=3)
    values.update(overrides)
    return benchmark.ImagesConfig(**values)


def test_exact_accuracy_counts_and_reasons(client, workers, data_root, manifest):
    timer = PhaseTimer()
    metrics = benchmark.run(client, config(data_root), timer)
    expected = expected_predictions(data_root, manifest)
    truth = {name: entry["index"] for name, entry in manifest["files"].items()}
    plain = [n for n, e in manifest["files"].items() if e["kind"] == "rgb"]
    assert all(expected[n] == truth[n] for n in plain)  # by construction of the data
    correct = sum(expected[n] == truth[n] for n in expected)

    total = len(manifest["files"])
    assert metrics["images_total"] == total
    assert metrics["images_failed"] == 3 and metrics["images_scored"] == total - 3
    reasons = {f["path"]: f["reason"] for f in metrics["failed"]}
    for name, entry in manifest["files"].items():
        if entry["kind"] in FAILED_KINDS:
            assert FAILED_KINDS[entry["kind"]] in reasons[name]
    assert sorted(c["from"] for c in metrics["converted"]) == ["CMYK", "L", "PNG"]
    assert metrics["images_converted"] == 3

    assert metrics["correct"] == correct  # seed rule: breed names are the class names here
    assert metrics["accuracy"] == round(correct / (total - 3), 6)
    assert metrics["exact_scored"] == total - 3
    assert metrics["top1_exact"] == round(correct / (total - 3), 6)
    assert metrics["top5_exact"] >= metrics["top1_exact"]
    assert metrics["weights"] == "factory" and "accuracy_note" not in metrics

    assert list(timer.phases) == ["list", "load_model", "infer", "score"]
    assert metrics["batches"] == math.ceil(total / 4)
    assert metrics["images_per_second"] > 0
    assert metrics["torch_threads"] == [1]  # each worker's share: 1 thread here
    assert sum(metrics["images_per_worker"].values()) == total - 3
    assert not any(client.run(lambda dask_worker: model.PLUGIN_NAME in dask_worker.plugins).values())


def test_weights_file_is_loaded(client, data_root, manifest, tmp_path):
    """Swap two classes' rows in the colour model's state dict: exactly those images flip."""
    truth = {name: entry["index"] for name, entry in manifest["files"].items()}
    first, second = sorted({e["index"] for e in manifest["files"].values()})[:2]
    state = synth.colour_classifier().state_dict()
    for key in ("2.weight", "2.bias"):
        state[key][[first, second]] = state[key][[second, first]]
    path = tmp_path / "swapped.pt"
    torch.save(state, path)
    baseline = benchmark.run(client, config(data_root), PhaseTimer())
    swapped = benchmark.run(client, config(data_root, weights=str(path)), PhaseTimer())
    affected = sum(1 for n, e in manifest["files"].items()
                   if e["kind"] == "rgb" and truth[n] in (first, second))
    assert affected > 0
    assert swapped["correct"] <= baseline["correct"] - affected
    assert swapped["weights"] == str(path)


def test_random_torchvision_weights_say_accuracy_is_not_meaningful(client, data_root):
    metrics = benchmark.run(client, config(data_root, model="resnet18", preprocess="seed", limit=6,
                                           batch_size=3), PhaseTimer())
    assert metrics["weights"] == "random"
    assert metrics["accuracy"] is None and metrics["top1_exact"] is None and metrics["top5_exact"] is None
    assert "not meaningful" in metrics["accuracy_note"]
    assert metrics["images_total"] == 6 and isinstance(metrics["correct"], int)


def test_restricted_to_one_worker(client, workers, data_root):
    metrics = benchmark.run(client, config(data_root, workers=(workers[1],)), PhaseTimer())
    assert list(metrics["images_per_worker"]) == [workers[1]]


def test_missing_dataset_fails_in_list_phase(client, tmp_path):
    timer = PhaseTimer()
    with pytest.raises(DatasetError, match="does not exist"):
        benchmark.run(client, config(tmp_path), timer)
    assert "list" in timer.unfinished and not timer.phases


def test_broken_weights_path_fails_in_load_model(client, data_root, tmp_path):
    timer = PhaseTimer()
    with pytest.raises(model.ModelNotLoaded, match="does not exist on worker tcp://"):
        benchmark.run(client, config(data_root, weights=str(tmp_path / "missing.pt")), timer)
    assert list(timer.phases) == ["list"] and "load_model" in timer.unfinished


def test_config_validation_names_the_field(data_root):
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        config(data_root, batch_size=0)
    with pytest.raises(ValueError, match="preprocess must be one of"):
        config(data_root, preprocess="fancy")


def test_a_worker_lost_while_the_model_loads_is_not_a_failed_run():
    """distributed's scheduler stores a worker plugin, then broadcasts it; a worker that dies
    mid-broadcast makes ``register_plugin`` raise CommClosedError (seen on a real cluster with
    a worker pod deleted). The model is then broadcast again; a third failure is raised."""
    from distributed.comm.core import CommClosedError

    from workloads.images import benchmark

    class Flaky:
        def __init__(self, failures):
            self.failures, self.calls = failures, 0

        def register_plugin(self, plugin):
            self.calls += 1
            if self.calls <= self.failures:
                raise CommClosedError("in <TLS (closed) ConnectionPool.register_worker_plugin>: Stream is closed")

    once = Flaky(1)
    benchmark.register_model(once, object())
    assert once.calls == 2
    always = Flaky(99)
    with pytest.raises(CommClosedError, match="register_worker_plugin"):
        benchmark.register_model(always, object())
    assert always.calls == benchmark.MODEL_REGISTER_ATTEMPTS
