"""Turn a results directory into figures and one ``report.html``."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import workloads.report.figures as figures
import workloads.report.page as page
import workloads.report.runs as runs
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
        Where ``report.html`` and ``figures/*.png`` go (default ``<results_dir>``: ``results/report.html`` beside ``results.jsonl``).
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
    add("throughput", "Images per second by number of Dask workers",
        "Succeeded image-classification runs; one line per device, through the mean of the runs at each "
        "worker count (several runs: their values as faint dots); dashed: perfect linear scaling from the "
        "smallest count. Higher is better. The paper's figure 9 showed the same comparison as time taken.",
        figures.throughput(everything, figure_dir / "images-throughput.png"))
    add("phases", "NYC taxi: time per phase, by dataframe backend and device",
        "Each bar is one configuration (mean of its succeeded runs), split into the benchmark's phases in the "
        "order they ran. The paper's figure 12: pandas 85 s load, 13 s split, 35 s train; cuDF 19, 9 and 25 s.",
        figures.phases(everything, "taxi", figure_dir / "taxi-phases.png"))
    add("phases", "Image classification: time per phase",
        "Each bar is one configuration (mean of its succeeded runs), split into its phases.",
        figures.phases(everything, "images", figure_dir / "images-phases.png"))
    add("quality", "Accuracy and RMSE per run",
        "Top: share of images classified correctly (the paper: about 67 % of 20,580 photos). "
        "Bottom: root-mean-square error of the predicted taxi amounts on the held-out 25 %.",
        figures.quality(everything, figure_dir / "quality.png"))
    sampled = [run for run in everything if run.samples]
    if utilization_runs > 0:
        sampled = sampled[-utilization_runs:]
    for run in sampled:
        add("utilization", f"Utilization of run {run.label}",
            "CPU of each worker process (100 % = one core busy), GPU utilization and memory where the "
            "workers have GPUs, and each worker's memory, sampled about once a second from Dask's own "
            "monitors (the paper's figures 10, 11 and 13 showed the dashboard's view of the same).",
            figures.utilization(run, figure_dir / f"utilization-run{run.number}.png"))
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
