"""Benchmark 1 as a protocol module (see :mod:`workloads.runs.benchmarks`): ImageNet
classification of the Stanford Dogs images with PyTorch on Dask.

The flow, each step a timed phase: ``list`` (walk the tree on a worker, which sees the
shared volume), ``load_model`` (a worker plugin builds the model once per worker, on the
worker's device, and runs one warm-up forward pass: the warm-up is inside ``load_model``,
not ``infer``), ``infer`` (end to end: batches of file paths are tasks; each decodes,
preprocesses and classifies its images; the clock stops when the last result is back on
the client), with ``--precision bf16|fp16`` ``agreement`` (a sample classified again in
fp32: ``top1_agreement_with_fp32``), and ``score``. JPEGs are decoded with torchvision.io
on the CPU, or with nvJPEG on a CUDA worker (``--decode``, :mod:`workloads.images.jpeg`).
A notebook calls :func:`run` the same way the runner does::

    metrics = run(client, ImagesConfig(dataset_dir="/ml-share/dogs"), PhaseTimer())

An image that does not decode is left out and counted, not fatal: one warning names the
first of them with their reasons, the metrics keep them as ``skipped_input``
(:class:`workloads.runs.results.SkippedInput`) and the status reads ``succeeded, 5 of 22
images failed``. With ``--require-all-files`` the run fails instead, naming them.
"""
from __future__ import annotations

import argparse
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distributed import get_worker

from workloads.images import dataset, jpeg, model, overlap, scoring
from workloads.observe.progress import track
from workloads.runs import benchmarks
from workloads.runs.results import PhaseTimer, SkippedInput, hold_input

logger = logging.getLogger(__name__)

NAME = "images"
REQUIRED_PACKAGES = ("torch", "torchvision", "PIL", "numpy")
HEADLINE_METRICS = ("images_per_second", "accuracy", "images_failed")
BENCH = "bench.images"
DATA = benchmarks.Data(
    "dogs", f"dogs/{dataset.IMAGES_DIR}/<wnid>-<breed>/*.jpg (the Stanford Dogs images; or --dogs-dir),"
            f" optionally dogs/{dataset.LABELS_FILE}",
    (benchmarks.Source("dogs", "dogs/images.tar", "the Stanford Dogs archive, extracted to dogs/Images"),
     benchmarks.Source("labels", f"dogs/{dataset.LABELS_FILE}", "ImageNet's class index to label names"),
     benchmarks.Source("weights", "models/<basename of the URL>", "a torchvision state dict")))
REPORT = benchmarks.Report(
    "Image classification", throughput={"images_per_second": "images/s"},
    key_metrics=("images_per_second", "images_total", "images_failed", "accuracy"),
    scaling="images_per_second",
    scaling_caption="Succeeded image-classification runs; one line per device, through the mean of the runs at"
                    " each worker count. Higher is better. The paper's figure 9 showed the same comparison as"
                    " time taken.",  # the report adds the marks drawn only sometimes (report/figures.py)
    quality=benchmarks.Quality("accuracy", "Top-1 accuracy (%)",
                               "Image classification: accuracy per run (higher is better; n/a = not measured)",
                               "Share of images classified correctly (the paper: about 67 % of 20,580 photos).",
                               scale=100.0, unit=" %"))
DEVICES = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class ImagesConfig:
    """Everything one run depends on (JSON-serialisable with ``dataclasses.asdict``)."""

    dataset_dir: str  # <data root>/dogs as the workers see it
    model: str = "resnet50"  # torchvision name or "module:factory"
    weights: str = "random"  # state-dict path as the workers see it, or "random"
    device: str = "cpu"  # cpu | cuda | auto (auto resolves on each worker)
    preprocess: str = "imagenet"  # imagenet (256 -> 224, normalised) | seed (the paper's: 256 -> 250, raw)
    batch_size: int = 32  # images per task
    forward_batch: int = 32  # images per forward pass inside a task
    limit: int | None = None  # first N files of the sorted walk
    precision: str = "fp32"  # fp32 | bf16 | fp16 (CUDA)
    agreement_sample: int = 256  # bf16/fp16: images also classified in fp32 to report top-1 agreement
    # pil | cpu (torchvision.io) | gpu (nvImageCodec/nvJPEG) | auto (gpu on CUDA workers, else cpu)
    decode: str = "auto"
    prefetch: int | None = None  # batches decoded ahead of the model in a task; None: 2 with GPU decoding, else 0
    graph: str = "eager"  # eager | cudagraph | compile | compile-cudagraphs (model.GRAPHS)
    channels_last: bool = True
    fold_batchnorm: bool = True  # conv + batch norm merged (model.fold_batchnorm)
    torch_threads: int | None = None  # None: each worker's nthreads
    warmup: bool = True  # one forward pass per worker inside load_model
    seed: int = 0  # random weights' seed
    max_listed: int = 50  # failures/conversions listed by path in the metrics
    require_all_files: bool = False  # an image that does not decode fails the run instead of being counted
    workers: tuple[str, ...] = ()  # restrict to these worker addresses (filled by the runner)

    def __post_init__(self) -> None:
        problems = []
        if self.device not in DEVICES:
            problems.append(f"device must be one of {DEVICES}, got {self.device!r}")
        if self.preprocess not in dataset.RECIPES:
            problems.append(f"preprocess must be one of {tuple(dataset.RECIPES)}, got {self.preprocess!r}")
        if self.precision not in model.PRECISIONS:
            problems.append(f"precision must be one of {model.PRECISIONS}, got {self.precision!r}")
        if self.decode not in jpeg.DECODES:
            problems.append(f"decode must be one of {jpeg.DECODES}, got {self.decode!r}")
        if self.prefetch is not None and self.prefetch < 0:
            problems.append(f"prefetch must be >= 0, got {self.prefetch}")
        if self.graph not in model.GRAPHS:
            problems.append(f"graph must be one of {model.GRAPHS}, got {self.graph!r}")
        if self.agreement_sample < 0:
            problems.append(f"agreement_sample must be >= 0, got {self.agreement_sample}")
        for name in ("batch_size", "forward_batch"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.limit is not None and self.limit < 1:
            problems.append(f"limit must be >= 1, got {self.limit}")
        if problems:
            raise ValueError("images config: " + "; ".join(problems))

    @property
    def weights_kind(self) -> str:
        """``file``, ``random`` (a torchvision model without weights: accuracy is not
        meaningful) or ``factory`` (a ``module:factory`` model's own weights)."""
        if self.weights != "random":
            return "file"
        return "factory" if ":" in self.model else "random"


# ----------------------------------------------------------------------------- protocol
def preflight(client, workers: list[str], facts: dict[str, dict[str, Any]], device: str) -> dict[str, list[str]]:
    """On GPU workers, the JPEG decoder chain each would use (nvImageCodec's JPEG engines,
    CUDA, torchvision, CPU): one that would decode on its CPU alone is a problem. Each
    worker's report is kept with its facts (the record's hardware)."""
    if device != "cuda":
        return {}
    from workloads.images import decoders

    reports = client.run(decoders.probe, "cuda", workers=workers)
    for address, report in reports.items():
        facts.setdefault(address, {})["decoders"] = report
    return decoders.preflight_problems(reports)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("images benchmark")
    group.add_argument("--model", help="torchvision model name, or module:factory (default: profile, resnet50)")
    group.add_argument("--weights", metavar="PATH",
                       help="state dict as the workers see it; relative paths are tried in the current"
                            " directory, then under the data root (default: random weights, seed 0)")
    group.add_argument("--preprocess", choices=tuple(dataset.RECIPES),
                       help="imagenet: Resize 256, CenterCrop 224, normalised (default);"
                            " seed: the paper's notebook's Resize 256, CenterCrop 250, no normalisation")
    group.add_argument("--image-batch", type=int, metavar="N", help="images per task (default: profile)")
    group.add_argument("--forward-batch", type=int, metavar="N", help="images per forward pass (default: profile)")
    group.add_argument("--image-limit", type=int, metavar="N", help="classify only the first N files")
    group.add_argument("--precision", choices=model.PRECISIONS, help="fp32 (default), bf16 autocast, fp16 (CUDA)")
    group.add_argument("--decode", choices=jpeg.DECODES,
                       help="how JPEGs are decoded and preprocessed: cpu (torchvision.io, libjpeg-turbo), gpu"
                            " (nvJPEG on CUDA workers), pil (PIL for every file), or auto: gpu on CUDA workers,"
                            " else cpu (default); files these cannot decode fall back to PIL")
    group.add_argument("--prefetch", type=int, metavar="N",
                       help="forward batches decoded ahead of the model inside a task, on their own threads"
                            " (default: 2 with GPU decoding, 0 on the CPU, whose cores are the model's)")
    group.add_argument("--graph", choices=model.GRAPHS,
                       help="how the model runs: eager (default), cudagraph (CUDA graphs captured per batch"
                            " shape), compile (torch.compile), compile-cudagraphs (torch.compile reduce-overhead)")
    group.add_argument("--agreement-sample", type=int, metavar="N",
                       help="with --precision bf16/fp16, also classify up to N of the images in fp32 and report"
                            " top1_agreement_with_fp32 (default 256; 0: off)")
    group.add_argument("--torch-threads", type=int, metavar="N",
                       help="torch threads per worker (default: its nthreads)")
    group.add_argument("--no-channels-last", action="store_true", help="keep NCHW memory format")
    group.add_argument("--no-fold-batchnorm", action="store_true",
                       help="run the model as built (default: each conv + batch norm merged into one conv,"
                            " through a torch.fx trace that keeps tensor operations only)")
    group.add_argument("--dogs-dir", metavar="PATH", help="the dogs directory, if not <data root>/dogs")


def make_config(args: argparse.Namespace, profile: dict[str, Any], data_dir: Path, device: str) -> ImagesConfig:
    def pick(option: str, key: str, default: Any) -> Any:
        value = getattr(args, option, None)
        return value if value is not None else profile.get(key, default)

    weights = pick("weights", "weights", "random")
    if weights != "random" and not os.path.isabs(weights):
        weights = os.path.abspath(weights) if os.path.exists(weights) else str(Path(data_dir) / weights)
    batch_size = pick("image_batch", "batch_size", 32)
    return ImagesConfig(
        dataset_dir=getattr(args, "dogs_dir", None) or str(Path(data_dir) / "dogs"),
        model=pick("model", "model", "resnet50"),
        weights=weights,
        device=device,
        preprocess=pick("preprocess", "preprocess", "imagenet"),
        batch_size=batch_size,
        forward_batch=pick("forward_batch", "forward_batch", min(batch_size, 64)),
        limit=pick("image_limit", "limit", None),
        precision=pick("precision", "precision", "fp32"),
        agreement_sample=pick("agreement_sample", "agreement_sample", 256),
        decode=pick("decode", "decode", "auto"),
        prefetch=pick("prefetch", "prefetch", None),
        graph=pick("graph", "graph", "eager"),
        channels_last=not getattr(args, "no_channels_last", False) and profile.get("channels_last", True),
        fold_batchnorm=not getattr(args, "no_fold_batchnorm", False) and profile.get("fold_batchnorm", True),
        torch_threads=pick("torch_threads", "torch_threads", None),
        warmup=profile.get("warmup", True),
        seed=profile.get("seed", 0),
        require_all_files=bool(pick("require_all_files", "require_all_files", False)),
    )


def generate(data_dir: Path, profile: dict[str, Any]) -> None:
    """Write the synthetic tree under ``data_dir/dogs`` (no-op when it is there)."""
    from workloads.images import synthetic as synth

    dogs = Path(data_dir) / "dogs"
    if (dogs / dataset.IMAGES_DIR).exists() and not (dogs / synth.MANIFEST).exists():
        logger.info("%s holds a dataset that was not generated: left as it is", dogs)
        return
    synth.generate(dogs, **profile.get("generate", {}))


MODEL_REGISTER_ATTEMPTS = 3


def register_model(client, plugin, attempts: int = MODEL_REGISTER_ATTEMPTS) -> None:
    """Load the model on every worker. The scheduler stores the plugin before it broadcasts it
    (distributed scheduler.py ``register_worker_plugin``), so a worker that joins later loads it
    on joining; a worker lost during the broadcast fails the broadcast with CommClosedError:
    broadcast again to the workers that are there (a worker that has it already reloads it)."""
    from distributed.comm.core import CommClosedError

    for attempt in range(1, attempts + 1):
        try:
            client.register_plugin(plugin)
            return
        except (CommClosedError, OSError) as exc:
            if attempt == attempts:
                raise
            logger.warning("a worker left while the model was loading (%s); loading it again on the workers"
                           " that are there (%d of %d)", str(exc).splitlines()[0], attempt + 1, attempts)


def run(client, config: ImagesConfig, timer: PhaseTimer) -> dict[str, Any]:
    """Classify every image under ``config.dataset_dir/Images`` on the cluster behind
    ``client``; returns the metrics (see the module docstring for the phases)."""
    restrict = list(config.workers) or None
    with timer.phase("list"):
        listing = client.submit(dataset.list_dataset, config.dataset_dir, config.limit,
                                workers=restrict, pure=False).result()
    batches = dataset.make_batches(listing.files, config.batch_size)
    spec = model.ModelSpec(model=config.model, weights=config.weights, device=config.device,
                           seed=config.seed, precision=config.precision,
                           channels_last=config.channels_last, fold_batchnorm=config.fold_batchnorm, graph=config.graph,
                           torch_threads=config.torch_threads,
                           warmup=config.warmup, crop=dataset.RECIPES[config.preprocess][1],
                           warmup_batch=min(config.forward_batch, config.batch_size))
    futures: list = []
    try:
        with timer.phase("load_model"):
            register_model(client, model.ModelPlugin(spec, only=restrict))
        with timer.phase("infer"):
            futures = client.map(classify_batch, batches, images_dir=listing.images_dir,
                                 recipe=config.preprocess, forward_batch=config.forward_batch,
                                 decode=config.decode, prefetch=config.prefetch, workers=restrict, pure=False)
            sizes = {future.key: len(batch) for future, batch in zip(futures, batches, strict=True)}
            outputs = [future.result() for future in
                       track(futures, NAME, total_units=len(listing.files), units_of=lambda f: sizes[f.key])]
        agreement = {}
        if config.precision != "fp32":
            with timer.phase("agreement"):  # outside "infer": the fp32 reference is not part of the rate
                agreement = _agreement(client, config, listing.images_dir, outputs, restrict)
    finally:
        _release(client, futures)
    with timer.phase("score"):
        metrics = {**_metrics(config, listing, batches, outputs, timer.phases["infer"]), **agreement}
    hold_input(metrics, config.require_all_files, logger, "images", "left out of the scores")
    return metrics


def classify_batch(files: list[str], images_dir: str, recipe: str, forward_batch: int,
                   decode: str = "pil", precision: str | None = None, prefetch: int | None = None) -> dict[str, Any]:
    """One task: decode, preprocess and classify a batch of files on this worker
    (``precision`` overrides the model's, for the fp32 agreement pass). With torchvision
    or GPU decoding the files go through :func:`overlap.classify_files` in forward
    batches, ``prefetch`` of them decoded ahead of the model."""
    plugin = model.worker_model()
    decoder = jpeg.resolve(decode, plugin.device)
    started = time.perf_counter()
    if decoder == "pil":
        batch, kept, failed, converted = dataset.load_batch(images_dir, files, recipe)
        decode_seconds = time.perf_counter() - started
        top, wait_seconds, forward_seconds = ([], 0.0, 0.0) if batch is None else \
            plugin.predict(batch, chunk=forward_batch, precision=precision)
        backends, decode_wait = {"pil": len(kept)} if kept else {}, decode_seconds
    else:
        depth = prefetch if prefetch is not None else (2 if decoder == "gpu" else 0)
        out = overlap.classify_files(plugin.predict, images_dir, files, recipe, forward_batch,
                                     "cuda" if decoder == "gpu" else "cpu", depth, precision)
        kept, top, failed, converted, backends = out.files, out.top, out.failed, out.converted, dict(out.backends)
        decode_seconds, decode_wait = out.decode_seconds, out.wait_seconds
        wait_seconds, forward_seconds = out.lock_seconds, out.forward_seconds
    return {"worker": get_worker().address, "files": kept, "top": top, "failed": failed,
            "converted": converted, "decode_seconds": decode_seconds, "wait_seconds": wait_seconds,
            "forward_seconds": forward_seconds, "decode_wait_seconds": decode_wait, "device": plugin.device,
            "threads": plugin.threads, "decode": decoder, "decode_backends": backends,
            "batchnorm_folded": plugin.batchnorm_folded}


# ----------------------------------------------------------------------------- helpers
def _agreement(client, config: ImagesConfig, images_dir: str, outputs: list[dict],
               restrict: list[str] | None) -> dict[str, Any]:
    """Classify an evenly spaced sample of the scored images again in fp32 and compare top-1."""
    top1 = {name: top[0] for out in outputs for name, top in zip(out["files"], out["top"], strict=True)}
    names = sorted(top1)
    if not config.agreement_sample or not names:
        return {"top1_agreement_with_fp32": None, "agreement_images": 0}
    sample = names[::-(-len(names) // config.agreement_sample)]
    futures = client.map(classify_batch, dataset.make_batches(sample, config.batch_size), images_dir=images_dir,
                         recipe=config.preprocess, forward_batch=config.forward_batch, decode=config.decode,
                         precision="fp32", workers=restrict, pure=False)
    reference = {name: top[0] for out in client.gather(futures)
                 for name, top in zip(out["files"], out["top"], strict=True)}
    same = sum(reference[name] == top1[name] for name in reference)
    return {"top1_agreement_with_fp32": round(same / len(reference), 6) if reference else None,
            "agreement_images": len(reference)}


def _summed(counts) -> dict[str, int]:
    """Images per decoder backend over every task (which backend decoded what, this run)."""
    total: dict[str, int] = {}
    for count in counts:
        for name, number in count.items():
            total[name] = total.get(name, 0) + number
    return dict(sorted(total.items()))


def _release(client, futures: list) -> None:
    """Cancel what is still running and drop the model from the workers."""
    if client.status != "running":  # the scheduler is lost: asking it would wait for its return (60 s)
        logger.warning("the scheduler is gone: the model plugin is left to the workers")
        return
    try:
        if futures:
            client.cancel([f for f in futures if not f.done()])
        client.unregister_worker_plugin(model.PLUGIN_NAME)
    except Exception as exc:  # never mask the run's own outcome
        logger.warning("could not release the model plugin: %s", exc)


def _metrics(config: ImagesConfig, listing: dataset.Listing, batches: list, outputs: list[dict],
             infer_seconds: float) -> dict[str, Any]:
    score = scoring.score(((name, top) for out in outputs for name, top in zip(out["files"], out["top"], strict=True)),
                          listing.labels, listing.wnid_index)
    failed = sorted((name, reason) for out in outputs for name, reason in out["failed"])
    converted = sorted((name, kind) for out in outputs for name, kind in out["converted"])
    per_worker: dict[str, int] = {}
    for out in outputs:
        per_worker[out["worker"]] = per_worker.get(out["worker"], 0) + len(out["files"])
    meaningful = config.weights_kind != "random"
    metrics: dict[str, Any] = {
        "images_total": len(listing.files),
        "images_scored": score.scored,
        "images_failed": len(failed),
        "failed": [{"path": n, "reason": r} for n, r in failed[: config.max_listed]],
        "skipped_input": SkippedInput("images", "failed", len(listing.files), len(failed),
                                      tuple(failed[: config.max_listed])).as_metric(),
        "images_converted": len(converted),
        "converted": [{"path": n, "from": k} for n, k in converted[: config.max_listed]],
        "images_per_second": round(score.scored / infer_seconds, 3) if infer_seconds > 0 else None,
        **score.metrics(meaningful),
        "weights": "random" if config.weights_kind == "random" else
                   ("factory" if config.weights_kind == "factory" else config.weights),
        "labels_source": listing.labels_source,
        "index_source": listing.index_source,
        "ignored_files": listing.ignored,
        "batches": len(batches),
        "devices": sorted({out["device"] for out in outputs}),
        "decoders": sorted({out["decode"] for out in outputs}),
        "decode_backends": _summed(out.get("decode_backends", {}) for out in outputs),
        "torch_threads": sorted({out["threads"] for out in outputs}),
        "batchnorm_folded": all(out.get("batchnorm_folded", False) for out in outputs) if outputs else None,
        "warmup_in_load_model": config.warmup,
        "worker_seconds": {key: round(sum(out[f"{key}_seconds"] for out in outputs), 3)
                           for key in ("decode", "wait", "forward", "decode_wait")},
        "images_per_worker": dict(sorted(per_worker.items())),
    }
    if not meaningful:
        metrics["accuracy_note"] = "random weights: accuracy is not meaningful (pass --weights)"
    return metrics
