"""``report.html``: one self-contained page (figures as data URIs, inline CSS, no script,
nothing fetched) with the figures, every run in a table, failures with their errors, and
the comparison when there is one."""
from __future__ import annotations

import base64
import html
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .runs import KEY_METRICS, Comparison, ResultSet, Run, describe


@dataclass(frozen=True)
class Figure:
    section: str  # which section it belongs to
    title: str
    caption: str
    path: Path


SECTIONS = (
    ("throughput", "Image classification throughput"),
    ("phases", "Where the time goes"),
    ("quality", "Model quality"),
    ("utilization", "Utilization per worker"),
    ("compare", "Comparison"),
)

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
main{max-width:1480px;margin:0 auto;padding:1rem 1.2rem}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:2px solid #dde2ea;
padding-bottom:.3rem}h3{font-size:1rem}
p.lead{color:#4a5568;margin-top:0}nav a{margin-right:1rem}
figure{background:#fff;border:1px solid #dde2ea;border-radius:6px;margin:1rem 0;padding:.8rem}
figure img{max-width:100%;height:auto;display:block;margin:0 auto}figcaption{color:#4a5568;font-size:.9rem;
margin-top:.5rem}
table{border-collapse:collapse;width:100%;background:#fff;font-size:.82rem}
th,td{border:1px solid #dde2ea;padding:.25rem .35rem;text-align:left;vertical-align:top}
th{background:#eef1f6;position:sticky;top:0}tbody tr:nth-child(even){background:#fafbfc}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.status{display:inline-block;padding:0 .45rem;border-radius:9px;font-weight:600;font-size:.75rem}
.succeeded{background:#d8f0e0;color:#1e6b3a}.failed{background:#f8d7d4;color:#9b2c20}
.interrupted{background:#fdebc8;color:#8a5a00}
tr.row-failed td,tr.row-interrupted td{background:#fff7f6}
.scroll{overflow-x:auto}.nowrap{white-space:nowrap}
.better{color:#1e6b3a;font-weight:600}.worse{color:#9b2c20;font-weight:600}
ul.kv{list-style:none;margin:0;padding:0}ul.kv li{white-space:nowrap}
.unfinished{color:#9b2c20;font-style:italic}
pre{white-space:pre-wrap;background:#fff;border:1px solid #f1c6c0;border-radius:4px;padding:.5rem;font-size:.8rem}
.notes{background:#fff8e5;border:1px solid #f0dca0;border-radius:6px;padding:.5rem 1rem}
.muted{color:#718096}
"""


def build(results: ResultSet, figures: list[Figure], output: Path,
          comparison: Comparison | None = None, other: ResultSet | None = None) -> str:
    runs = results.runs
    counts = {s: sum(r.status == s for r in runs) for s in ("succeeded", "failed", "interrupted")}
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Benchmark report: {_e(str(results.directory))}</title>", f"<style>{CSS}</style></head>",
        "<body><main>", "<h1>Dask on vSphere with Tanzu: benchmark report</h1>",
        f'<p class="lead">{len(runs)} run{"s" if len(runs) != 1 else ""} from '
        f"<code>{_e(str(results.directory / 'results.jsonl'))}</code>: "
        + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        + f". Generated {_e(time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()))}.</p>",
    ]
    notes = results.notes + (other.notes if other else [])
    if notes:
        parts.append('<div class="notes"><strong>Notes</strong><ul>'
                     + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></div>")
    present = [(key, title) for key, title in SECTIONS if any(f.section == key for f in figures)
               or (key == "compare" and comparison is not None)]
    links = present + [("runs", "All runs")] + ([("failures", "Failures")] if counts["failed"]
                                                 + counts["interrupted"] else [])
    parts.append("<nav>" + "".join(f'<a href="#{k}">{_e(t)}</a>' for k, t in links) + "</nav>")
    for key, title in present:
        parts.append(f'<section id="{key}"><h2>{_e(title)}</h2>')
        if key == "compare" and comparison is not None and other is not None:
            parts.append(_comparison(comparison, other))
        parts.extend(_figure(f) for f in figures if f.section == key)
        if key == "utilization":
            parts.append(_utilization_table(runs))
        parts.append("</section>")
    parts.append('<section id="runs"><h2>All runs</h2>' + _runs_table(runs, results.directory, output)
                 + "</section>")
    failures = [r for r in runs if not r.ok]
    if failures:
        parts.append('<section id="failures"><h2>Failures</h2>')
        for run in failures:
            parts.append(f"<h3>Run {_e(run.label)}: <span class=\"status {_e(run.status)}\">{_e(run.status)}"
                         f"</span> <span class=\"muted\">{_e(run.started_at)}</span></h3>"
                         f"<pre>{_e(run.error or 'no error message recorded')}</pre>")
            if run.unfinished:
                parts.append("<p>Unfinished phases: " + ", ".join(
                    f"{_e(p)} after {_num(s)} s" for p, s in run.unfinished.items()) + "</p>")
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _figure(figure: Figure) -> str:
    data = base64.b64encode(figure.path.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_e(figure.title)}">'
            f"<figcaption><strong>{_e(figure.title)}.</strong> {_e(figure.caption)}</figcaption></figure>")


def _runs_table(runs: list[Run], results_dir: Path, output: Path) -> str:
    head = ("#", "benchmark", "status", "started (UTC)", "profile", "device / dataframe", "workers",
            "key metrics / error", "phases (s)", "total (s)", "utilization", "files")
    rows = []
    for run in runs:
        if run.ok:
            keys = KEY_METRICS.get(run.benchmark) or [k for k, v in run.metrics.items() if _scalar(v)][:4]
            middle = _kv((k, _num(run.metrics.get(k))) for k in keys if k in run.metrics)
        else:
            middle = f"<pre>{_e(run.error or run.status)}</pre>"
        phase_items = [(p, _num(s)) for p, s in run.phases.items()]
        phases = _kv(phase_items) + (_kv(((f"{p} (unfinished)", _num(s)) for p, s in run.unfinished.items()),
                                         css="unfinished") if run.unfinished else "")
        rows.append(
            f'<tr class="row-{_e(run.status)}"><td class="num">{run.number}</td><td>{_e(run.benchmark)}</td>'
            f'<td><span class="status {_e(run.status)}">{_e(run.status)}</span></td>'
            f"<td class=\"nowrap\">{'<br>'.join(_e(part) for part in run.started_at.rstrip('Z').split('T'))}</td>"
            f"<td>{_e(run.profile or '')}</td>"
            f"<td>{_e(run.device)}{'<br>' + _e(run.dataframe) if run.dataframe else ''}</td>"
            f'<td class="num">{_e(str(run.workers if run.workers is not None else ""))}</td>'
            f"<td>{middle}</td><td>{phases}</td><td class=\"num\">{_num(run.seconds)}</td>"
            f"<td>{_utilization_cell(run)}</td><td>{_files(run, results_dir, output)}</td></tr>")
    return ('<div class="scroll"><table><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")


def _utilization_cell(run: Run) -> str:
    summary = run.utilization()
    if not summary:
        return '<span class="muted">not sampled</span>'
    workers = summary.get("workers") or {}
    cpu = [w["cpu_mean"] for w in workers.values() if isinstance(w.get("cpu_mean"), (int, float))]
    gpu = [w["gpu_utilization_mean"] for w in workers.values()
           if isinstance(w.get("gpu_utilization_mean"), (int, float))]
    basis = f" ({summary['basis']})" if summary.get("basis") else ""
    items = [("balance", _num(summary.get("balance")) + basis)]
    if cpu:
        items.append(("mean CPU", f"{_num(sum(cpu) / len(cpu))} %"))
    if gpu:
        items.append(("mean GPU", f"{_num(sum(gpu) / len(gpu))} %"))
    return _kv(items)


def _utilization_table(runs: list[Run]) -> str:
    rows = []
    for run in runs:
        summary = run.utilization()
        if not summary:
            continue
        for name, w in (summary.get("workers") or {}).items():
            rows.append(
                f"<tr><td>{_e(run.label)}</td><td>{_e(name)}</td><td class=\"num\">{w.get('samples', '')}</td>"
                + "".join(f'<td class="num">{v}</td>' for v in (
                    _num(w.get("cpu_mean")), _num(w.get("cpu_peak")), _gib(w.get("memory_peak")),
                    _num(w.get("gpu_utilization_mean")), _num(w.get("gpu_utilization_peak")),
                    _gib(w.get("gpu_memory_peak")), _num(w.get("busy_mean"))))
                + "</tr>")
    if not rows:
        return ""
    head = ("run", "worker", "samples", "CPU mean (%)", "CPU peak (%)", "memory peak (GiB)", "GPU mean (%)",
            "GPU peak (%)", "GPU memory peak (GiB)", "busy-period mean (%)")
    return ("<h3>Per worker</h3><p class=\"muted\">CPU is the worker process's, in percent of one core. "
            "Balance = the lowest per-worker mean over the busy period divided by the highest "
            "(GPU utilization when a GPU was busy, else CPU): 1.0 means the work was spread evenly.</p>"
            "<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _comparison(comparison: Comparison, other: ResultSet) -> str:
    parts = [f"<p>This set against <code>{_e(str(other.directory / 'results.jsonl'))}</code>, matched by "
             "benchmark, device, dataframe, worker count and profile; several succeeded runs of one "
             "configuration are averaged. <strong>Ratio = this / other.</strong> For throughput higher is "
             "better (a ratio above 1 means this set is faster); for times lower is better (a ratio below 1 "
             "means this set is faster).</p>"]
    if comparison.ratios:
        rows = []
        for r in comparison.ratios:
            verdict = "same" if r.better is None else ("this set better" if r.better else "this set worse")
            css = "" if r.better is None else ("better" if r.better else "worse")
            rows.append(f"<tr><td>{_e(describe(r.key))}</td><td>{_e(r.measure)}</td><td>{_e(r.unit)}</td>"
                        f"<td>{'higher' if r.higher_is_better else 'lower'}</td>"
                        f'<td class="num">{_num(r.this)} <span class="muted">(n={r.n_this})</span></td>'
                        f'<td class="num">{_num(r.other)} <span class="muted">(n={r.n_other})</span></td>'
                        f'<td class="num {css}">{_ratio(r.ratio)}</td><td class="{css}">{verdict}</td></tr>')
        head = ("configuration", "measure", "unit", "better when", "this", "other", "ratio", "")
        parts.append("<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>"
                     + "".join(rows) + "</tbody></table>")
    else:
        parts.append("<p><strong>No configuration ran successfully in both sets.</strong></p>")
    for title, keys in (("Only in this set", comparison.only_here),
                        ("Only in the other set", comparison.only_there)):
        if keys:
            parts.append(f"<p>{title}: " + "; ".join(_e(describe(k)) for k in keys) + ".</p>")
    return "".join(parts)


def _files(run: Run, results_dir: Path, output: Path) -> str:
    links = []
    for key, title in (("performance_report", "performance report"), ("utilization", "utilization samples")):
        relative = run.artifacts.get(key)
        if not relative:
            continue
        target = results_dir / relative
        if target.exists():
            href = quote(Path(os.path.relpath(target, output)).as_posix())
            links.append(f'<a href="{href}">{title}</a>')
        else:
            links.append(f'<span class="muted">{title} (missing)</span>')
    return "<br>".join(links)


def _kv(items: Any, css: str = "") -> str:
    body = "".join(f"<li><span class=\"muted\">{_e(k)}</span> {_e(v)}</li>" for k, v in items)
    return f'<ul class="kv {css}">{body}</ul>' if body else ""


def _num(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def _ratio(value: float) -> str:
    return "∞" if not math.isfinite(value) else f"{value:.3f}"


def _gib(value: Any) -> str:
    return f"{value / 1024 ** 3:.2f}" if isinstance(value, (int, float)) else "n/a"


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)
