"""The images benchmark's part of the suite: its figures (what each says, its goal) and
its own subcommand (``gpu``). Light: the measuring code (:mod:`bench.images.measure`)
is imported only when a figure is measured."""
from __future__ import annotations

from bench.registry import FigureSpec

# the order is the report's
FIGURES: dict[str, FigureSpec] = {
    "images_pipeline_vs_model": FigureSpec(
        "images", "Images: Dask path end to end vs model-only forward (the limit)", ">= 0.85",
        "dask_path_images_per_second", "model_only_images_per_second", "img/s"),
    "images_dask_vs_plain_loop": FigureSpec(
        "images", "Images: Dask path vs a tuned single-process loop (same decoder, folding, allocator, threads)",
        ">= 1.0", "dask_path_images_per_second", "tuned_loop_images_per_second", "img/s"),
    "images_dask_vs_naive_loop": FigureSpec(
        "images", "Images: Dask path vs the naive loop (PIL, no folding, glibc defaults)", ">= 1.5",
        "dask_path_images_per_second", "naive_loop_images_per_second", "img/s"),
    "images_scaling_2x1_vs_1x1": FigureSpec(
        "images", "Images: 2 workers x 1 thread vs 1 worker x 1 thread", ">= 1.8",
        "two_workers_images_per_second", "one_worker_images_per_second", "img/s"),
    "images_bf16_vs_fp32": FigureSpec(
        "images", "Images: ResNet-50 bf16 vs fp32 images/s on this CPU (agreement >= 99% on held-out textured"
        " images)", ">= 2.5", "bf16_images_per_second", "fp32_images_per_second", "img/s"),
}

VERSIONS = ("torch", "torchvision")  # the packages whose versions its figures record

MEASURE = "bench.images.measure"  # its measure(ctx, wanted, make): imported only when a figure is measured

# name -> (module with add_arguments(parser) and run(args), one line of help)
COMMANDS = {
    "gpu": ("bench.images.gpu.command", "every GPU measurement of the images pipeline (what bench/gpu.sh runs)"),
}

