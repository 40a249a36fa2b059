"""The images figures: the images benchmark's Dask path against its limit and baselines.

One run of the real ``workloads.images.benchmark.run`` on a local cluster made by the
runner's own ``workloads.cluster.local`` code gives the Dask path's images/s (its ``infer``
phase: end to end, decode + preprocess + forward, the clock in this process from the
first task submitted to the last result back). In the same repetition, on the same
files, each timed the same way (this process's clock around the whole job):

* the limit: the same model holder (``ModelPlugin``, warmed at the run's forward batch)
  in plain processes shaped like the workers (as many, the same threads, allocator and
  environment), classifying tensors decoded beforehand, all processes at once;
* the tuned loop: one process with all the workers' threads together, the workers'
  environment (allocator, malloc and thread variables), the same decoder and model
  holder (folded batch norm), a worker task's code batch after batch;
* the naive loop: what the paper's notebook does (PIL decode, the model as built, glibc
  malloc defaults, ``torch.set_num_threads(all)``);
* the scaling figure: one of the two workers alone (the run restricted to it, on the
  same cluster), and its ceiling without Dask: the tuned loop's code in two plain
  processes x one thread at once against one of them.

Every side, baselines included, runs once before the repetitions (discarded). Each side
reports what it ran with (decoder, folding, allocator, threads) into the figure's
``notes["sides"]``. The bf16 figure is :mod:`bench.images.precision`.
"""
from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack, closing
from dataclasses import dataclass
from typing import Any

from bench import helper, pairs
from bench.figures import Figure, Measurement
from bench.images import plain, precision

logger = logging.getLogger(__name__)

NAMES = ("images_pipeline_vs_model", "images_dask_vs_plain_loop", "images_dask_vs_naive_loop",
         "images_scaling_2x1_vs_1x1", "images_bf16_vs_fp32")
CEILING_HOW = ("the tuned loop's code in 2 plain processes x 1 thread at once (half the files each) / in one of"
               " them (all the files), the workers' environment: the scaling this machine gives without Dask")
NAIVE_ENV = {"LD_PRELOAD": None, "MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": None,
             "MKL_NUM_THREADS": None, "OPENBLAS_NUM_THREADS": None}
# figure -> (its baseline's side, how that side is measured)
BASELINES = {
    NAMES[0]: ("limit", "ModelPlugin.predict on preloaded tensors in {workers} plain process(es) shaped like the"
                        " workers (same threads, allocator, environment; warmed at the forward batch), all at once"),
    NAMES[1]: ("tuned", "one process, {threads} threads, the workers' environment, decoder and ModelPlugin"
                        " (batch norm folded), a worker task's code batch after batch"),
    NAMES[2]: ("naive", "one process, torch.set_num_threads({threads}), glibc malloc defaults (no preload,"
                        " MALLOC_TRIM_THRESHOLD_ unset), PIL decode, the model as built (not folded)"),
}


@dataclass
class Setup:
    """What every side shares: the files, the cluster plan, the benchmark's config."""

    listing: Any
    plan: Any
    base: Any
    threads: int

    @property
    def topology(self) -> str:
        return f"{self.plan.n_workers} worker(s) x {self.plan.threads_per_worker} thread(s), {self.plan.allocator}"


def setup(ctx) -> Setup:
    from workloads.cluster import local
    from workloads.images import benchmark, dataset
    from workloads.images import synthetic as synth

    cfg = ctx.profile["images"]
    dogs = ctx.data_dir / "dogs"
    synth.generate(dogs, **cfg["generate"])
    plan = local.plan(ctx.profile.get("workers"), "cpu")
    base = benchmark.ImagesConfig(dataset_dir=str(dogs), model=cfg["model"], batch_size=cfg["batch_size"],
                                  forward_batch=cfg["forward_batch"], device="cpu", agreement_sample=0)
    return Setup(dataset.list_dataset(str(dogs)), plan, base, plan.n_workers * plan.threads_per_worker)


def measure(ctx, wanted: list[str], make: Callable[[str], Figure]) -> dict[str, Figure]:
    from workloads.cluster.session import ClusterSession

    s = setup(ctx)
    figures = {name: make(name) for name in wanted}
    facts: dict[str, Any] = {}
    with ExitStack() as stack:
        ctx.echo(f"images: local cluster {s.topology}; {len(s.listing.files)} files")
        client = stack.enter_context(ClusterSession.start_local(s.plan)).client
        sides: dict[str, pairs.Side] = {}
        if set(wanted) & set(NAMES[:4]):
            sides["dask"] = dask_side(client, s.base, facts, "dask")
            facts["dask"] = {"workers": pairs.worker_facts(client)}
        if NAMES[0] in wanted:
            sides["limit"] = limit_side(stack, s, facts)
        if NAMES[1] in wanted:
            sides["tuned"] = tuned_side(stack, s, facts)
        if NAMES[2] in wanted:
            sides["naive"] = naive_side(stack, s, facts)
        if NAMES[3] in wanted:
            sides.update(scaling_sides(stack, s, facts, client))
        if sides:
            samples, load = pairs.interleave(sides, ctx.repeats, ctx.echo, "images", "img/s")
            fill(figures, samples, facts, s, load)
        if NAMES[4] in figures:
            precision.measure(ctx, client, s, figures[NAMES[4]])
    return figures


def dask_side(client, config, facts: dict[str, Any], key: str) -> pairs.Side:
    """images/s of the real benchmark on ``client``; its own report of decoder, folding and
    threads goes to ``facts[key]``."""
    from workloads.images import benchmark
    from workloads.runs.results import PhaseTimer

    def run() -> float:
        metrics = benchmark.run(client, config, PhaseTimer())
        facts.setdefault(key, {}).update({k: metrics[k] for k in ("decoders", "batchnorm_folded", "torch_threads")})
        return metrics["images_per_second"]
    return run


def limit_side(stack: ExitStack, s: Setup, facts: dict[str, Any]) -> pairs.Side:
    base, plan = s.base, s.plan
    limits = [stack.enter_context(closing(helper.Helper(f"limit-{i}", plan.environ))) for i in range(plan.n_workers)]
    loaded = helper.call_all(limits, plain.load_model, spec=_model_spec(base), threads=plan.threads_per_worker)
    facts["limit"] = {"processes": loaded}
    for i, one in enumerate(limits):
        one.call(plain.preload, images_dir=s.listing.images_dir, files=list(s.listing.files[i::len(limits)]),
                 recipe=base.preprocess, decode=base.decode)

    def run() -> float:
        started = time.perf_counter()  # like the infer phase: this process's clock around the whole job
        results = helper.call_all(limits, plain.forward, chunk=base.forward_batch)
        return sum(r["images"] for r in results) / (time.perf_counter() - started)
    return run


def tuned_side(stack: ExitStack, s: Setup, facts: dict[str, Any]) -> pairs.Side:
    from workloads.cluster import local

    base = s.base
    environ = local.plan(1, "cpu", threads_per_worker=s.threads).environ  # a worker's environment, all threads
    loop = stack.enter_context(closing(helper.Helper("tuned-loop", environ)))
    facts["tuned"] = {"process": loop.call(plain.load_model, spec=_model_spec(base), threads=s.threads)}
    return _loop_side(loop, facts["tuned"], plain.tuned_loop, files=list(s.listing.files), **_tuned_job(s))


def naive_side(stack: ExitStack, s: Setup, facts: dict[str, Any]) -> pairs.Side:
    base = s.base
    loop = stack.enter_context(closing(helper.Helper("naive-loop", NAIVE_ENV)))
    facts["naive"] = {"process": loop.call(plain.load_naive, name=base.model, weights=base.weights, seed=base.seed,
                                           threads=s.threads, channels_last=base.channels_last,
                                           precision=base.precision)}
    return _loop_side(loop, facts["naive"], plain.naive_loop, images_dir=s.listing.images_dir,
                      files=list(s.listing.files), recipe=base.preprocess, batch_size=base.batch_size)


def _loop_side(loop: helper.Helper, facts: dict[str, Any], job, **kwargs: Any) -> pairs.Side:
    def run() -> float:
        started = time.perf_counter()
        result = loop.call(job, **kwargs)
        facts.update({k: result[k] for k in ("decoder", "batchnorm_folded", "threads")})
        return result["images"] / (time.perf_counter() - started)
    return run


def scaling_sides(stack: ExitStack, s: Setup, facts: dict[str, Any], client) -> dict[str, pairs.Side]:
    """The same Dask path on two workers x one thread and on one of those two workers
    alone (a run restricted to it, as the runner's ``--workers`` does): one cluster, so
    the same scheduler and the same idle processes are behind both sides. The main
    cluster serves when it has that shape; otherwise a 2 x 1 cluster is started."""
    import dataclasses

    from workloads.cluster import local
    from workloads.cluster.session import ClusterSession

    sides = {}
    if (s.plan.n_workers, s.plan.threads_per_worker) != (2, 1):
        client = stack.enter_context(ClusterSession.start_local(local.plan(2, "cpu", threads_per_worker=1))).client
        facts["two"] = {"workers": pairs.worker_facts(client)}
        sides["two"] = dask_side(client, s.base, facts, "two")
    workers = pairs.worker_facts(client)
    first = sorted(workers)[0]
    facts["one"] = {"workers": {first: workers[first]}, "cluster_workers": len(workers)}
    sides["one"] = dask_side(client, dataclasses.replace(s.base, workers=(first,)), facts, "one")
    sides.update(ceiling_sides(stack, s, facts))
    return sides


def ceiling_sides(stack: ExitStack, s: Setup, facts: dict[str, Any]) -> dict[str, pairs.Side]:
    """The scaling figure's ceiling without Dask: the tuned loop's code (a worker task's
    decode and model, batch after batch) in two plain processes x one thread at once, each
    on half the files, and in one of them on all the files; the workers' environment."""
    from workloads.cluster import local

    base = s.base
    environ = local.plan(1, "cpu", threads_per_worker=1).environ
    plain_processes = [stack.enter_context(closing(helper.Helper(f"ceiling-{i}", environ))) for i in range(2)]
    loaded = helper.call_all(plain_processes, plain.load_model, spec=_model_spec(base), threads=1)
    facts["ceiling"] = {"processes": loaded}
    files = list(s.listing.files)

    def together(helpers: list[helper.Helper]) -> float:
        started = time.perf_counter()
        for i, one in enumerate(helpers):
            one.send(plain.tuned_loop, files=files[i::len(helpers)], **_tuned_job(s))
        results = [one.receive() for one in helpers]
        facts["ceiling"]["decoders"] = sorted({r["decoder"] for r in results})
        return sum(r["images"] for r in results) / (time.perf_counter() - started)
    return {"ceiling_two": lambda: together(plain_processes), "ceiling_one": lambda: together(plain_processes[:1])}


def _tuned_job(s: Setup) -> dict[str, Any]:
    """:func:`plain.tuned_loop`'s arguments but the files: a worker task's decode and batches."""
    base = s.base
    return {"images_dir": s.listing.images_dir, "recipe": base.preprocess, "batch_size": base.batch_size,
            "forward_batch": base.forward_batch, "decode": base.decode, "prefetch": base.prefetch}


def _model_spec(base) -> dict[str, Any]:
    """The workers' model holder's spec (``ModelPlugin``), warmed at the run's forward batch."""
    from workloads.images import dataset

    return dict(model=base.model, weights=base.weights, device="cpu", seed=base.seed, precision=base.precision,
                channels_last=base.channels_last, fold_batchnorm=base.fold_batchnorm,
                crop=dataset.RECIPES[base.preprocess][1], warmup_batch=min(base.forward_batch, base.batch_size))


def fill(figures: dict[str, Figure], samples: dict[str, list[float]], facts: dict[str, Any], s: Setup,
         load: dict[str, Any]) -> None:
    """Put the sides' samples and reports into the figures."""
    base = s.base
    notes = {"model": base.model, "images": len(s.listing.files), "batch_size": base.batch_size,
             "forward_batch": base.forward_batch, "precision": base.precision, "channels_last": base.channels_last,
             "cluster": s.topology, "worker_environ": s.plan.environ, "machine_load": load}
    dask = Measurement("dask_path_images_per_second", "img/s", samples.get("dask", []),
                       {"how": "workloads.images.benchmark.run on a local cluster: infer phase"})
    for name, (side, how) in BASELINES.items():
        if name not in figures:
            continue
        fig = figures[name]
        fig.numerator = dask
        label = fig.denominator.name if fig.denominator else f"{side}_images_per_second"
        fig.denominator = Measurement(label, "img/s", samples[side],
                                      {"how": how.format(workers=s.plan.n_workers, threads=s.threads)})
        fig.notes = {**notes, "sides": {"dask": facts["dask"], side: facts[side]}}
    if NAMES[3] in figures:
        fig = figures[NAMES[3]]
        two = "two" if "two" in samples else "dask"
        fig.numerator = Measurement("two_workers_images_per_second", "img/s", samples[two])
        fig.denominator = Measurement("one_worker_images_per_second", "img/s", samples["one"])
        ceiling = [round(a / b, 3) for a, b in zip(samples["ceiling_two"], samples["ceiling_one"], strict=True)]
        fig.notes = {**notes, "cluster": "2 workers x 1 thread vs 1 of those workers alone (one cluster)",
                     "sides": {"two": facts[two], "one": facts["one"], "ceiling": facts["ceiling"]},
                     "ceiling": {"how": CEILING_HOW, "ratios": ceiling, "median": statistics.median(ceiling),
                                 "two_images_per_second": [round(v, 2) for v in samples["ceiling_two"]],
                                 "one_images_per_second": [round(v, 2) for v in samples["ceiling_one"]]}}
