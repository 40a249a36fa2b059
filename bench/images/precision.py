"""The bf16 figure: ResNet-50 bf16 vs fp32 images/s through the Dask path, and their
agreement on images the probe head never saw.

Two textured trees (:mod:`bench.images.textured`) with the same classes and different seeds:
the probe head (:mod:`bench.images.probe`) is fitted on the first; the timed runs and both
agreement measurements use the second. The figure's check is the workload's own
``top1_agreement_with_fp32`` (its fp32 reference pass over the run's images); the
notes add the logits' cosine similarity and top-1 agreement from
:func:`bench.images.probe.logit_agreement`, and how many images the two trees share (0).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from bench import pairs
from bench.figures import Check, Figure, Goal, Measurement
from bench.images import probe, textured

BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")  # x86 (AVX-512 BF16, AMX) and Arm (FEAT_BF16) /proc/cpuinfo flags


def cpu_bf16_flags() -> list[str]:
    """The bf16 instruction sets this CPU advertises (empty: bf16 math is emulated in fp32
    and runs several times slower than fp32, whatever the code does)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    return sorted(set(line.split(":", 1)[1].split()) & set(BF16_FLAGS))
    except OSError:
        pass
    return []


def trees(ctx, eval_per_breed: int) -> tuple[Path, Path, dict[str, Any]]:
    """The fitting and the evaluation trees (generated when missing) and their overlap."""
    cfg = ctx.profile["images"]["agreement"]
    root = Path(ctx.data_dir) / "textured"
    fit = textured.generate(root / "fit", cfg["breeds"], cfg["fit_per_breed"], seed=1)
    held_out = textured.generate(root / f"eval-{eval_per_breed}", cfg["breeds"], eval_per_breed, seed=2)
    facts = {"fit_images": len(fit["files"]), "eval_images": len(held_out["files"]),
             "images_in_both": textured.shared_images(fit, held_out), "breeds": cfg["breeds"]}
    return root / "fit", root / f"eval-{eval_per_breed}", facts


def measure(ctx, client, s, fig: Figure) -> None:
    from workloads.images import benchmark, dataset

    cfg = ctx.profile["images"]
    name = cfg["precision_model"]
    flags = cpu_bf16_flags()
    # without bf16 instructions bf16 math is emulated and an image costs several fp32 ones: fewer images, same figure
    agreement_cfg = cfg["agreement"]
    per_breed = agreement_cfg["eval_per_breed"] if flags else agreement_cfg["eval_per_breed_without_bf16"]
    fit_dir, eval_dir, overlap = trees(ctx, per_breed)
    count = overlap["eval_images"]
    fit_listing = dataset.list_dataset(str(fit_dir))
    weights = probe.fitted_weights(client, fit_listing, s.base.preprocess, name, s.base.seed,
                                   Path(ctx.data_dir) / "weights" / f"{name}-seed{s.base.seed}-textured-probe.pt")
    fp32 = dataclasses.replace(s.base, dataset_dir=str(eval_dir), model=name, weights=weights,
                               limit=None)
    bf16 = dataclasses.replace(fp32, precision="bf16")
    check = dataclasses.replace(bf16, agreement_sample=count)
    agreement = benchmark.run(client, check, _timer())
    facts: dict[str, Any] = {}
    sides = {"bf16": _rate(client, bf16, facts, "bf16"), "fp32": _rate(client, fp32, facts, "fp32")}
    samples, load = pairs.interleave(sides, ctx.repeats, ctx.echo, "images precision", "img/s")
    logits = logit_summary(client, dataset.list_dataset(str(eval_dir)), fp32)
    fig.numerator = Measurement("bf16_images_per_second", "img/s", samples["bf16"])
    fig.denominator = Measurement("fp32_images_per_second", "img/s", samples["fp32"])
    fig.checks = [Check("top1_agreement_with_fp32", agreement.get("top1_agreement_with_fp32"), Goal(">=", 0.99))]
    fig.notes = {"model": name, "images": count, "cluster": s.topology, "batch_size": s.base.batch_size,
                 "bf16": "torch.autocast(cpu, bfloat16) + channels-last, batch norm folded (both sides)",
                 "weights": "random backbone (seed 0) + ridge head fitted in fp32 on the textured 'fit' tree;"
                            " timed and compared on the 'eval' tree (bench/images/textured.py, bench/images/probe.py)",
                 "agreement_images": agreement.get("agreement_images"), "trees": overlap, "logits_bf16_vs_fp32": logits,
                 "top1_exact_bf16": agreement.get("top1_exact"), "machine_load": load, "sides": facts,
                 "cpu_bf16_flags": flags, "torch_cpu_capability": _torch_capability()}


def _torch_capability() -> str:
    import torch

    return torch.backends.cpu.get_cpu_capability()


def _timer():
    from workloads.runs.results import PhaseTimer

    return PhaseTimer()


def _rate(client, config, facts: dict[str, Any], key: str) -> pairs.Side:
    from workloads.images import benchmark

    def run() -> float:
        metrics = benchmark.run(client, config, _timer())
        facts[key] = {k: metrics[k] for k in ("decoders", "batchnorm_folded", "torch_threads")}
        return metrics["images_per_second"]
    return run


def logit_summary(client, listing, config) -> dict[str, Any]:
    """:func:`bench.images.probe.logit_agreement` of bf16 against fp32 over ``listing``, split
    over the workers, with the workers' model settings."""
    from workloads.images import dataset

    spec = dict(model=config.model, weights=config.weights, device="cpu", seed=config.seed,
                channels_last=config.channels_last, fold_batchnorm=config.fold_batchnorm,
                crop=dataset.RECIPES[config.preprocess][1])
    workers = client.nthreads()
    addresses = sorted(workers)
    files = list(listing.files)
    futures = [client.submit(probe.logit_agreement, listing.images_dir, files[i::len(addresses)], config.preprocess,
                             spec, workers[address], workers=[address], pure=False)
               for i, address in enumerate(addresses) if files[i::len(addresses)]]
    return probe.summarise(client.gather(futures))
