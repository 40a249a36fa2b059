"""``python -m bench.gpu`` (started by ``bench/gpu.sh``): the images pipeline on one NVIDIA
GPU, end to end through Dask, against the model-only rate on the same GPU.

The Dask side is the real ``workloads.images.benchmark.run`` on a local cluster with one
worker for the GPU (``workloads.local``), ResNet-50 in bf16 and fp16 autocast with
channels-last, JPEGs decoded on the GPU (``--decode gpu``: nvJPEG through
``torchvision.io.decode_jpeg(device="cuda")``, CPU fallback for other files). The limit is
``ModelPlugin.predict`` in this process, on the same GPU, on batches decoded beforehand.
Figures per precision: end to end vs model-only (goal >= 0.8) and end-to-end images/s
(goal >= 5,000 on one H100/H200-class GPU). Data: a generated Stanford-Dogs-like tree of
real-sized JPEGs (300-500 px), each unique image hard-linked ``--copies`` times, so the
run reads about as many files as the real 20,580 without the time to encode them all.

Exit codes: 0 measured (goals held or not), 1 a measurement failed, 2 the machine lacks
something (the message says what), 3 with ``--check`` a goal was missed.
"""
from __future__ import annotations

import argparse
import importlib
import io
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from bench.figures import Figure, Goal, Measurement, render

logger = logging.getLogger("bench.gpu")

PRECISIONS = ("bf16", "fp16")
NEEDED = ("numpy", "PIL", "yaml", "tqdm", "cloudpickle", "dask", "distributed")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--precisions", type=_precisions, default=list(PRECISIONS), metavar="P[,P]",
                        help="bf16 and/or fp16 (default: both)")
    parser.add_argument("--model", default="resnet50", help="torchvision model (default: resnet50)")
    parser.add_argument("--batch", type=int, default=256, metavar="N", help="images per task and per forward pass")
    parser.add_argument("--breeds", type=int, default=120, metavar="N", help="generated breeds (default: 120)")
    parser.add_argument("--unique-per-breed", type=int, default=8, metavar="N",
                        help="distinct generated images per breed (default: 8)")
    parser.add_argument("--copies", type=int, default=21, metavar="N",
                        help="hard links per distinct image (default: 21: about 20,000 files)")
    parser.add_argument("--threads", type=int, metavar="N", help="the GPU worker's threads (default: the machine's cores)")
    parser.add_argument("--repeats", type=int, default=3, metavar="N", help="repetitions per figure (default: 3)")
    parser.add_argument("--data-dir", metavar="PATH", help="where the data is generated (default: a temporary folder)")
    parser.add_argument("--output", metavar="DIR", default=str(Path(__file__).with_name("results")),
                        help="results directory (default: bench/results)")
    parser.add_argument("--self-check", action="store_true", help="only check that this machine has what is needed")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: a dry run of the same flow without a GPU (tests the script; bf16 only)")
    parser.add_argument("--check", action="store_true", help="exit 3 when a goal is missed")
    return parser


def _precisions(text: str) -> list[str]:
    values = [p.strip() for p in text.split(",") if p.strip()]
    if not values or any(p not in PRECISIONS for p in values):
        raise argparse.ArgumentTypeError(f"precisions must be among {PRECISIONS}, got {text!r}")
    return values


def self_check(device: str = "cuda") -> list[str]:
    """What this machine lacks for the GPU benchmark (empty: nothing); ``device="cpu"``
    checks the packages alone."""
    problems = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception as exc:
            problems.append(f"python package {name!r} does not import ({exc}); bench/gpu.sh installs dask and"
                            " distributed from its wheels folder, the rest must come with the machine")
    try:
        import torch
    except Exception as exc:
        return problems + [f"torch does not import ({exc}): use the machine's own CUDA build of torch"]
    if device == "cpu":
        return problems
    if not torch.cuda.is_available():
        return problems + ["torch.cuda.is_available() is False: no usable NVIDIA GPU, driver or CUDA build of torch"]
    try:
        from PIL import Image
        from torchvision.io import decode_jpeg

        buffer = io.BytesIO()
        Image.new("RGB", (16, 16), (200, 30, 30)).save(buffer, format="JPEG")
        image = decode_jpeg(torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8), device="cuda")
        if image.device.type != "cuda" or tuple(image.shape) != (3, 16, 16):
            problems.append(f"decode_jpeg(device='cuda') returned {tuple(image.shape)} on {image.device}")
    except Exception as exc:
        problems.append(f"torchvision cannot decode JPEGs on the GPU: {type(exc).__name__}: {exc}")
    return problems


def make_dataset(root: Path, unique_per_breed: int, copies: int, breeds: int = 120) -> Path:
    """``root/dogs-<breeds>x<unique>x<copies>``: generated JPEGs (one file of every broken
    kind too), each distinct file hard-linked ``copies`` times."""
    from workloads.images.dataset import IMAGES_DIR, LABELS_FILE
    from workloads.synth import images as synth

    unique = root / "dogs-unique"
    synth.generate(unique, breeds=breeds, images_per_breed=unique_per_breed, broken=True, seed=0,
                   min_size=300, max_size=500, noise=20)
    dogs = root / f"dogs-{breeds}x{unique_per_breed}x{copies}"
    if not (dogs / ".complete").exists():
        shutil.rmtree(dogs, ignore_errors=True)
        for folder in sorted((unique / IMAGES_DIR).iterdir()):
            target = dogs / IMAGES_DIR / folder.name
            target.mkdir(parents=True)
            for path in sorted(folder.iterdir()):
                for copy in range(copies):
                    os.link(path, target / f"{path.stem}_{copy}{path.suffix}")
        shutil.copy(unique / LABELS_FILE, dogs / LABELS_FILE)
        (dogs / ".complete").touch()
    return dogs


def model_only_rate(plugin, batch, images: int) -> float:
    """Images/s of ``plugin.predict`` (a loaded ``ModelPlugin``) on ``batch``, already on
    the GPU, for about ``images`` images, in this process."""
    plugin.predict(batch, chunk=len(batch))
    rounds = max(1, images // len(batch))
    started = time.perf_counter()
    for _ in range(rounds):
        plugin.predict(batch, chunk=len(batch))  # ends with the top-k on the host: synchronised
    return rounds * len(batch) / (time.perf_counter() - started)


def stage_seconds(images_dir: str, files: list[str], device: str) -> dict[str, float]:
    """One batch through the decode path's stages, each synchronised and timed in this
    process: where the per-batch time goes (diagnostics for the notes)."""
    import torch

    from workloads.images import jpeg

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    times, started = {}, time.perf_counter()
    raw = jpeg.read_jpegs(images_dir, files)
    times["read"] = time.perf_counter() - started
    started = time.perf_counter()
    images = jpeg.decode_jpegs(raw, device).values()
    sync()
    times["decode"] = time.perf_counter() - started
    started = time.perf_counter()
    crops = [jpeg.resize_crop(image.expand(3, -1, -1), 256, 224) for image in images if image.shape[0] in (1, 3)]
    sync()
    times["resize_crop"] = time.perf_counter() - started
    started = time.perf_counter()
    torch.stack(crops).sub_(100.0).div_(50.0)
    sync()
    times["stack_normalise"] = time.perf_counter() - started
    return {key: round(value, 4) for key, value in times.items()} | {"images": len(crops)}


def measure(args, dogs: Path) -> list[Figure]:
    import torch
    from distributed import Client

    from workloads import local
    from workloads.images import benchmark, dataset, jpeg, model
    from workloads.results import PhaseTimer

    device = args.device
    listing = dataset.list_dataset(str(dogs))
    plan = local.plan(1, device, threads_per_worker=args.threads)
    figures: list[Figure] = []
    preload, _, _, _ = jpeg.load_batch(listing.images_dir, list(listing.files[:args.batch]), "imagenet", device)
    gpu_name = torch.cuda.get_device_name(0) if device == "cuda" else "none (--device cpu: a dry run)"
    print(f"gpu: {gpu_name}; {len(listing.files)} files; cluster: 1 worker x"
          f" {plan.threads_per_worker} threads ({'LocalCUDACluster' if plan.gpus else 'LocalCluster'})", flush=True)
    with local.start(plan, dashboard_address=":0") as cluster, Client(cluster) as client:
        client.wait_for_workers(1)
        for precision in args.precisions:
            config = benchmark.ImagesConfig(dataset_dir=str(dogs), model=args.model, device=device, precision=precision,
                                            batch_size=args.batch, forward_batch=args.batch, decode="gpu",
                                            agreement_sample=0)
            limit = model.ModelPlugin(model.ModelSpec(model=args.model, device=device, precision=precision,
                                                      warmup_batch=args.batch))
            limit._load(plan.threads_per_worker)
            stages = [stage_seconds(listing.images_dir, list(listing.files[:args.batch]), device) for _ in range(2)][-1]
            print(f"gpu {precision}: one batch in this process, seconds per stage: {stages}", flush=True)
            warm = benchmark.run(client, dataclasses_replace(config, agreement_sample=256), PhaseTimer())
            print(f"gpu {precision}: warm-up {warm['images_per_second']:.0f} img/s, decoders {warm['decoders']},"
                  f" failed {warm['images_failed']}, converted {warm['images_converted']},"
                  f" top1_agreement_with_fp32 {warm.get('top1_agreement_with_fp32')} (random weights)", flush=True)
            ends, limits, last = [], [], warm
            for repetition in range(args.repeats):
                steps = ["dask", "limit"] if repetition % 2 == 0 else ["limit", "dask"]
                for step in steps:
                    if step == "dask":
                        last = benchmark.run(client, config, PhaseTimer())
                        ends.append(last["images_per_second"])
                    else:
                        limits.append(model_only_rate(limit, preload, len(listing.files)))
                print(f"gpu {precision}: repetition {repetition + 1}: end to end {ends[-1]:.0f} img/s,"
                      f" model only {limits[-1]:.0f} img/s; worker seconds {last['worker_seconds']}", flush=True)
            limit.teardown(None)
            notes = {"model": args.model, "precision": precision, "channels_last": True, "batch": args.batch,
                     "files": len(listing.files), "decode": "gpu (nvJPEG)", "decoders": last["decoders"],
                     "images_failed": last["images_failed"], "images_converted": last["images_converted"],
                     "worker_seconds": last["worker_seconds"], "gpu": gpu_name, "stage_seconds": stages,
                     "cluster": plan.describe()}
            end = Measurement(f"end_to_end_{precision}_images_per_second", "img/s", ends,
                              {"how": "workloads.images.benchmark.run, infer phase, --decode gpu"})
            figures.append(Figure(f"gpu_{precision}_pipeline_vs_model",
                                  f"GPU {precision}: Dask end to end vs model-only on the same GPU", Goal(">=", 0.8),
                                  end, Measurement(f"model_only_{precision}_images_per_second", "img/s", limits,
                                                   {"how": "ModelPlugin.predict on preloaded GPU tensors"}),
                                  notes=notes))
            figures.append(Figure(f"gpu_{precision}_images_per_second", f"GPU {precision}: end-to-end images/s",
                                  Goal(">=", 5000), end, None, notes=notes))
    return figures


def dataclasses_replace(config, **changes):
    import dataclasses

    return dataclasses.replace(config, **changes)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.device == "cpu" and "fp16" in args.precisions:
        args.precisions = [p for p in args.precisions if p != "fp16"] or ["bf16"]  # fp16 autocast needs CUDA
    problems = self_check(args.device)
    if problems:
        for problem in problems:
            print(f"bench.gpu: error: {problem}", file=sys.stderr)
        return 2
    print("bench.gpu: self-check passed" + (" (CUDA, GPU JPEG decoding, dask, distributed)" if args.device == "cuda"
                                            else " (packages; --device cpu: no GPU checks)"), flush=True)
    if args.self_check:
        return 0
    import distributed  # noqa: F401  (configures its loggers on import)

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("distributed", "tornado"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    import tempfile

    root = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="bench-gpu-"))
    started = time.perf_counter()
    dogs = make_dataset(root, args.unique_per_breed, args.copies, args.breeds)
    print(f"bench.gpu: data under {dogs} in {time.perf_counter() - started:.0f} s", flush=True)
    try:
        figures = measure(args, dogs)
    except Exception:
        logger.exception("the GPU measurement failed")
        return 1
    from bench.cli import write

    path = write(figures, {"suite": "gpu", "python": sys.version.split()[0]}, Path(args.output), prefix="gpu-")
    print("\n" + render(figures))
    print(f"\nwritten to {path}")
    return 3 if args.check and any(f.holds is False for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
