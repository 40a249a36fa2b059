"""The cluster's GPU recording rules, judged by Prometheus' own promtool (a pinned release built by
scripts/build_promtool.sh): the rule file and the configuration that loads it are valid, and
``promtool test rules`` over synthetic dcgm-exporter and kube-state-metrics series
(gpu_rules.test.yml: a vGPU with no profiling metrics, a pod restart, a namespace with two people's
clusters) gives the GPUs held and busy, and their GPU-hours, per person and per run. A rule that
reads what a time-sliced vGPU does not export, or counts a request twice, fails it.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from components.addons import gpu_metrics
from tests.monitoring import promtool

TEST_FILE = Path(__file__).with_name("gpu_rules.test.yml")


def rule_test_file(tmp_path: Path, rules_text: str) -> Path:
    """gpu_rules.test.yml, its rule_files pointed at ``rules_text`` written beside it."""
    (tmp_path / gpu_metrics.RULES_KEY).write_text(rules_text)
    test = yaml.safe_load(TEST_FILE.read_text())
    test["rule_files"] = [gpu_metrics.RULES_KEY]
    path = tmp_path / TEST_FILE.name
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    return path


def test_promtool_checks_the_rule_file():
    result = promtool.invoke("check", "rules", gpu_metrics.RULES_FILE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(gpu_metrics.RULE_NAMES)} rules found" in result.stdout


def test_promtool_checks_the_configuration_that_loads_the_rules(tmp_path):
    shutil.copy(gpu_metrics.PROMETHEUS_FILE, tmp_path / gpu_metrics.PROMETHEUS_KEY)
    shutil.copy(gpu_metrics.RULES_FILE, tmp_path / gpu_metrics.RULES_KEY)
    result = promtool.invoke("check", "config", gpu_metrics.PROMETHEUS_KEY, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout and f"{len(gpu_metrics.RULE_NAMES)} rules found" in result.stdout


def test_the_rules_pass_promtool_test_rules(tmp_path):
    result = promtool.invoke("test", "rules", rule_test_file(tmp_path, gpu_metrics.rules_text()), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


# A wrong rule -> the expression whose expected samples it breaks.
WRONG_RULES = {
    # busy from the profiling metric (what OpenCost reads): a time-sliced vGPU exports none
    "busy-from-profiling": (("DCGM_FI_DEV_GPU_UTIL{pod!=\"\"}", "DCGM_FI_PROF_GR_ENGINE_ACTIVE{pod!=\"\"} * 100"),
                            "expr: \"dask_tkg:gpus_busy:pod\""),
    # no de-duplication of the requests: two kube-state-metrics replicas count carol's GPUs twice
    "requests-counted-per-scrape": (("max by (namespace, pod, container) (", "sum by (namespace, pod, container) ("),
                                    "expr: \"dask_tkg:gpus_held:pod\""),
    # held without the Running filter: the replacement pod holds its GPU while still Pending
    "held-while-pending": (("\n          * on (namespace, pod) group_left ()"
                            "\n          (max by (namespace, pod) (kube_pod_status_phase{phase=\"Running\"}) == 1)",
                            ""),
                           "expr: \"dask_tkg:gpus_held:dask_cluster{dask_cluster=\\\"alice-a\\\"}\""),
}


@pytest.mark.parametrize("case", sorted(WRONG_RULES))
def test_a_wrong_rule_fails_promtool_test_rules(tmp_path, case):
    (old, new), failing = WRONG_RULES[case]
    assert gpu_metrics.rules_text().count(old) == 1
    wrong = gpu_metrics.rules_text().replace(old, new)
    result = promtool.invoke("test", "rules", rule_test_file(tmp_path, wrong), cwd=tmp_path)
    assert result.returncode != 0, result.stdout
    assert "FAILED" in result.stdout + result.stderr and failing in result.stdout + result.stderr, \
        result.stdout + result.stderr
