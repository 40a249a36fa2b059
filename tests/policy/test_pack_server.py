"""The pack's entry point, run as the Pulumi CLI runs a Python policy pack
(``python -m pulumi.policy <engine> .`` in the pack's directory, the stack's config in
``PULUMI_CONFIG``), and driven over the analyzer's gRPC protocol with requests built from
the program's graph: what ``pulumi preview --policy-pack policy`` exchanges with it."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from policy.rules import PACK_NAME, POLICIES
from tests.kube.processes import terminate
from tests.policy.support import wire
from tests.program.graph import Graph, Resource

POLICY_DIR = Path(__file__).resolve().parents[2] / "policy"


@pytest.fixture(scope="module")
def analyzer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """The pack's server, started with a stack config that opts in to public LoadBalancers.
    Unbuffered: the pack writes its port without a flush (pulumi_policy/policy.py,
    ``sys.stdout.buffer.write``), so through a pipe it arrives only if Python does not buffer;
    the test says so itself rather than relying on the machine's environment."""
    env = {**os.environ, "PULUMI_CONFIG": json.dumps({"dask-tkg:allowPublicLoadBalancer": "true"}),
           "PULUMI_PROJECT": "dask-tkg", "PULUMI_STACK": "dev", "PULUMI_DRY_RUN": "true", "PYTHONUNBUFFERED": "1"}
    log = tmp_path_factory.mktemp("pack") / "stderr.log"
    with open(log, "w") as stderr, subprocess.Popen(
            [sys.executable, "-m", "pulumi.policy", "127.0.0.1:1", "."], cwd=POLICY_DIR, env=env,
            stdout=subprocess.PIPE, stderr=stderr, text=True) as proc:
        assert proc.stdout is not None  # stdout=PIPE
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            port = proc.stdout.readline().strip() if ready else ""
            if not port.isdigit():
                proc.kill()
                pytest.fail(f"the pack did not print its port: {port!r} {log.read_text()[-2000:]}")
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                yield analyzer_pb2_grpc.AnalyzerStub(channel)
        finally:
            terminate(proc)


def struct(props: Mapping[str, Any]) -> struct_pb2.Struct:
    return json_format.ParseDict(wire(props), struct_pb2.Struct())


def request(resource: Resource, **overrides: Any) -> analyzer_pb2.AnalyzeRequest:
    raw = {**resource.raw, **overrides}
    return analyzer_pb2.AnalyzeRequest(
        type=raw["type"], properties=struct(raw["inputs"]), urn=raw["urn"], name=raw["name"],
        options=analyzer_pb2.AnalyzerResourceOptions(protect=raw["protect"], parent=raw["parent"]))


def stack_request(graph: Graph, state: Mapping[str, Any] | None = None) -> analyzer_pb2.AnalyzeStackRequest:
    state = state or {}
    return analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(
            type=r.type, properties=struct(state.get(r.name, r.raw["state"])), urn=r.urn, name=r.name,
            options=analyzer_pb2.AnalyzerResourceOptions(protect=r.raw["protect"], parent=r.parent),
            parent=r.parent, dependencies=r.raw["dependencies"])
        for r in graph.resources])


def configure(analyzer: analyzer_pb2_grpc.AnalyzerStub, config: Mapping[str, Mapping[str, Any]]) -> None:
    """As the CLI does with --policy-pack-config: every configured policy with its level."""
    analyzer.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig={
        name: analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.MANDATORY, properties=struct(props))
        for name, props in config.items()}))


def test_the_pack_describes_its_policies(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == PACK_NAME and info.supportsConfig
    assert [p.name for p in info.policies] == [p.name for p in POLICIES]
    assert {p.enforcementLevel for p in info.policies} == {analyzer_pb2.MANDATORY}
    by_name = {p.name: p for p in info.policies}
    assert "allowPublicLoadBalancer" in by_name["no-public-load-balancer"].configSchema.properties
    assert by_name["namespace-offers-classes-and-policies"].policy_type == analyzer_pb2.POLICY_TYPE_STACK


def test_the_opt_in_reaches_the_pack_from_the_stack_and_from_policy_config(
        analyzer: analyzer_pb2_grpc.AnalyzerStub, public_lb: Graph) -> None:
    service = public_lb.named("dask-scheduler-external")
    # The stack's allowPublicLoadBalancer=true, from the process environment the CLI sets.
    assert list(analyzer.Analyze(request(service)).diagnostics) == []
    # A policy config of false overrides it.
    configure(analyzer, {"no-public-load-balancer": {"allowPublicLoadBalancer": False}})
    try:
        [diagnostic] = analyzer.Analyze(request(service)).diagnostics
    finally:
        configure(analyzer, {})
    assert diagnostic.policyName == "no-public-load-balancer" and diagnostic.policyPackName == PACK_NAME
    assert diagnostic.enforcementLevel == analyzer_pb2.MANDATORY
    assert "Service 'dask-scheduler-external' is a LoadBalancer with no loadBalancerSourceRanges" in diagnostic.message


def test_resource_options_reach_the_rules(analyzer: analyzer_pb2_grpc.AnalyzerStub, reference: Graph) -> None:
    claim = reference.named("storage-dataset")
    assert list(analyzer.Analyze(request(claim)).diagnostics) == []
    [diagnostic] = analyzer.Analyze(request(claim, protect=False)).diagnostics
    assert diagnostic.policyName == "dataset-pvc-rwx-protected" and "not protected" in diagnostic.message


def test_secret_values_reach_the_rules_in_clear(analyzer: analyzer_pb2_grpc.AnalyzerStub, reference: Graph) -> None:
    release = reference.named("dask-release")
    props = json.loads(json.dumps(release.raw["inputs"]))
    assert "__secret__" in props["values"]  # the values are a secret on the wire
    props["values"]["__secret__"]["worker"]["image"]["tag"] = "latest"
    found = {d.policyName for d in analyzer.Analyze(request(release, inputs=props)).diagnostics}
    assert found == {"dask-one-pinned-image"}


def test_the_stack_rule_runs_over_the_graph(analyzer: analyzer_pb2_grpc.AnalyzerStub, reference: Graph) -> None:
    assert list(analyzer.AnalyzeStack(stack_request(reference)).diagnostics) == []
    namespace = reference.named("vsphere-namespace-ns")
    state = {namespace.name: {**namespace.raw["state"], "vm_classes": ["best-effort-medium"]}}
    diagnostics = analyzer.AnalyzeStack(stack_request(reference, state)).diagnostics
    assert diagnostics and {d.policyName for d in diagnostics} == {"namespace-offers-classes-and-policies"}
