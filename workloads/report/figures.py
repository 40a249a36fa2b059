"""The report's PNG figures (matplotlib's object API on the Agg canvas: no pyplot, no
display, no global state). Each function writes one file and returns its path, or None
when the runs hold nothing to draw.

A figure's caption describes only what the figure draws: the marks drawn only sometimes
(the dashed linear-scaling line, the faint dots of repeated runs, the shaded busy period,
the GPU panels) are decided by one predicate each, which both the drawing and the
``*_caption`` function beside it ask."""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import Formatter, MaxNLocator

from workloads.runs import benchmarks
from workloads.runs.benchmarks import Quality

from .runs import Comparison, Run, describe

logger = logging.getLogger(__name__)

DPI = 100
WIDTH = 9.0  # inches: 900 px
DEVICE_COLOURS = {"cuda": "#2e8b57", "cpu": "#3a6ea5"}  # the paper: GPU green, CPU blue
GIB = 1024 ** 3


def _figure(height: float, rows: int = 1, sharex: bool = False) -> tuple[Figure, Any]:
    figure = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, 1, sharex=sharex, squeeze=False)[:, 0]
    return figure, axes


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=DPI)
    return path


def _colour(device: str, fallback: int) -> str:
    return DEVICE_COLOURS.get(device, f"C{fallback % 10}")


def _fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


class TickFormatter(Formatter):
    """Tick labels with as many decimals as the ticks need and thousands separators: a
    locator's half steps below 5 images/s read ``0.5, 1.0, 1.5``, never ``0, 1, 2, 2`` (a
    whole-number format rounds them onto each other)."""

    MAX_DECIMALS = 6

    def __init__(self) -> None:
        super().__init__()
        self.ticks: list[float] = []

    def set_locs(self, locs: Any) -> None:
        self.ticks = [float(v) for v in locs]

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:,.{self.decimals()}f}"

    def decimals(self) -> int:
        """The fewest decimals that write every tick of the axis exactly."""
        locs = self.ticks or [0.0]
        scale = max(abs(v) for v in locs) or 1.0
        for decimals in range(self.MAX_DECIMALS + 1):
            if all(abs(round(v, decimals) - v) <= 1e-9 * scale for v in locs):
                return decimals
        return self.MAX_DECIMALS


# ---------------------------------------------------------------------- figure 9
Points = dict[tuple[str, str | None], dict[int, list[float]]]  # (device, profile) -> worker count -> values


def scaling_points(runs: list[Run], benchmark: str) -> Points:
    """The values the throughput figure draws: per line (device, profile), per worker count."""
    metric = benchmarks.report(benchmark).scaling
    points: Points = {}
    for run in runs:
        value = run.metrics.get(metric) if metric else None
        if run.benchmark == benchmark and run.ok and run.workers and isinstance(value, (int, float)):
            points.setdefault((run.device, run.profile), {}).setdefault(run.workers, []).append(float(value))
    return points


def _draws_linear(by_count: dict[int, list[float]]) -> bool:
    """A line gets its dashed linear scaling when it has more than one worker count to scale over."""
    return len(by_count) > 1


def _draws_dots(values: list[float]) -> bool:
    """A worker count gets its runs as faint dots when it has several (one is its mean)."""
    return len(values) > 1


def throughput_caption(runs: list[Run], benchmark: str) -> str:
    """The benchmark's own caption, and the marks that this figure draws."""
    lines = list(scaling_points(runs, benchmark).values())
    parts = [benchmarks.report(benchmark).scaling_caption]
    if any(_draws_dots(values) for by_count in lines for values in by_count.values()):
        parts.append("Faint dots: each run's value where a worker count has several runs.")
    if any(_draws_linear(by_count) for by_count in lines):
        parts.append("Dashed: perfect linear scaling from the smallest worker count.")
    elif lines:
        parts.append("Runs at one worker count only: sweep several (--workers 1,2,4) to see how it scales.")
    return " ".join(part for part in parts if part)


def throughput(runs: list[Run], benchmark: str, path: Path) -> Path | None:
    """The benchmark's ``scaling`` metric against worker count, one line per device (and profile)."""
    spec = benchmarks.report(benchmark)
    metric = spec.scaling
    points = scaling_points(runs, benchmark)
    if not points:
        return None
    profiles = {profile for _, profile in points}
    figure, (axes,) = _figure(4.8)
    counts: set[int] = set()
    for i, ((device, profile), by_count) in enumerate(sorted(points.items(), key=lambda kv: str(kv[0]))):
        name = device + (f" ({profile} profile)" if len(profiles) > 1 else "")
        colour = _colour(device, i) if len(profiles) == 1 else f"C{i % 10}"
        counts.update(by_count)
        _scaling_line(axes, by_count, name, colour)
    axes.set_xticks(sorted(counts))
    if len(counts) == 1:
        only = next(iter(counts))
        axes.set_xlim(only - 1, only + 1)
    axes.set_ylim(0, axes.get_ylim()[1] * 1.08)  # room for the values written above the points
    axes.yaxis.set_major_formatter(TickFormatter())
    axes.set_xlabel("Dask workers")
    axes.set_ylabel(f"Throughput ({spec.throughput.get(str(metric), metric)})")
    axes.set_title(f"{spec.title}: throughput by number of workers and device")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="upper left")
    return _save(figure, path)


def _scaling_line(axes: Any, by_count: dict[int, list[float]], name: str, colour: str) -> None:
    """One device's line through the means, its runs as faint dots, and linear scaling."""
    xs = sorted(by_count)
    means = [sum(by_count[x]) / len(by_count[x]) for x in xs]
    axes.plot(xs, means, marker="o", color=colour, linewidth=2, label=f"{name}: mean of runs")
    for x in xs:
        if _draws_dots(by_count[x]):
            axes.scatter([x] * len(by_count[x]), by_count[x], color=colour, alpha=0.35, s=18)
    for x, mean in zip(xs, means, strict=True):
        axes.annotate(_fmt(mean), (x, mean), textcoords="offset points", xytext=(0, 7),
                      ha="center", fontsize=8, color=colour)
    if _draws_linear(by_count):
        ideal = [means[0] * x / xs[0] for x in xs]
        axes.plot(xs, ideal, linestyle="--", color=colour, alpha=0.5, linewidth=1,
                  label=f"{name}: linear scaling from {xs[0]} worker{'s' if xs[0] > 1 else ''}")


# ---------------------------------------------------------------------- figure 12
def phases(runs: list[Run], benchmark: str, path: Path) -> Path | None:
    """Time per phase, stacked, one bar per configuration (mean over succeeded runs)."""
    groups: dict[tuple[Any, ...], list[Run]] = {}
    for run in runs:
        if run.benchmark == benchmark and run.ok and run.phases:
            groups.setdefault(run.key, []).append(run)
    if not groups:
        return None
    order: list[str] = []
    for members in groups.values():
        for run in members:
            order.extend(p for p in run.phases if p not in order)
    spec = benchmarks.report(benchmark)
    variants = {name: i for i, name in enumerate(spec.variant_order)}
    keys = sorted(groups, key=lambda k: (variants.get(k[3], len(variants)), str(k[3]), str(k[1]), k[2] or 0,
                                         str(k[4])))
    figure, (axes,) = _figure(2.2 + 0.55 * len(keys))
    labels = []
    for row, key in enumerate(keys):
        members = groups[key]
        left = 0.0
        for i, phase in enumerate(order):
            values = [run.phases.get(phase, 0.0) for run in members]
            width = sum(values) / len(values)
            axes.barh(row, width, left=left, color=f"C{i % 10}", edgecolor="white",
                      label=phase if row == 0 else None)
            if width > 0:
                left += width
        axes.annotate(f"{_fmt(left)} s", (left, row), xytext=(4, 0), textcoords="offset points",
                      va="center", fontsize=8)
        label = describe(key).split(" · ", 1)[1]
        labels.append(label + (f" (mean of {len(members)})" if len(members) > 1 else ""))
    axes.set_yticks(range(len(keys)), labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, axes.get_xlim()[1] * 1.08)
    axes.set_xlabel("Time (s)")
    axes.set_title(f"{spec.title}: time per phase by configuration (lower is better)")
    axes.grid(True, axis="x", alpha=0.3)
    figure.legend(*axes.get_legend_handles_labels(), loc="outside lower center", fontsize=8,
                  ncols=min(len(order), 8), title="phase (in the order they ran)", title_fontsize=8)
    return _save(figure, path)


# ---------------------------------------------------------------------- quality
def quality_panels(runs: list[Run]) -> list[tuple[Quality, list[Run]]]:
    """Per benchmark that declares a quality metric (in the order they first ran), its
    succeeded runs that recorded it (a value, or ``None`` with the benchmark's reason)."""
    panels = []
    for benchmark in dict.fromkeys(r.benchmark for r in runs):
        spec = benchmarks.report(benchmark).quality
        if spec is None:
            continue
        members = [r for r in runs if r.benchmark == benchmark and r.ok and spec.metric in r.metrics
                   and (_number(r.metrics[spec.metric]) or r.metrics[spec.metric] is None)]
        if members:
            panels.append((spec, members))
    return panels


def quality(runs: list[Run], path: Path) -> Path | None:
    """Each benchmark's quality metric per run, one panel per benchmark."""
    panels = quality_panels(runs)
    if not panels:
        return None
    figure, axes_list = _figure(2.9 * len(panels) + 0.4, rows=len(panels))
    devices = sorted({r.device for _, members in panels for r in members})
    palette = {d: _colour(d, i) for i, d in enumerate(devices)}
    for axes, (spec, members) in zip(axes_list, panels, strict=True):
        xs = range(len(members))
        ticks = [f"#{r.number}\n{r.device} w{r.workers}" + (f"\n{r.variant}" if r.variant else "")
                 for r in members]
        _quality_panel(axes, spec, members, [palette[r.device] for r in members])
        axes.set_xticks(list(xs), ticks, fontsize=7)
        axes.set_xlim(-0.75, max(len(members), 4) - 0.25)
        axes.grid(True, axis="y", alpha=0.3)
    handles = [Patch(color=palette[d], label=d) for d in devices]
    axes_list[0].legend(handles=handles, title="device", fontsize=8, title_fontsize=8, loc="upper right")
    axes_list[-1].set_xlabel("Run (number in results.jsonl, device, workers)")
    return _save(figure, path)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _quality_panel(axes: Any, spec: Quality, members: list[Run], colours: list[str]) -> None:
    """The metric's bars; a run that measured none shows ``n/a`` and the panel says why, in
    the benchmark's own words (its ``<metric>_note``: random weights, say)."""
    values = [r.metrics.get(spec.metric) for r in members]
    measured = [_number(v) for v in values]
    scaled = [spec.scale * float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0
              for v in values]
    xs = range(len(members))
    axes.bar(xs, scaled, color=colours)
    for x, v, ok in zip(xs, scaled, measured, strict=True):
        axes.annotate(f"{_fmt_quality(v, spec)}{spec.unit}" if ok else "n/a", (x, v), xytext=(0, 3),
                      textcoords="offset points", ha="center", fontsize=8)
    reasons = sorted({str(r.metrics.get(f"{spec.metric}_note") or f"the run recorded no {spec.metric}")
                      for r, ok in zip(members, measured, strict=True) if not ok})
    if not any(measured):
        axes.text(0.5, 0.55, f"No {spec.metric} to show:\n" + "\n".join(reasons), transform=axes.transAxes,
                  ha="center", va="center", fontsize=10, wrap=True,
                  bbox={"boxstyle": "round", "facecolor": "#fff8e5", "edgecolor": "#f0dca0"})
    elif reasons:
        axes.text(0.01, 0.97, "n/a: " + "; ".join(reasons), transform=axes.transAxes, ha="left", va="top",
                  fontsize=8)
    top = max(scaled, default=0.0)
    axes.set_ylim(0, 105 if spec.scale == 100 else (top * 1.15 or 1))
    axes.set_ylabel(spec.label)
    axes.set_title(spec.title, fontsize=10)


def _fmt_quality(value: float, spec: Quality) -> str:
    return f"{value:.1f}" if spec.scale == 100 else f"{value:.3g}"


# ---------------------------------------------------------------------- figures 10, 11, 13
def busy_span(run: Run) -> tuple[float, float] | None:
    """The busy period the utilization figure shades; None when there is none to see (no
    sample had a busy worker, or only one did: a span of no width)."""
    period = (run.utilization() or {}).get("busy_period")
    if isinstance(period, (list, tuple)) and len(period) == 2 and all(map(_number, period)) and period[1] > period[0]:
        return float(period[0]), float(period[1])
    return None


def _has_gpu(samples: list[dict[str, Any]]) -> bool:
    """The utilization figure draws the GPU panels when a sample measured a GPU."""
    return any(_number(s.get("gpu_utilization")) for s in samples)


def _gpu_memory_size(samples: list[dict[str, Any]]) -> float | None:
    """The GPU memory size the figure draws as a dotted line (bytes), when the samples give it."""
    totals = [float(s["gpu_memory_total"]) for s in samples if _number(s.get("gpu_memory_total"))]
    return max(totals) if totals else None


def utilization_caption(run: Run) -> str:
    """What the run's utilization figure draws, in words."""
    samples = run.samples or []
    gpu = _has_gpu(samples)
    parts = ["CPU of each worker process (100 % = one core busy), " + ("GPU utilization and memory, " if gpu else "")
             + "and each worker's memory, sampled about once a second from Dask's own monitors (the paper's figures"
             " 10, 11 and 13 showed the dashboard's view of the same)."]
    if busy_span(run):
        parts.append("Shaded: the busy period, from the first to the last sample in which a worker was busy;"
                     " balance is measured over it.")
    if gpu and _gpu_memory_size(samples) is not None:
        parts.append("Dotted: the GPU's memory size.")
    return " ".join(parts)


def utilization(run: Run, path: Path) -> Path | None:
    """CPU, GPU and memory per worker over the run."""
    samples = run.samples or []
    if not samples:
        return None
    workers = sorted({str(s["worker"]) for s in samples}, key=_natural)
    panels = [("cpu", "CPU (% of one core)", 1.0)]
    if _has_gpu(samples):
        panels += [("gpu_utilization", "GPU utilization (%)", 1.0), ("gpu_memory", "GPU memory (GiB)", 1 / GIB)]
    panels.append(("memory", "Worker memory (GiB)", 1 / GIB))
    figure, axes_list = _figure(1.0 + 2.0 * len(panels), rows=len(panels), sharex=True)
    summary = run.utilization() or {}
    period = busy_span(run)
    for axes, (field, label, scale) in zip(axes_list, panels, strict=True):
        for i, worker in enumerate(workers):
            rows = [s for s in samples if str(s["worker"]) == worker and isinstance(s.get(field), (int, float))]
            if rows:
                axes.plot([s["t"] for s in rows], [s[field] * scale for s in rows], linewidth=1.2,
                          color=f"C{i % 10}", label=worker)
        if period:
            axes.axvspan(period[0], period[1], color="grey", alpha=0.08, linewidth=0)
        size = _gpu_memory_size(samples) if field == "gpu_memory" else None
        if size is not None:
            axes.axhline(size / GIB, color="black", linestyle=":", linewidth=1)
            axes.annotate("GPU memory size", (0, size / GIB), xycoords=("axes fraction", "data"),
                          xytext=(3, -10), textcoords="offset points", fontsize=7)
        if field == "gpu_utilization":
            axes.set_ylim(0, 105)
        else:
            axes.set_ylim(bottom=0)
        axes.set_ylabel(label, fontsize=9)
        axes.grid(True, alpha=0.3)
        axes.yaxis.set_major_locator(MaxNLocator(5))
    axes_list[-1].set_xlabel("Time since the run started (s)")
    axes_list[0].set_title(f"Run {run.label}: utilization per worker" + _utilization_subtitle(summary, period),
                           fontsize=10)
    handles, labels = axes_list[0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="outside right upper", fontsize=8, title="worker", title_fontsize=8,
                      ncols=1 if len(labels) <= 16 else 2)
    return _save(figure, path)


def _utilization_subtitle(summary: dict[str, Any], period: tuple[float, float] | None) -> str:
    """The figure's second title line: the balance, and the shading when the figure shades."""
    notes = ["1.0 = even"] + (["shaded: busy period"] if period else [])
    balance = summary.get("balance")
    if _number(balance):
        return f"\nbalance {balance:.2f} on {summary.get('basis')} ({'; '.join(notes)})"
    return "\nshaded: busy period" if period else ""


def _natural(name: str) -> tuple[int, Any]:
    return (0, int(name)) if name.isdigit() else (1, name)


# ---------------------------------------------------------------------- comparison
def comparison(result: Comparison, path: Path) -> Path | None:
    """Per benchmark, a grid of configurations x measures holding ``this / other``,
    coloured by whether this set did better (green) or worse (red)."""
    ratios = [r for r in result.ratios if math.isfinite(r.ratio) and r.ratio > 0]
    if not ratios:
        return None
    benchmarks = sorted({r.key[0] for r in ratios})
    grids = []
    for benchmark in benchmarks:
        mine = [r for r in ratios if r.key[0] == benchmark]
        rows = list(dict.fromkeys(r.key for r in mine))
        columns = list(dict.fromkeys(r.measure for r in mine))
        grids.append((benchmark, rows, columns, {(r.key, r.measure): r for r in mine}))
    height = sum(1.3 + 0.45 * len(rows) for _, rows, _, _ in grids) + 0.6
    figure = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes_list = figure.subplots(len(grids), 1, squeeze=False,
                                height_ratios=[1.3 + 0.45 * len(rows) for _, rows, _, _ in grids])[:, 0]
    scores = [math.log10(r.ratio) * (1 if r.higher_is_better else -1) for r in ratios]
    limit = max(*(abs(v) for v in scores), math.log10(1.25))
    cmap = matplotlib.colormaps["RdYlGn"]
    for axes, (benchmark, rows, columns, cells) in zip(axes_list, grids, strict=True):
        grid = [[math.nan] * len(columns) for _ in rows]
        for i, key in enumerate(rows):
            for j, measure in enumerate(columns):
                r = cells.get((key, measure))
                if r is None:
                    continue
                grid[i][j] = math.log10(r.ratio) * (1 if r.higher_is_better else -1)
                axes.text(j, i, f"×{r.ratio:.2f}", ha="center", va="center", fontsize=8)
        axes.imshow(grid, cmap=cmap, vmin=-limit, vmax=limit, aspect="auto")
        axes.set_yticks(range(len(rows)), [describe(k).split(" · ", 1)[1] for k in rows], fontsize=8)
        axes.set_xticks(range(len(columns)), [_measure_label(cells, m) for m in columns], fontsize=7,
                        rotation=30, ha="right", rotation_mode="anchor")
        axes.set_title(f"{benchmark}: ratio this / other", fontsize=10, loc="left")
        axes.tick_params(length=0)
    figure.suptitle("This result set against the other, per matched configuration\n"
                    "green: this set better (higher throughput, shorter time); red: worse; ×1 = equal",
                    fontsize=10)
    return _save(figure, path)


def _measure_label(cells: dict[Any, Any], measure: str) -> str:
    example = next(r for (_, m), r in cells.items() if m == measure)
    name = measure.replace("phase ", "").replace("_per_second", "/s").replace("_", " ")
    unit = "" if name.endswith("/s") else f"{example.unit}, "
    return f"{name} ({unit}{'higher' if example.higher_is_better else 'lower'} better)"


# ---------------------------------------------------------------------- GPU held and busy
HELD_PARTS = (("waiting", "waiting: scheduled, its worker not yet joined", "#e3a33b"),
              ("working", "working: joined, a benchmark running", "#2e8b57"),
              ("idle", "idle: joined, nothing running", "#b7bec8"))
BUSY_COLOUR = "#23507a"
HELD_RUNS = 40  # the figure draws the latest this-many runs that held GPUs


def gpu_usage(run: Run) -> dict[str, Any]:
    """The run's ``gpu_usage`` (workloads/observe/gpu_usage.py); empty for a record without one."""
    found = run.record.get("gpu_usage")
    return found if isinstance(found, dict) else {}


def held_seconds(run: Run) -> float | None:
    """GPU-seconds the run's cluster held; None when not recorded or not measured."""
    value: Any = gpu_usage(run).get("held_gpu_seconds")
    return float(value) if _number(value) else None


def held_runs(runs: list[Run]) -> list[Run]:
    """The runs the held-and-busy figure draws: those that held a GPU (the latest ``HELD_RUNS``)."""
    return [run for run in runs if (held_seconds(run) or 0.0) > 0][-HELD_RUNS:]


def _busy(run: Run) -> float | None:
    value: Any = gpu_usage(run).get("busy_gpu_seconds")
    return float(value) if _number(value) else None


GPU_UNITS = ((10 * 3600.0, 3600.0, "GPU-hours", "GPU-h"), (600.0, 60.0, "GPU-minutes", "GPU-min"),
             (0.0, 1.0, "GPU-seconds", "GPU-s"))


def _gpu_unit(longest: float) -> tuple[float, str, str]:
    """Seconds per unit, its name and its short name, for bars up to ``longest`` GPU-seconds."""
    return next((scale, name, short) for least, scale, name, short in GPU_UNITS if longest >= least)


def held_caption(runs: list[Run]) -> str:
    """What the held-and-busy figure draws, in words."""
    drawn = held_runs(runs)
    if not drawn:
        return ""
    _, unit, _ = _gpu_unit(max(held_seconds(r) or 0.0 for r in drawn))
    parts = [f"Per run, the upper bar: the {unit} its Dask cluster held over the run's window (from the end of the"
             " previous record of the same invocation to its own), stacked as waiting, working and idle."]
    if any(_busy(r) is not None for r in drawn):
        parts.append(f"The lower bar: busy, the {unit} at 100 % its workers' GPU utilization adds up to (NVML),"
                     " with its share of held.")
    if any(_busy(r) is None for r in drawn):
        parts.append("\u201cbusy not measured\u201d: the run's workers reported no GPU utilization.")
    if len(drawn) < sum(1 for r in runs if (held_seconds(r) or 0.0) > 0):
        parts.append(f"The latest {len(drawn)} runs that held a GPU.")
    return " ".join(parts)


def held_busy(runs: list[Run], path: Path) -> Path | None:
    """Per run that held a GPU: held (waiting, working, idle stacked) above busy."""
    drawn = held_runs(runs)
    if not drawn:
        return None
    scale, unit, short = _gpu_unit(max(held_seconds(r) or 0.0 for r in drawn))
    figure, (axes,) = _figure(1.6 + 0.62 * len(drawn))
    longest = max(held_seconds(r) or 0.0 for r in drawn) / scale
    for row, run in enumerate(drawn):
        usage = gpu_usage(run)
        left = 0.0
        for key, label, colour in HELD_PARTS:
            value: Any = usage.get(f"{key}_gpu_seconds")
            width = float(value) / scale if _number(value) else 0.0
            axes.barh(row - 0.19, width, left=left, height=0.36, color=colour, edgecolor="white",
                      label=label if row == 0 else None)
            left += width
        held = (held_seconds(run) or 0.0) / scale
        axes.annotate(f"{_fmt(held)} {short} held, {usage.get('gpus') or 0} GPU(s) at most", (held, row - 0.19),
                      xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
        busy = _busy(run)
        if busy is None:
            axes.annotate("busy not measured", (0, row + 0.19), xytext=(2, 0), textcoords="offset points",
                          va="center", fontsize=8, color="#718096", style="italic")
            continue
        axes.barh(row + 0.19, busy / scale, height=0.36, color=BUSY_COLOUR, label="busy (NVML)")
        share = f" ({100 * busy / (held * scale):.0f} % of held)" if held else ""
        axes.annotate(f"{_fmt(busy / scale)} {short} busy{share}", (busy / scale, row + 0.19), xytext=(4, 0),
                      textcoords="offset points", va="center", fontsize=8)
    axes.set_yticks(range(len(drawn)), [run.label + ("" if run.ok else f"\n({run.status})") for run in drawn],
                    fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, longest * 1.5 or 1)
    axes.set_xlabel(unit)
    axes.set_title("GPU held and busy per run: what the cluster held against what its workers used", fontsize=10)
    axes.grid(True, axis="x", alpha=0.3)
    handles, labels = axes.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    figure.legend(list(unique.values()), list(unique), loc="outside lower center", fontsize=8, ncols=4)
    return _save(figure, path)
