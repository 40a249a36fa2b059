"""Decoding overlapped with the model (workloads.images.prefetch, workloads.images.overlap):
order kept, every item once, errors raised at their place, threads stopped, and the
next batch really decoded while the model runs on the current one (these tests wait for
that with a timeout: a pipeline that runs the steps one after the other fails them)."""
from __future__ import annotations

import random
import threading
import time

import pytest

from workloads.images import dataset, jpeg, overlap, prefetch
from workloads.images import synthetic as synth
from workloads.images.benchmark import ImagesConfig, run
from workloads.runs.results import PhaseTimer

OVERLAP_TIMEOUT = 10.0  # seconds a step may take to start: generous for a loaded 2-core machine


def prefetch_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("prefetch-")]


def test_items_come_out_in_order_each_exactly_once():
    rng = random.Random(0)

    def slow(item):
        time.sleep(rng.random() / 200)
        return item

    out = list(prefetch.pipeline(range(60), [slow, lambda item: (item, item * item)], depth=2))
    assert out == [(i, i * i) for i in range(60)]
    assert not prefetch_threads()


def test_the_next_item_is_worked_on_while_the_consumer_holds_the_current_one():
    started = {i: threading.Event() for i in range(4)}

    def read(item):
        started[item].set()
        return item

    results = []
    for item in prefetch.pipeline(range(4), [read, lambda item: item], depth=1):
        if item + 1 in started:  # the consumer is "running the model" on item
            assert started[item + 1].wait(OVERLAP_TIMEOUT), f"item {item + 1} was not started while {item} ran"
        results.append(item)
    assert results == [0, 1, 2, 3]


def test_reading_runs_ahead_of_decoding():
    """While the decode step is busy with item 1, the read step takes item 2."""
    read_started = {i: threading.Event() for i in range(3)}
    release = threading.Event()

    def read(item):
        read_started[item].set()
        return item

    def decode(item):
        if item == 1:
            assert read_started[2].wait(OVERLAP_TIMEOUT), "item 2 was not read while item 1 decoded"
            release.set()
        return item

    assert list(prefetch.pipeline(range(3), [read, decode], depth=1)) == [0, 1, 2]
    assert release.is_set()


def test_a_failing_step_raises_at_its_item_after_the_ones_before():
    def decode(item):
        if item == 3:
            raise ValueError("bad batch 3")
        return item

    seen = []
    with pytest.raises(ValueError, match="bad batch 3"):
        for item in prefetch.pipeline(range(10), [lambda item: item, decode], depth=2):
            seen.append(item)
    assert seen == [0, 1, 2]
    assert not prefetch_threads()


def test_a_failing_source_raises_too():
    def items():
        yield 0
        raise OSError("listing vanished")

    with pytest.raises(OSError, match="listing vanished"):
        list(prefetch.pipeline(items(), [lambda item: item], depth=2))


def test_a_consumer_that_stops_early_stops_the_threads():
    for item in prefetch.pipeline(range(1000), [lambda item: item, lambda item: item], depth=2):
        if item == 5:
            break
    deadline = time.monotonic() + 5
    while prefetch_threads() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not prefetch_threads()


def test_depth_zero_runs_inline():
    names = []
    out = list(prefetch.pipeline(range(3), [lambda item: names.append(threading.current_thread().name) or item],
                                 depth=0))
    assert out == [0, 1, 2] and set(names) == {threading.current_thread().name}


# ----------------------------------------------------------------------------- one task's files
@pytest.fixture(scope="module")
def dogs(tmp_path_factory):
    root = tmp_path_factory.mktemp("overlap") / "dogs"
    manifest = synth.generate(root, breeds=3, images_per_breed=6, broken=True, seed=5)
    return root, manifest


class RecordingModel:
    """A ``ModelPlugin.predict`` stand-in: top-1 is the image's mean red value (so the
    output is tied to the image), and it records whether, while it "ran" on batch n,
    the decoding of batch n+1 had started (waiting for it up to a timeout)."""

    def __init__(self, decode_calls: list, batches: int, timeout: float):
        self.decode_calls = decode_calls
        self.batches = batches
        self.timeout = timeout
        self.overlapped: list[bool] = []

    def predict(self, batch, chunk=None, precision=None):
        current = len(self.overlapped)
        wanted = min(current + 2, self.batches)  # batches 0..n+1 started
        deadline = time.monotonic() + self.timeout
        while len(self.decode_calls) < wanted and time.monotonic() < deadline:
            time.sleep(0.01)
        self.overlapped.append(len(self.decode_calls) >= wanted)
        return [[int(image[0].mean().item() * 1000)] for image in batch], 0.0, 0.01


def run_task(monkeypatch, dogs, depth, timeout=OVERLAP_TIMEOUT):
    root, _ = dogs
    listing = dataset.list_dataset(str(root))
    calls: list = []
    real = jpeg.decode_batch

    def counted(raw, *args, **kwargs):
        calls.append(raw.files)
        return real(raw, *args, **kwargs)

    monkeypatch.setattr(jpeg, "decode_batch", counted)
    model = RecordingModel(calls, len(dataset.make_batches(list(listing.files), 4)), timeout)
    out = overlap.classify_files(model.predict, listing.images_dir, list(listing.files), "imagenet", 4, "cpu", depth)
    return listing, model, out


def test_a_task_decodes_the_next_batch_while_the_model_runs(monkeypatch, dogs):
    _, model, _ = run_task(monkeypatch, dogs, depth=2)
    assert len(model.overlapped) > 2 and all(model.overlapped), model.overlapped


def test_inline_decoding_does_not_overlap(monkeypatch, dogs):
    """The baseline the overlap is measured against (and what the test above tells apart)."""
    _, model, _ = run_task(monkeypatch, dogs, depth=0, timeout=0.2)
    assert not any(model.overlapped[:-1]) and model.overlapped[-1]  # the last has no next batch


def test_overlapped_and_inline_runs_give_the_same_results_with_every_image_accounted_for(monkeypatch, dogs):
    _, manifest = dogs
    listing, _, inline = run_task(monkeypatch, dogs, depth=0, timeout=0)
    _, _, ahead = run_task(monkeypatch, dogs, depth=2)
    assert ahead.files == inline.files and ahead.top == inline.top
    assert ahead.failed == inline.failed and ahead.converted == inline.converted
    failed = {name for name, _ in ahead.failed}
    assert sorted(ahead.files + sorted(failed)) == sorted(listing.files)
    expected_failed = {name for name, info in manifest["files"].items() if info["kind"] in synth.FAILED_KINDS}
    assert failed == expected_failed
    assert sum(ahead.backends.values()) == len(ahead.files)


def test_a_decode_error_reaches_the_task(monkeypatch, dogs):
    root, _ = dogs
    listing = dataset.list_dataset(str(root))

    def broken(raw, *args, **kwargs):
        raise MemoryError("out of device memory while decoding")

    monkeypatch.setattr(jpeg, "decode_batch", broken)
    with pytest.raises(MemoryError, match="out of device memory"):
        overlap.classify_files(lambda batch, **kw: ([], 0.0, 0.0), listing.images_dir, list(listing.files),
                               "imagenet", 4, "cpu", depth=2)


def test_the_dask_path_with_prefetch_counts_every_image_and_backend(client, data_root, manifest):
    """End to end on the real local cluster: decoding ahead of the model inside each task
    gives what decoding inline gives, every image scored or reported."""
    def metrics_with(prefetch: int) -> dict:
        config = ImagesConfig(dataset_dir=str(data_root / "dogs"), model="workloads.images.synthetic:colour_classifier",
                              decode="cpu", prefetch=prefetch, batch_size=8, forward_batch=3, agreement_sample=0)
        return run(client, config, PhaseTimer())

    ahead, inline = metrics_with(2), metrics_with(0)
    broken = sum(info["kind"] in synth.FAILED_KINDS for info in manifest["files"].values())
    assert ahead["images_total"] == len(manifest["files"])
    assert ahead["images_scored"] + ahead["images_failed"] == ahead["images_total"]
    assert ahead["images_failed"] == broken
    for key in ("images_scored", "correct", "accuracy", "failed", "converted", "decode_backends"):
        assert ahead[key] == inline[key], key
    assert sum(ahead["decode_backends"].values()) == ahead["images_scored"]
    assert ahead["decode_backends"]["pil"] == 2  # the CMYK and PNG files
