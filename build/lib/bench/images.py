"""Figures 1-3 and 7: the images benchmark's Dask path against its limits.

One run of the real ``workloads.images.benchmark.run`` on a local cluster made by the
runner's own ``workloads.local`` code gives the Dask path's images/s (its ``infer``
phase: end to end, decode + preprocess + forward, clock stopped when the last result is
back). Side by side, in the same repetition, on the same files:

* the limit: the same model holder (``ModelPlugin``) in plain processes shaped like the
  workers (as many processes, the same threads, the same allocator and environment),
  classifying tensors decoded beforehand, all processes at once;
* the plain loop: one process, ``torch.set_num_threads(<all the workers' threads>)``,
  glibc malloc with its default tunables (no preload, ``MALLOC_TRIM_THRESHOLD_`` unset:
  what ``python script.py`` gets), decode + preprocess + forward batch after batch;
* one worker with one thread (figure 3);
* for figure 7, ResNet-50 in fp32 and in bf16 (autocast, channels-last), with the
  workload's own ``top1_agreement_with_fp32`` (see :mod:`bench.probe` for the weights).
"""
from __future__ import annotations

import dataclasses
import logging
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any, Callable

from bench import helper, plain, probe
from bench.load import LoadMonitor
from bench.figures import Check, Figure, Goal, Measurement

logger = logging.getLogger(__name__)

NAMES = ("images_pipeline_vs_model", "images_dask_vs_plain_loop", "images_scaling_2x1_vs_1x1",
         "images_bf16_vs_fp32")
NAIVE_ENV = {"LD_PRELOAD": None, "MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": None,
             "MKL_NUM_THREADS": None, "OPENBLAS_NUM_THREADS": None}


def measure(ctx, wanted: list[str], make: Callable[[str], Figure]) -> dict[str, Figure]:
    from distributed import Client

    from workloads import local
    from workloads.images import benchmark, dataset
    from workloads.results import PhaseTimer
    from workloads.synth import images as synth

    cfg = ctx.profile["images"]
    dogs = ctx.data_dir / "dogs"
    synth.generate(dogs, **cfg["generate"])
    listing = dataset.list_dataset(str(dogs))
    main_plan = local.plan(ctx.profile.get("workers"), "cpu")
    threads = main_plan.n_workers * main_plan.threads_per_worker
    base = benchmark.ImagesConfig(dataset_dir=str(dogs), model=cfg["model"], batch_size=cfg["batch_size"],
                                  forward_batch=cfg["forward_batch"], device="cpu", agreement_sample=0)
    figures = {name: make(name) for name in wanted}
    topology = f"{main_plan.n_workers} worker(s) x {main_plan.threads_per_worker} thread(s), {main_plan.allocator}"

    def dask_rate(client, config) -> tuple[float, dict[str, Any]]:
        metrics = benchmark.run(client, config, PhaseTimer())
        return metrics["images_per_second"], metrics

    with ExitStack() as stack:
        ctx.echo(f"images: local cluster {topology}; {len(listing.files)} files")
        cluster = stack.enter_context(local.start(main_plan, dashboard_address=":0"))
        client = stack.enter_context(Client(cluster))
        client.wait_for_workers(main_plan.n_workers)
        sides: dict[str, list[float]] = {k: [] for k in ("dask", "limit", "plain", "one", "two")}
        two_side = "dask" if (main_plan.n_workers, main_plan.threads_per_worker) == (2, 1) else "two"
        runs: list[Callable[[], None]] = []

        if set(wanted) & set(NAMES[:3]):
            dask_rate(client, base)  # warm-up, discarded
            runs.append(lambda: sides["dask"].append(dask_rate(client, base)[0]))
        if NAMES[0] in wanted:
            limits = [stack.enter_context(closing(helper.Helper(f"limit-{i}", main_plan.environ)))
                      for i in range(main_plan.n_workers)]
            spec = dict(model=base.model, weights=base.weights, device="cpu", seed=base.seed, precision=base.precision,
                        channels_last=base.channels_last, fold_batchnorm=base.fold_batchnorm,
                        crop=dataset.RECIPES[base.preprocess][1])
            helper.call_all(limits, plain.load_model, spec=spec, threads=main_plan.threads_per_worker)
            for i, one in enumerate(limits):
                one.call(plain.preload, images_dir=listing.images_dir, files=list(listing.files[i::len(limits)]),
                         recipe=base.preprocess)

            def limit_run() -> None:
                results = helper.call_all(limits, plain.forward, chunk=base.forward_batch)
                sides["limit"].append(sum(r["images"] for r in results) / helper.span(results))
            runs.append(limit_run)
        if NAMES[1] in wanted:
            loop = stack.enter_context(closing(helper.Helper("plain-loop", NAIVE_ENV)))
            loop.call(plain.load_plain, name=base.model, weights=base.weights, seed=base.seed, threads=threads,
                      channels_last=base.channels_last, precision=base.precision)
            files = list(listing.files)

            def plain_run() -> None:
                result = loop.call(plain.plain_loop, images_dir=listing.images_dir, files=files,
                                   recipe=base.preprocess, batch_size=base.batch_size)
                sides["plain"].append(result["images"] / helper.span([result]))
            loop.call(plain.plain_loop, images_dir=listing.images_dir, files=files[:base.batch_size],
                      recipe=base.preprocess, batch_size=base.batch_size)  # warm-up
            runs.append(plain_run)
        if NAMES[2] in wanted:
            one_plan = local.plan(1, "cpu", threads_per_worker=1)
            one_cluster = stack.enter_context(local.start(one_plan, dashboard_address=":0"))
            one_client = stack.enter_context(Client(one_cluster))
            one_client.wait_for_workers(1)
            dask_rate(one_client, base)  # warm-up, discarded
            runs.append(lambda: sides["one"].append(dask_rate(one_client, base)[0]))
            if two_side == "two":  # the main cluster has another shape: a 2 x 1 cluster of its own
                two_cluster = stack.enter_context(local.start(local.plan(2, "cpu", threads_per_worker=1),
                                                              dashboard_address=":0"))
                two_client = stack.enter_context(Client(two_cluster))
                two_client.wait_for_workers(2)
                dask_rate(two_client, base)  # warm-up, discarded
                runs.append(lambda: sides["two"].append(dask_rate(two_client, base)[0]))

        monitor = LoadMonitor()
        for repetition in range(ctx.repeats if runs else 0):
            order = runs if repetition % 2 == 0 else runs[::-1]  # alternate which side goes first
            for run in order:
                with monitor.watch():
                    run()
            ctx.echo(f"images: repetition {repetition + 1}/{ctx.repeats}: "
                     + ", ".join(f"{k} {v[-1]:.1f} img/s" for k, v in sides.items() if v))

        notes = {"model": base.model, "images": len(listing.files), "batch_size": base.batch_size,
                 "precision": base.precision, "channels_last": base.channels_last, "cluster": topology,
                 "worker_environ": main_plan.environ, "machine_load": monitor.summary()}
        dask_side = Measurement("dask_path_images_per_second", "img/s", sides["dask"],
                                {"how": "workloads.images.benchmark.run on a local cluster: infer phase"})
        if NAMES[0] in figures:
            fig = figures[NAMES[0]]
            fig.numerator, fig.notes = dask_side, notes
            fig.denominator = Measurement("model_only_images_per_second", "img/s", sides["limit"], {
                "how": f"ModelPlugin.predict on preloaded tensors in {main_plan.n_workers} plain process(es) shaped"
                       " like the workers, all at once"})
        if NAMES[1] in figures:
            fig = figures[NAMES[1]]
            fig.numerator, fig.notes = dask_side, notes
            fig.denominator = Measurement("plain_loop_images_per_second", "img/s", sides["plain"], {
                "how": f"one process, torch.set_num_threads({threads}), glibc malloc default tunables (no preload,"
                       " MALLOC_TRIM_THRESHOLD_ unset), PIL decode + preprocess + forward per batch"})
        if NAMES[2] in figures:
            fig = figures[NAMES[2]]
            fig.notes = {**notes, "cluster": "2 workers x 1 thread vs 1 worker x 1 thread"}
            fig.numerator = Measurement("two_workers_images_per_second", "img/s", sides[two_side])
            fig.denominator = Measurement("one_worker_images_per_second", "img/s", sides["one"])
        if NAMES[3] in figures:
            _precision(ctx, client, base, listing, cfg, figures[NAMES[3]], dask_rate, topology)
    return figures


def _precision(ctx, client, base, listing, cfg: dict[str, Any], fig: Figure, dask_rate, topology: str) -> None:
    """Figure 7: ResNet-50 fp32 vs bf16 through the Dask path, and the top-1 agreement."""
    name = cfg["precision_model"]
    weights = probe.fitted_weights(client, listing, base.preprocess, name, base.seed, cfg["probe_fit_every"],
                                   Path(ctx.data_dir) / "weights" / f"{name}-seed{base.seed}-probe.pt")
    fp32 = dataclasses.replace(base, model=name, weights=weights, limit=cfg["precision_images"])
    bf16 = dataclasses.replace(fp32, precision="bf16")
    check = dataclasses.replace(bf16, limit=cfg["agreement_images"], agreement_sample=cfg["agreement_images"])
    _, agreement = dask_rate(client, check)  # also the warm-up (bf16, then the fp32 reference pass): discarded
    fast, slow = [], []
    monitor = LoadMonitor()
    for repetition in range(ctx.repeats):
        pair = [(fast, bf16), (slow, fp32)]
        for samples, config in (pair if repetition % 2 else pair[::-1]):
            with monitor.watch():
                samples.append(dask_rate(client, config)[0])
        ctx.echo(f"images: precision repetition {repetition + 1}/{ctx.repeats}: bf16 {fast[-1]:.1f},"
                 f" fp32 {slow[-1]:.1f} img/s")
    fig.numerator = Measurement("bf16_images_per_second", "img/s", fast)
    fig.denominator = Measurement("fp32_images_per_second", "img/s", slow)
    fig.checks = [Check("top1_agreement_with_fp32", agreement.get("top1_agreement_with_fp32"), Goal(">=", 0.99))]
    fig.notes = {"model": name, "images": fp32.limit, "cluster": topology, "batch_size": base.batch_size,
                 "bf16": "torch.autocast(cpu, bfloat16) + channels-last",
                 "weights": "random backbone (seed 0) + ridge head fitted in fp32 on every "
                            f"{cfg['probe_fit_every']}nd image (bench/probe.py): top-1 depends on the image",
                 "agreement_images": agreement.get("agreement_images"), "machine_load": monitor.summary(),
                 "top1_exact_bf16": agreement.get("top1_exact")}

