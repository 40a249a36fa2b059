"""The runner's side of scaling (workloads/cluster/scaling.py) that needs no Kubernetes: waiting for an
exact worker count on a real local Dask cluster, ``--adaptive`` parsing, the worker-count
timeline from utilization samples, and which stacks get a scaler. The Kubernetes side runs
against the real operator controller in test_controller.py."""
from __future__ import annotations

import pytest
from distributed import Client, LocalCluster

from workloads.cluster import scaling
from workloads.cluster.scaling import ClusterScaler, ScalingError, parse_adaptive, wait_for_worker_count
from workloads.contract import ContractError, parse_outputs


@pytest.fixture
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            Client(c) as client:
        client.wait_for_workers(2, timeout=30)
        yield c, client


def test_waits_until_a_scale_down_has_finished(cluster):
    local, client = cluster
    local.scale(1)  # returns at once; the worker leaves a moment later
    assert len(wait_for_worker_count(client, 1, timeout=30, poll=0.05)) == 1
    local.scale(3)
    assert len(wait_for_worker_count(client, 3, timeout=30, poll=0.05)) == 3


def test_a_size_never_reached_times_out_naming_both_counts(cluster):
    _, client = cluster
    said = []
    with pytest.raises(ScalingError, match=r"has 2 worker\(s\) after 0 s, not the 5 asked for"):
        wait_for_worker_count(client, 5, timeout=0.3, poll=0.05, echo=said.append)
    assert said == ["scaling: 2 worker(s) connected, waiting for 5"]  # said once, not every poll


@pytest.mark.parametrize("text, expected", [("1,8", (1, 8)), ("0, 4", (0, 4)), ("2,2", (2, 2))])
def test_adaptive_bounds(text, expected):
    assert parse_adaptive(text) == expected


@pytest.mark.parametrize("text, words", [
    ("8", "MIN,MAX"), ("a,b", "MIN,MAX"), ("-1,4", "MIN,MAX"), ("5,4", "MIN <= MAX"), ("0,0", "MAX >= 1")])
def test_bad_adaptive_bounds_say_what_is_wrong(text, words):
    with pytest.raises(ValueError, match=words):
        parse_adaptive(text)


def test_worker_count_timeline_from_utilization_samples():
    samples = [
        {"t": 0.5, "worker": "w1", "cpu": 100.0, "gpu_utilization": None},
        {"t": 1.5, "worker": "w1", "cpu": 300.0, "gpu_utilization": None},
        {"t": 5.2, "worker": "w1", "cpu": 500.0, "gpu_utilization": 80.0},
        {"t": 6.0, "worker": "w2", "cpu": 100.0, "gpu_utilization": 40.0},
        {"t": 12.0, "worker": "w2", "cpu": None, "gpu_utilization": None},
    ]
    assert scaling.worker_count_timeline(samples, bin_s=5.0) == [
        {"t": 0.0, "workers": 1, "cpu": 200.0, "gpu_utilization": None},
        {"t": 5.0, "workers": 2, "cpu": 300.0, "gpu_utilization": 60.0},
        {"t": 10.0, "workers": 1, "cpu": None, "gpu_utilization": None},
    ]


OUTPUTS = {"schedulerAddress": "tcp://dask-scheduler.rapidsai.svc.cluster.local:8786",
           "dashboardUrl": "http://x:8787", "jupyterUrl": "", "daskNamespace": "rapidsai", "daskRelease": "dask",
           "datasetMountPath": "/ml-share", "datasetLayout": {}, "workerCount": 2, "gpusPerWorker": 1,
           "threadsPerWorker": 6, "daskImage": "i:1", "daskVersion": "2026.7.1"}


def test_only_operator_stacks_get_a_scaler():
    assert ClusterScaler.from_outputs(parse_outputs(OUTPUTS)) is None  # a stack from before the option: helm
    assert ClusterScaler.from_outputs(parse_outputs({**OUTPUTS, "daskBackend": "helm"})) is None
    operator = parse_outputs({**OUTPUTS, "daskBackend": "operator", "daskClusterName": "dask"})
    with pytest.raises(ScalingError, match="carry no runnerKubeconfig: read them with --show-secrets"):
        ClusterScaler.from_outputs(operator)
    # the admin kubeconfig an older stack exports is not the runner's: still none
    with pytest.raises(ScalingError, match="exports only the admin kubeconfig, which the runner does not use"):
        ClusterScaler.from_outputs(parse_outputs({**OUTPUTS, "daskBackend": "operator", "daskClusterName": "dask",
                                                  "kubeconfig": "apiVersion: v1\nkind: Config\n"}))
    with pytest.raises(ScalingError, match="holds no cluster"):
        ClusterScaler.from_outputs(parse_outputs({**OUTPUTS, "daskBackend": "operator", "daskClusterName": "dask",
                                                  "runnerKubeconfig": "apiVersion: v1\nkind: Config\n"}))


def test_operator_outputs_without_a_cluster_name_are_refused():

    with pytest.raises(ContractError, match="'daskBackend' is operator but 'daskClusterName'"):
        parse_outputs({**OUTPUTS, "daskBackend": "operator"})
    with pytest.raises(ContractError, match="must be helm or operator, got 'ray'"):
        parse_outputs({**OUTPUTS, "daskBackend": "ray"})


def test_helm_notice_says_what_happens_and_what_to_do():
    text = scaling.helm_restriction_notice(8)
    assert "fixed 8 worker(s)" in text and "restricted" in text and "daskBackend=operator" in text
