"""``--own-cluster`` before any cluster: the options that go together, the team's non-secret
outputs, which person the caller is, and their kubeconfig read as kubectl reads it
(workloads/cluster/own_run.py, team.py, kubeconfig.py)."""
from __future__ import annotations

import json

import pytest
import yaml

from workloads import run
from workloads.cluster import kubeconfig, own_run, team
from workloads.contract import ContractError
from workloads.core.errors import EndpointError

SPEC = {"scheduler": {"spec": {"containers": []}}, "worker": {"replicas": 0, "spec": {"containers": []}}}
OUTPUTS = {  # what `pulumi stack output --json` shows a person: secrets as "[secret]"
    "teamUsers": {"alice@vsphere.local": {"namespace": "dask-alice", "gpus": 2, "idleTimeout": 3600},
                  "bob@vsphere.local": {"namespace": "dask-bob", "gpus": 1, "idleTimeout": 600}},
    "teamClusterSpec": SPEC, "datasetMountPath": "/ml-share", "datasetLayout": {"taxi": "taxi"},
    "threadsPerWorker": 6, "daskImage": "python:3.11", "daskVersion": "2026.7.1",
    "tlsClientKey": "[secret]", "runnerKubeconfig": "[secret]", "jupyterPassword": "[secret]",
}


def refused(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        run.main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, expected", [
    (["--own-cluster"], "--own-cluster reads the stack's team outputs: give --stack NAME or --outputs FILE"),
    (["--own-cluster", "--stack", "dev", "--local"], "--own-cluster makes the cluster: not with --scheduler-address"),
    (["--own-cluster", "--outputs", "o.json", "--scheduler-address", "tcp://a:8786"], "not with --scheduler-address"),
    (["--stack", "dev", "--user", "alice@vsphere.local", "--keep-cluster"],
     "--user, --keep-cluster only go with --own-cluster"),
    (["--outputs", "o.json", "--kubeconfig", "k", "--cluster-name", "x"],
     "--kubeconfig, --cluster-name only go with --own-cluster"),
])
def test_options_that_do_not_go_together_are_refused(argv, expected, capsys):
    assert expected in refused(argv, capsys)


def test_the_team_outputs_need_no_secret_and_name_each_person():
    outputs = team.parse(OUTPUTS, "stack dev")
    assert outputs.people["alice@vsphere.local"] == team.Person("alice@vsphere.local", "dask-alice", 2, 3600)
    assert (outputs.dataset_mount, outputs.threads_per_worker, outputs.cluster_spec) == ("/ml-share", 6, SPEC)
    with pytest.raises(ContractError, match="stack dev exports no 'teamUsers': the stack has no users"):
        team.parse({k: v for k, v in OUTPUTS.items() if k != "teamUsers"}, "stack dev")
    with pytest.raises(ContractError, match="'teamClusterSpec' must be a DaskCluster spec"):
        team.parse({**OUTPUTS, "teamClusterSpec": "[secret]"}, "stack dev")


def test_the_person_is_named_or_found_by_the_context_namespace():
    people = team.parse(OUTPUTS, "o.json").people
    assert team.pick(people, "bob@vsphere.local", "dask-alice").namespace == "dask-bob"
    assert team.pick(people, None, "dask-alice").name == "alice@vsphere.local"
    with pytest.raises(ContractError, match=r"--user carol@vsphere.local is not among the stack's users "
                                            r"\(alice@vsphere.local, bob@vsphere.local\)"):
        team.pick(people, "carol@vsphere.local", "dask-alice")
    with pytest.raises(ContractError, match="--user NAME is needed: the kubeconfig's current context names"
                                            " namespace default, none of the team's"):
        team.pick(people, None, "default")


def kubeconfig_file(tmp_path, **context) -> str:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "wcp",
              "contexts": [{"name": "other", "context": {"cluster": "c2", "user": "u2"}},
                           {"name": "wcp", "context": {"cluster": "c", "user": "alice", **context}}],
              "clusters": [{"name": "c",
                            "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority": "ca.crt"}},
                           {"name": "c2", "cluster": {"server": "https://other"}}],
              "users": [{"name": "alice", "user": {"token": "t0ken"}}, {"name": "u2", "user": {"token": "other"}}]}
    (tmp_path / "ca.crt").write_text("not read before a request\n")
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_the_kubeconfig_is_its_current_context_alone_with_absolute_file_references(tmp_path):
    loaded = kubeconfig.load(kubeconfig_file(tmp_path, namespace="dask-alice"))
    assert (loaded.context, loaded.namespace) == ("wcp", "dask-alice")
    text = yaml.safe_load(loaded.text)
    assert [c["name"] for c in text["clusters"]] == ["c"] and [u["name"] for u in text["users"]] == ["alice"]
    assert text["clusters"][0]["cluster"]["certificate-authority"] == str(tmp_path / "ca.crt")
    assert "t0ken" not in repr(loaded) and "other" not in loaded.text


def test_the_kubeconfig_comes_from_kubeconfig_else_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert kubeconfig.default_path() == tmp_path / "a"
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kubeconfig.default_path() == tmp_path / ".kube" / "config"
    with pytest.raises(EndpointError, match=r"no kubeconfig at .*: log in first"):
        kubeconfig.load()


def test_the_cluster_is_sized_for_the_sweep_s_largest_count():
    args = run.build_parser({}, {}).parse_args(["--own-cluster", "--stack", "dev", "--workers", "1,4,2"])
    assert own_run.workers_asked(args, {"workers": 1}) == 4
    args = run.build_parser({}, {}).parse_args(["--own-cluster", "--stack", "dev", "--adaptive", "1,3"])
    assert own_run.workers_asked(args, {"workers": 1}) == 3
    args = run.build_parser({}, {}).parse_args(["--own-cluster", "--stack", "dev"])
    assert own_run.workers_asked(args, {"workers": 2}) == 2


def test_a_person_s_run_reads_the_outputs_without_secrets(tmp_path, monkeypatch):
    seen = []

    def stack_outputs_json(name, timeout=120, show_secrets=True):
        seen.append((name, show_secrets))
        return OUTPUTS

    from workloads.cluster import endpoint
    monkeypatch.setattr(endpoint, "stack_outputs_json", stack_outputs_json)
    args = run.build_parser({}, {}).parse_args(["--own-cluster", "--stack", "dev"])
    assert own_run.team_outputs(args).people["bob@vsphere.local"].gpus == 1
    assert seen == [("dev", False)]
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(OUTPUTS))
    args = run.build_parser({}, {}).parse_args(["--own-cluster", "--outputs", str(path)])
    assert own_run.team_outputs(args).dataset_mount == "/ml-share"


def test_a_run_over_quota_fails_before_anything_is_made(tmp_path, monkeypatch, capsys):
    """The runner's exit and message when the quota refuses; OwnCluster never reaches the API
    for anything but the quotas (no cluster, no Secret)."""
    from workloads.cluster import own_cluster

    calls = []
    monkeypatch.setattr(own_cluster.OwnCluster, "quotas", lambda self: calls.append("quotas") or [
        {"metadata": {"name": "dask-quota"}, "status": {"hard": {"requests.nvidia.com/gpu": "2"}, "used": {}}}])
    monkeypatch.setattr(own_cluster.OwnCluster, "refuse_existing", lambda self: calls.append("existing"))
    gpu_pod = {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]}
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({**OUTPUTS, "teamClusterSpec": {
        "scheduler": {"spec": {"containers": [{"args": ["dask", "scheduler"]}]}}, "worker": {"spec": gpu_pod}}}))
    code = run.main(["--own-cluster", "--outputs", str(path), "--kubeconfig", kubeconfig_file(tmp_path),
                     "--user", "alice@vsphere.local", "--workers", "4", "--no-report", "--output", str(tmp_path)])
    assert code == 2
    assert "error: quota allows 2 GPUs in dask-alice; asked 4 (4 worker(s) x 1 GPU(s) each" in capsys.readouterr().err
    assert calls == ["quotas"]


def test_a_persons_runs_are_titled_as_the_platforms(tmp_path):
    """A report of runs on a person's own cluster (endpoint ``own-cluster``) names the platform,
    as the shared cluster's runs do."""
    import re

    from tests.report.support import FIXTURES
    from workloads.report import render

    records = [json.loads(line) for line in (FIXTURES / "results.jsonl").read_text().splitlines()]
    for record in records:
        record["config"]["endpoint"] = "own-cluster"
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    page = render(tmp_path, output=tmp_path / "out").read_text(encoding="utf-8")
    assert re.findall(r"<h1>(.*?)</h1>", page) == ["Dask on vSphere with Tanzu: benchmark report"]
