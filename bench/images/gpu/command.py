"""Every GPU measurement of the images pipeline in one run, on one NVIDIA GPU and its
machine's CPU cores, written to one JSON (``<output>/gpu-<UTC stamp>.json``, rewritten
after each section, so a run cut short keeps what it has measured).

Sections, each within a time budget (``--budget-s``; a section that does not fit is
recorded as skipped, never silently dropped):

1. model-only (:mod:`bench.images.gpu.limits`): ResNet-50 in bf16 and fp16, channels-last,
   batch norm folded, per batch size and graph mode (eager, CUDA graphs; torch.compile
   last, as it costs minutes): the batch size and mode for the runs below are the fastest;
2. decode-only per backend: the JPEG hardware engines, the CUDA cores (nvImageCodec),
   torchvision's nvJPEG, and every CPU core (one process each);
3. end to end through Dask (:mod:`bench.images.gpu.cluster`), one worker for the GPU, decoding
   ahead of the model inside each task; alternated with the model-only rate and the
   pipeline's decode-only rate, so ``e2e / min(model-only, decode-only)`` is paired per
   repetition. Goals: >= 10,000 images/s and >= 0.8 of that limit;
4. the paper's figure 9: the CPU path with 1, 2, 4, 8 workers x 2 threads, images/s
   against 1 worker's x n (goals >= 0.9 of linear at 2 and 4, >= 0.8 at 8);
5. when an end-to-end goal is missed, the torch profiler over the worker's task code
   (:mod:`bench.images.gpu.profiler`): what bounds it, in the figure's notes.

``--cpu-dry-run`` runs all of it on the CPU with a tiny model and tiny sizes (the GPU
backends are then reported as not available): the script's flow is tested without a GPU.

Exit codes: 0 measured (goals held or not), 1 a measurement failed, 2 the machine lacks
something (the message says what), 3 with ``--check`` a goal is missed.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench import results
from bench.figures import render
from bench.images.gpu.record import Run

logger = logging.getLogger("bench.gpu")

PRECISIONS = ("bf16", "fp16")
NEEDED = ("numpy", "PIL", "yaml", "tqdm", "cloudpickle", "dask", "distributed")
DRY_RUN = {"model": "workloads.images.synthetic:colour_classifier", "precisions": ["bf16"], "batches": [4, 8],
           "graphs": ["eager"], "cpu_workers": [1, 2], "cpu_threads": 1, "cpu_images_per_worker": 8,
           "cpu_batch": 4, "repeats": 1, "threads": 2, "task_batches": 2, "model_seconds": 0.2,
           "decode_files": 24, "parts": 2, "breeds_per_part": 2, "images_per_breed": 6, "budget_s": 600}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--cpu-dry-run", action="store_true", help="the whole flow on the CPU, tiny model and sizes (no GPU)")
    add("--self-check", action="store_true", help="only check that this machine has what is needed")
    add("--model", default="resnet50", help="torchvision model (default: resnet50)")
    add("--precisions", type=_precisions, default=list(PRECISIONS), metavar="P[,P]", help="bf16 and/or fp16")
    add("--batches", type=_ints, default=[128, 256, 512], metavar="N,N", help="forward batch sizes tried")
    add("--graphs", type=_graphs, default=["eager", "cudagraph", "compile"], metavar="G,G",
        help="graph modes tried (eager, cudagraph, compile, compile-cudagraphs); compile runs last")
    add("--threads", type=int, default=4, metavar="N", help="the GPU worker's threads (tasks at once)")
    add("--task-batches", type=int, default=4, metavar="N", help="forward batches per Dask task")
    add("--prefetch", type=int, default=2, metavar="N", help="batches decoded ahead of the model in a task")
    add("--repeats", type=int, default=3, metavar="N", help="end-to-end repetitions (default: 3)")
    add("--model-seconds", type=float, default=1.5, metavar="S", help="seconds per model-only rate")
    add("--decode-files", type=int, default=4096, metavar="N", help="files per decode-only rate")
    add("--cpu-workers", type=_ints, default=[1, 2, 4, 8], metavar="N,N", help="figure 9: CPU worker counts")
    add("--cpu-threads", type=int, default=2, metavar="N", help="figure 9: threads per CPU worker")
    add("--cpu-images-per-worker", type=int, default=96, metavar="N", help="figure 9: images per worker")
    add("--cpu-batch", type=int, default=32, metavar="N", help="figure 9: images per task")
    add("--cpu-precision", default="fp32", choices=("fp32", "bf16"), help="figure 9: the CPU path's precision")
    add("--parts", type=int, default=16, metavar="N", help="data: generator processes")
    add("--breeds-per-part", type=int, default=8, metavar="N")
    add("--images-per-breed", type=int, default=160, metavar="N", help="data: 16 x 8 x 160 = 20,480 files")
    add("--budget-s", type=float, default=420, metavar="S", help="seconds for the measurements (default: 420)")
    add("--data-dir", metavar="PATH", help="where the data is generated (default: a temporary folder)")
    add("--output", metavar="DIR", default=str(results.DEFAULT_OUTPUT),
        help=f"results directory (default: {results.DEFAULT_OUTPUT} in the current directory)")
    add("--profile", choices=("auto", "always", "never"), default="auto",
        help="torch profiler summary: when a goal is missed (auto), always, or never")
    add("--check", action="store_true", help="exit 3 when a goal is missed")


def _precisions(text: str) -> list[str]:
    values = [p.strip() for p in text.split(",") if p.strip()]
    if not values or any(p not in PRECISIONS for p in values):
        raise argparse.ArgumentTypeError(f"precisions must be among {PRECISIONS}, got {text!r}")
    return values


def _ints(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}")
    return values


def _graphs(text: str) -> list[str]:
    from workloads.images.graphs import GRAPHS

    values = [g.strip() for g in text.split(",") if g.strip()]
    if not values or any(g not in GRAPHS for g in values):
        raise argparse.ArgumentTypeError(f"graphs must be among {GRAPHS}, got {text!r}")
    return sorted(values, key=lambda g: g.startswith("compile"))  # compiling is slow: last


def apply_dry_run(args: argparse.Namespace) -> argparse.Namespace:
    for key, value in DRY_RUN.items():
        setattr(args, key, value)
    args.device, args.profile = "cpu", "always" if args.profile == "auto" else args.profile
    return args


def self_check(device: str = "cuda") -> list[str]:
    """What this machine lacks for the GPU benchmark (empty: nothing)."""
    problems = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception as exc:
            problems.append(f"python package {name!r} does not import ({exc}); bench/gpu.sh installs dask,"
                            " distributed and their needs from its wheels folder, the rest must come with the machine")
    try:
        import torch
    except Exception as exc:
        return [*problems, f"torch does not import ({exc}): use the machine's own CUDA build of torch"]
    if device == "cuda" and not torch.cuda.is_available():
        problems.append("torch.cuda.is_available() is False: no usable NVIDIA GPU, driver or CUDA build of torch")
    return problems


VERSIONS = ("torch", "torchvision", "dask", "distributed", "nvidia-nvimgcodec-cu13", "nvidia-nvimgcodec-cu12",
            "cupy-cuda13x", "numpy", "pillow")


def run_facts(args: argparse.Namespace) -> dict[str, Any]:
    """What the GPU figures are measured on (copied into every figure)."""
    from workloads.cluster import local
    from workloads.observe import environment

    gpu = "none (--cpu-dry-run)"
    if args.device == "cuda":
        import torch

        gpu = torch.cuda.get_device_name(0)
    return {"suite": "gpu", "dry_run": args.device == "cpu", "started_at": results.utc_now(),
            "host": platform.node(), "gpu": gpu, "cpu": environment.cpu_model(), "cores": environment.usable_cores(),
            "tcmalloc": local.find_tcmalloc(), "python": platform.python_version(),
            "versions": results.package_versions(VERSIONS),
            "arguments": {k: v for k, v in vars(args).items() if k not in ("self_check", "check")}}


def run(args: argparse.Namespace) -> int:
    args.device = "cuda"
    if args.cpu_dry_run:
        apply_dry_run(args)
    problems = self_check(args.device)
    if problems:
        for problem in problems:
            print(f"bench.gpu: error: {problem}", file=sys.stderr)
        return 2
    from workloads.images import decoders

    found = decoders.detect(args.device)
    chain = decoders.choose_chain(args.device, found)
    print(f"bench.gpu: self-check passed; decoder chain on {args.device}: {' -> '.join(chain)}"
          + "".join(f"\n  {name} not available: {why}" for name, why in found.reasons.items()), flush=True)
    if args.self_check:
        return 0
    from bench.images.gpu import sections
    from workloads.core.commands import setup_logging

    setup_logging()

    record = Run(Path(args.output) / f"gpu-{results.file_stamp()}.json", run_facts(args),
                 time.monotonic() + args.budget_s)
    record.facts["decoders"] = decoders.probe(args.device, found)
    try:
        sections.measure_all(args, record)
    except Exception:
        logger.exception("the GPU measurement failed")
        record.save()
        print(f"\npartial results written to {record.path}")
        return 1
    record.save()
    print("\n" + render(record.figures))
    print(f"\nwritten to {record.path}")
    return 3 if args.check and any(f.holds is False for f in record.figures) else 0
