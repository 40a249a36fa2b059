"""The GPU metrics' files agree with one another without promtool: the rule file records exactly
``RULE_NAMES``, in order and named ``dask_tkg:<what>:<by>``, and the dashboard reads only those
series, never the exporters' raw ones (promtool judges the rules themselves:
test_recording_rules.py).
"""
from __future__ import annotations

import json
import re

import yaml

from components.addons import gpu_metrics

RECORDED = re.compile(r"dask_tkg:[a-z0-9_]+:[a-z0-9_]+")


def test_the_rule_names_are_the_recorded_series_in_order():
    groups = yaml.safe_load(gpu_metrics.rules_text())["groups"]
    assert tuple(r["record"] for g in groups for r in g["rules"]) == gpu_metrics.RULE_NAMES
    assert all(RECORDED.fullmatch(name) for name in gpu_metrics.RULE_NAMES)


def test_the_dashboard_reads_only_recorded_series():
    dashboard = json.loads(gpu_metrics.dashboard_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    read = {name for e in exprs for name in RECORDED.findall(e)}
    assert read and read <= set(gpu_metrics.RULE_NAMES), read - set(gpu_metrics.RULE_NAMES)
    assert not [e for e in exprs if re.search(r"\bDCGM_|\bkube_", e)], "the dashboard reads raw series"
