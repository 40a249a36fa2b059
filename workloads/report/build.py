"""Turn a results directory into figures and one ``report.html``."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import workloads.report.figures as figures
import workloads.report.page as page
import workloads.report.runs as runs
from workloads.runs import benchmarks

from .page import Figure

logger = logging.getLogger(__name__)

REPORT_FILE = "report.html"
FIGURES_DIR = "figures"


def render(results_dir: str | os.PathLike = "results", compare: str | os.PathLike | None = None,
           output: str | os.PathLike | None = None, utilization_runs: int = 6) -> Path:
    """Render ``results_dir/results.jsonl`` (and the sidecars its records name).

    Parameters
    ----------
    results_dir : str or os.PathLike
        The results directory (default ``results``).
    compare : str or os.PathLike, optional
        Another results directory: adds the ratios this / other per matched configuration.
    output : str or os.PathLike, optional
        Where ``report.html`` and ``figures/*.png`` go (default ``<results_dir>``:
        ``results/report.html`` beside ``results.jsonl``).
        PNGs already in ``<output>/figures`` are replaced.
    utilization_runs : int
        Draw the utilization of the latest this-many runs that have samples (0: all).

    Returns
    -------
    pathlib.Path
        The ``report.html`` written.

    Raises
    ------
    workloads.report.runs.NoResults
        ``results.jsonl`` (here or in ``compare``) is missing or holds no record.
    """
    results = runs.load(results_dir)
    other = runs.load(compare) if compare is not None else None
    out = Path(output) if output is not None else Path(results_dir)
    figure_dir = out / FIGURES_DIR
    figure_dir.mkdir(parents=True, exist_ok=True)
    for stale in figure_dir.glob("*.png"):
        stale.unlink()

    made: list[Figure] = []

    def add(section: str, title: str, caption: str, path: Path | None) -> None:
        if path is not None:
            made.append(Figure(section, title, caption, path))

    everything = results.runs
    names = list(dict.fromkeys([*benchmarks.BENCHMARKS, *(run.benchmark for run in everything)]))
    specs = {name: benchmarks.report(name) for name in names}
    for name, spec in specs.items():
        if spec.scaling:
            add("throughput", f"{spec.title}: {spec.throughput.get(spec.scaling, spec.scaling)} by number of"
                " Dask workers", figures.throughput_caption(everything, name),
                figures.throughput(everything, name, figure_dir / f"{name}-throughput.png"))
    for name, spec in specs.items():
        add("phases", f"{spec.title}: time per phase", spec.phases_caption,
            figures.phases(everything, name, figure_dir / f"{name}-phases.png"))
    panels = figures.quality_panels(everything)
    add("quality", " and ".join(spec.label for spec, _ in panels) + " per run",
        " ".join(f"{spec.title}: {spec.caption}" for spec, _ in panels),
        figures.quality(everything, figure_dir / "quality.png"))
    sampled = [run for run in everything if run.samples]
    if utilization_runs > 0:
        sampled = sampled[-utilization_runs:]
    for run in sampled:
        add("utilization", f"Utilization of run {run.label}", figures.utilization_caption(run),
            figures.utilization(run, figure_dir / f"utilization-run{run.number}.png"))
    add("gpu", "GPU held and busy per run", figures.held_caption(everything),
        figures.held_busy(everything, figure_dir / "gpu-held-busy.png"))
    comparison = runs.compare(results.runs, other.runs) if other is not None else None
    if comparison is not None:
        add("compare", "Ratio this / other per configuration and measure",
            "Log scale; 1 (×1) means equal. Green: this set did better on that measure (higher throughput "
            "or shorter time), red: worse.",
            figures.comparison(comparison, figure_dir / "compare.png"))

    report = out / REPORT_FILE
    report.write_text(page.build(results, made, out, comparison, other), encoding="utf-8")
    logger.info("report: %s (%d figures)", report, len(made))
    return report
