"""The sections of ``dask-tkg bench gpu`` (see :mod:`bench.images.gpu.command`), each adding its
figures to the run and saving the JSON; a section that does not fit the time budget or cannot run
(a backend this machine lacks) adds its figures with the reason as their ``error``."""
from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from pathlib import Path

from bench.figures import Figure, Goal, Measurement
from bench.images.gpu import cluster as gpu_cluster
from bench.images.gpu import limits as gpu_limits
from bench.images.gpu.data import DataSize, make_dataset
from bench.images.gpu.limits import ModelRate, Sweep
from bench.images.gpu.record import E2E_GOAL, LIMIT_GOAL, Run, skipped

MODEL_SECTION_S = 12  # per graph mode: load + the rates (plus model_seconds each)
COMPILE_S = 120
DECODE_SECTION_S = 40
E2E_SECTION_S = 75
FIGURE9_PER_COUNT_S = 30

logger = logging.getLogger("bench.gpu")


def echo(text: str) -> None:
    print(text, flush=True)


def measure_all(args, run: Run) -> None:
    from workloads.images import dataset

    root = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="bench-gpu-"))
    started = time.perf_counter()
    size = DataSize(args.parts, args.breeds_per_part, args.images_per_breed)
    dogs = make_dataset(root, size)
    listing = dataset.list_dataset(str(dogs))
    run.facts["data"] = {"files": len(listing.files), "distinct": True, "generated_seconds":
                         round(time.perf_counter() - started, 1), "sizes_px": "300-500 x 300-500", "quality": 90}
    echo(f"bench.gpu: {len(listing.files)} files under {dogs} in {time.perf_counter() - started:.0f} s")
    preload = preloaded(listing, args.device)
    quick = [g for g in args.graphs if not g.startswith("compile")]
    slow = [g for g in args.graphs if g.startswith("compile")]
    sweep = Sweep()
    model_figures = {p: model_figure(p) for p in args.precisions}
    if run.fits(len(quick) * (MODEL_SECTION_S + len(args.precisions) * len(args.batches) * args.model_seconds),
                "the model-only sweep"):
        gpu_limits.model_sweep(args.model, args.device, preload, args.precisions, args.batches, quick,
                               args.cpu_threads, args.model_seconds, sweep, echo)
    update_model_figures(model_figures, sweep)
    run.add(*model_figures.values())
    decode_section(args, run, listing)
    def best_rate(precision: str) -> float:
        best = sweep.best(precision)
        return best.images_per_second if best else 0.0

    order = sorted(args.precisions, key=lambda p: -best_rate(p))
    e2e_section(args, run, listing, dogs, sweep, preload, order[0])
    figure9_section(args, run, str(dogs))
    for precision in order[1:]:
        e2e_section(args, run, listing, dogs, sweep, preload, precision)
    # last, as a compile takes a minute or more: the fastest precision at its best batch only
    best = sweep.best(order[0])
    for graph in slow:
        if run.fits(COMPILE_S, f"torch.compile ({graph}) model-only rate"):
            batch = best.batch if best else args.batches[0]
            gpu_limits.model_sweep(args.model, args.device, preload, order[:1], [batch],
                                   [graph], args.cpu_threads, args.model_seconds, sweep, echo)
            update_model_figures(model_figures, sweep)
            run.save()


def preloaded(listing, device: str, count: int = 64):
    """A decoded, preprocessed batch on the device (the model-only input)."""
    from workloads.images import jpeg

    batch, *_ = jpeg.load_batch(listing.images_dir, list(listing.files[:count]), "imagenet", device)
    return batch


def model_figure(precision: str) -> Figure:
    name = f"gpu_model_only_{precision}_images_per_second"
    return Figure(name, f"GPU {precision}: model-only images/s (preloaded tensors), best batch and graph mode",
                  Goal(">=", E2E_GOAL), Measurement(name, "img/s"), None)


def update_model_figures(figures: dict[str, Figure], sweep: Sweep) -> None:
    for precision, figure in figures.items():
        best = sweep.best(precision)
        figure.numerator.samples = [best.images_per_second] if best else []
        figure.notes = {"best": dataclasses.asdict(best) if best else None, "sweep": sweep.as_notes(),
                        "graph_errors": sweep.errors, "how": "ModelPlugin.predict, top-k back on the host per batch"}
        figure.error = None if best else "not measured: " + ("; ".join(sweep.errors.values()) or "time budget")


def decode_section(args, run: Run, listing) -> None:
    """Decode-only rate per backend (preloaded bytes) and on every CPU core."""
    from workloads.images import decoders
    from workloads.observe import environment

    found = decoders.availability(args.device)
    files = list(listing.files[:args.decode_files])
    figures = []
    raws = gpu_limits.preload_bytes(listing.images_dir, files, min(256, len(files)))
    for backend in decoders.BACKENDS[:-1]:
        name = f"gpu_decode_only_{backend.replace('-', '_')}_images_per_second"
        title = f"decode-only images/s: {backend} (decode + resize + crop + normalise, preloaded bytes)"
        if not found.has(backend):
            figures.append(skipped(name, title, Goal(">=", E2E_GOAL), f"not available: {found.reasons.get(backend)}"))
            continue
        if not run.fits(DECODE_SECTION_S / 4, f"decode-only {backend}"):
            figures.append(skipped(name, title, Goal(">=", E2E_GOAL), "skipped: time budget"))
            continue
        try:
            result = gpu_limits.backend_rate(raws, args.device, backend)
        except Exception as exc:
            figures.append(skipped(name, title, Goal(">=", E2E_GOAL), f"{type(exc).__name__}: {exc}"))
            continue
        echo(f"decode-only {backend}: {result['images_per_second']:,.0f} img/s, decoded by {result['decoded_by']}")
        figures.append(Figure(name, title, Goal(">=", E2E_GOAL),
                              Measurement(name, "img/s", [result["images_per_second"]]), None, notes=result))
    cores = environment.usable_cores()
    name = "cpu_decode_only_all_cores_images_per_second"
    title = f"decode-only images/s on {cores} CPU cores (one process each, libjpeg-turbo, reads included)"
    if run.fits(DECODE_SECTION_S / 2, "decode-only on the CPU cores"):
        result = gpu_limits.cpu_cores_rate(listing.images_dir, files, cores)
        echo(f"decode-only {cores} CPU cores: {result['images_per_second']:,.0f} img/s")
        figures.append(Figure(name, title, Goal(">=", E2E_GOAL),
                              Measurement(name, "img/s", [result["images_per_second"]]), None, notes=result))
    else:
        figures.append(skipped(name, title, Goal(">=", E2E_GOAL), "skipped: time budget"))
    run.add(*figures)


def e2e_section(args, run: Run, listing, dogs: Path, sweep: Sweep, preload, precision: str) -> None:
    """End to end through Dask, alternated with the model-only and decode-only limits."""
    end_name, ratio_name = f"gpu_{precision}_end_to_end_images_per_second", f"gpu_{precision}_end_to_end_vs_limit"
    end_title = f"GPU {precision}: end-to-end images/s through Dask (one worker for the GPU)"
    ratio_title = f"GPU {precision}: end to end / min(model-only, decode-only), paired per repetition"
    if not run.fits(E2E_SECTION_S, f"end to end {precision}"):
        run.add(skipped(end_name, end_title, Goal(">=", E2E_GOAL), "skipped: time budget"),
                skipped(ratio_name, ratio_title, Goal(">=", LIMIT_GOAL), "skipped: time budget"))
        return
    best = sweep.best(precision) or ModelRate(precision, args.batches[0], "eager", 0.0, 0.0)
    try:
        samples, notes, plugin = measure_e2e(args, listing, dogs, best, preload)
    except Exception as exc:  # the other sections still run; the traceback is in the log
        logger.exception("end to end %s failed", precision)
        error = f"{type(exc).__name__}: {exc}"
        run.add(skipped(end_name, end_title, Goal(">=", E2E_GOAL), error),
                skipped(ratio_name, ratio_title, Goal(">=", LIMIT_GOAL), error))
        return
    end = Measurement(f"end_to_end_{precision}_images_per_second", "img/s", samples["dask"],
                      {"how": "workloads.images.benchmark.run, infer phase, --decode gpu"})
    limits = [min(m, d) for m, d in zip(samples["model"], samples["decode"], strict=True)]
    limit = Measurement(f"limit_{precision}_images_per_second", "img/s", limits,
                        {"model_only": samples["model"], "decode_only_pipeline": samples["decode"],
                         "bound_by": ["model" if m <= d else "decode"
                                      for m, d in zip(samples["model"], samples["decode"], strict=True)]})
    figures = [Figure(end_name, end_title, Goal(">=", E2E_GOAL), end, None, notes=notes),
               Figure(ratio_name, ratio_title, Goal(">=", LIMIT_GOAL), end, limit, notes=notes)]
    missed = any(f.holds is False for f in figures)
    if args.profile == "always" or (args.profile == "auto" and missed):
        notes["profile"] = profile(args, run, listing, best, plugin)
    plugin.teardown(None)
    run.add(*figures)


def measure_e2e(args, listing, dogs: Path, best: ModelRate, preload):
    from workloads.images import dataset

    plugin = gpu_limits.load_plugin(args.model, args.device, best.graph, best.batch, args.cpu_threads)
    batch = preload.repeat((best.batch + len(preload) - 1) // len(preload), 1, 1, 1)[:best.batch].contiguous()
    tasks = dataset.make_batches(list(listing.files), best.batch * args.task_batches)
    samples: dict[str, list[float]] = {"dask": [], "model": [], "decode": []}
    with gpu_cluster.GpuCluster(args.threads, args.device) as cluster:
        config = gpu_cluster.images_config(str(dogs), args.model, args.device, best.precision, best.batch,
                                        args.task_batches, best.graph, args.prefetch)
        warm = cluster.run(dataclasses.replace(config, limit=best.batch * args.task_batches * args.threads * 2))
        echo(f"end to end {best.precision} warm-up: {warm['images_per_second']:,.0f} img/s, "
             f"decoded by {warm['decode_backends']}")
        last = warm
        for repetition in range(args.repeats):
            steps = ["dask", "model", "decode"]
            for step in steps[repetition % 3:] + steps[:repetition % 3]:
                if step == "dask":
                    last = cluster.run(config)
                    samples["dask"].append(last["images_per_second"])
                elif step == "model":
                    rate = gpu_limits.model_only_rate(plugin, batch, best.precision, args.model_seconds)
                    samples["model"].append(rate)
                else:
                    decoded = gpu_limits.pipeline_decode_rate(
                        listing.images_dir, tasks, best.batch, args.device, args.prefetch, args.threads)
                    samples["decode"].append(decoded["images_per_second"])
            echo(f"end to end {best.precision} repetition {repetition + 1}: {samples['dask'][-1]:,.0f} img/s; "
                 f"model-only {samples['model'][-1]:,.0f}, decode-only {samples['decode'][-1]:,.0f}; "
                 f"worker seconds {last['worker_seconds']}")
        probe = cluster.decoder_probe(args.device)
        cluster_facts = cluster.plan.describe()
    notes = {"precision": best.precision, "forward_batch": best.batch, "graph": best.graph,
             "task_images": best.batch * args.task_batches, "worker_threads": args.threads, "prefetch": args.prefetch,
             "files": len(listing.files), "images_failed": last["images_failed"],
             "images_converted": last["images_converted"], "decode_backends": last["decode_backends"],
             "worker_decoder_probe": probe, "worker_seconds": last["worker_seconds"],
             "phases": last["phases"], "cluster": cluster_facts, "warm_up_images_per_second": warm["images_per_second"]}
    return samples, notes, plugin


def profile(args, run: Run, listing, best: ModelRate, plugin) -> dict:
    from bench.images.gpu import profiler
    from workloads.images import dataset

    if not run.fits(20, "the profile"):
        return {"error": "skipped: time budget"}
    tasks = dataset.make_batches(list(listing.files), best.batch * args.task_batches)[:args.threads * 2]
    try:
        summary = profiler.profile_pipeline(plugin, listing.images_dir, tasks, best.batch, args.device,
                                               args.prefetch, args.threads, best.precision,
                                               run.path.with_name(run.path.stem + f"-profile-{best.precision}.txt"))
    except Exception as exc:  # the figures stand without it
        return {"error": f"{type(exc).__name__}: {exc}"}
    echo(f"profile {best.precision}: GPU kernels busy {summary['gpu_kernel_busy_fraction']} of the wall time; "
         f"model thread waited {summary['model_thread_wait_for_decode_seconds']} s for decoded batches")
    return summary


def figure9_section(args, run: Run, dogs: str) -> None:
    """The paper's figure 9: the CPU path's scaling with workers of ``cpu_threads`` threads."""
    counts = sorted(set(args.cpu_workers) | {1})
    figures = {n: (f"cpu_figure9_{n}x{args.cpu_threads}_vs_linear",
                   f"CPU path (figure 9): {n} workers x {args.cpu_threads} threads vs {n} x 1 worker's images/s",
                   Goal(">=", 0.9 if n <= 4 else 0.8)) for n in counts if n > 1}
    if not run.fits(FIGURE9_PER_COUNT_S * len(counts), "figure 9 (CPU scaling)"):
        run.add(*(skipped(name, title, goal, "skipped: time budget") for name, title, goal in figures.values()))
        return
    model = args.model if args.device == "cpu" else "resnet50"
    try:
        result = gpu_cluster.cpu_scaling(dogs, model, counts, args.cpu_threads, args.cpu_images_per_worker,
                                      max(1, min(args.repeats, 2)), args.cpu_precision, args.cpu_batch, echo)
    except Exception as exc:
        logger.exception("figure 9 failed")
        run.add(*(skipped(name, title, goal, f"{type(exc).__name__}: {exc}") for name, title, goal in figures.values()))
        return
    base = result["rates"][1]
    added = []
    for n, (name, title, goal) in figures.items():
        notes = {"one_worker": result["facts"][1], "these_workers": result["facts"][n], "config": result["config"]}
        added.append(Figure(name, title, goal,
                            Measurement(f"cpu_{n}_workers_images_per_second", "img/s", result["rates"][n]),
                            Measurement(f"{n}_x_one_worker_images_per_second", "img/s", [n * r for r in base]),
                            notes=notes))
    run.add(*added)
