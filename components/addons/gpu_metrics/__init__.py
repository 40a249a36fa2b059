"""The cluster's GPU metrics: recording rules, the scrape jobs they need and the team's dashboard.

A runner records its own runs' GPU use; these files record everyone's, cluster-wide, from the GPU
operator's dcgm-exporter and kube-state-metrics: GPUs held and busy per pod, per namespace (a
person) and per DaskCluster (a run), and their GPU-hours. The files are Prometheus' and Grafana's
own formats, kept beside this module so that ``promtool`` checks exactly what the program ships
(tests/monitoring/); :class:`components.addons.gpu_metrics.objects.GpuMetrics` declares them.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
RULES_FILE = HERE / "rules.yml"  # Prometheus rule file (recording rules)
PROMETHEUS_FILE = HERE / "prometheus.yml"  # the scrape jobs and the rule file, a configuration to merge
DASHBOARD_FILE = HERE / "dashboard.json"  # Grafana dashboard
RULES_KEY = "dask-tkg-gpu.rules.yml"  # the rule file's name, as prometheus.yml's rule_files names it
PROMETHEUS_KEY = "prometheus.yml"
DASHBOARD_KEY = "dask-tkg-gpu.json"

# Every series the rules record, in their order (dask_tkg:<what>:<by>).
RULE_NAMES = (
    "dask_tkg:gpus_held:pod",
    "dask_tkg:dask_cluster:pod",
    "dask_tkg:gpus_busy:pod",
    "dask_tkg:gpus_held:namespace",
    "dask_tkg:gpus_busy:namespace",
    "dask_tkg:gpus_held:dask_cluster",
    "dask_tkg:gpus_busy:dask_cluster",
    "dask_tkg:gpu_hours_held_1h:namespace",
    "dask_tkg:gpu_hours_busy_1h:namespace",
    "dask_tkg:gpu_hours_held_1h:dask_cluster",
    "dask_tkg:gpu_hours_busy_1h:dask_cluster",
)


def rules_text() -> str:
    return RULES_FILE.read_text(encoding="utf-8")


def prometheus_text() -> str:
    return PROMETHEUS_FILE.read_text(encoding="utf-8")


def dashboard_text() -> str:
    return DASHBOARD_FILE.read_text(encoding="utf-8")
