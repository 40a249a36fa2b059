"""The pack as a whole: the program's stacks pass every policy, a public LoadBalancer
without the opt-in fails with the policy's message, and the pack's files and constants
agree with the program they guard."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy
from pulumi_policy.proxy import UnknownValueError

from components.addons.shared_storage import DATASET_CLAIM
from components.settings.checks import MIN_VGPU_KUBERNETES
from components.settings.model import POOL_ROLE_LABEL
from policy.rules import PACK_NAME, POLICIES, common, tanzu
from tests.policy.support import UNKNOWN, graph_violations, hand_made, violations
from tests.program.graph import Graph
from tests.requirements import pins
from workloads.contract import GPU_RESOURCE

REPO = Path(__file__).resolve().parents[2]
POLICY_DIR = REPO / "policy"


@pytest.mark.parametrize("stack", ["reference", "reference_dev", "topology_b", "vsphere8", "dev", "full"])
def test_the_programs_stacks_pass_every_policy(stack: str, request: pytest.FixtureRequest) -> None:
    graph: Graph = request.getfixturevalue(stack)
    assert graph_violations(graph) == {}


def test_a_public_load_balancer_without_opt_in_fails_the_pack(public_lb: Graph) -> None:
    found = graph_violations(public_lb)
    assert list(found) == ["no-public-load-balancer"]
    messages = found["no-public-load-balancer"]
    assert len(messages) == 2
    for service in ("dask-scheduler-external", "dask-jupyter-external"):
        assert any(m.startswith(f"Service '{service}' is a LoadBalancer with no loadBalancerSourceRanges")
                   for m in messages)


def test_with_the_stacks_opt_in_the_public_stack_passes(public_lb: Graph, stack_config) -> None:
    stack_config(allowPublicLoadBalancer=True)
    assert graph_violations(public_lb) == {}


def test_every_policy_is_mandatory_named_and_described() -> None:
    names = [p.name for p in POLICIES]
    # 9 + the 4 dask-operator-* rules + file-share-clients-closed + workload-cluster-shape
    assert len(names) == len(set(names)) == 15
    for policy in POLICIES:
        assert policy.enforcement_level == EnforcementLevel.MANDATORY
        assert re.fullmatch(r"[a-z0-9-]+", policy.name) and len(policy.description) > 40


# The policies that read a Helm release's values; every other resource policy ignores a
# Release. Stack policies get no unknowns (the engine runs them after the update).
READS_RELEASE_VALUES = {"dask-gpu-worker-one-gpu", "dask-scheduler-jupyter-off-gpu-nodes", "dask-one-pinned-image",
                        "jupyter-no-default-password", "no-public-load-balancer"}


@pytest.mark.parametrize("policy", [p for p in POLICIES if isinstance(p, ResourceValidationPolicy)],
                         ids=lambda p: p.name)
def test_unknown_values_during_preview_are_not_violations(policy) -> None:
    """With values unknown (a preview of a new stack), a rule that reads them raises the
    SDK's ``UnknownValueError``, which the SDK turns into an advisory "can't run policy
    ... during preview" diagnostic (pulumi-policy 1.21.0, ``policy.py``,
    ``_PolicyAnalyzerServicer.Analyze``), never a violation; a rule must neither report
    the unknown as a violation nor catch the error and pass. A rule that does not read
    them reports nothing."""
    release = hand_made("kubernetes:helm.sh/v3:Release", {"chart": "dask", "values": UNKNOWN})
    if policy.name in READS_RELEASE_VALUES:
        with pytest.raises(UnknownValueError) as unknown:
            found = violations(policy, release)
            pytest.fail(f"{policy.name} read unknown values without the SDK's error, reporting {found}")
        assert unknown.value.props == ["values"]
        assert unknown.value.message == "string value at .values can't be known during preview"
    else:
        assert violations(policy, release) == []


def test_the_unknown_value_cases_cover_every_resource_policy() -> None:
    names = {p.name for p in POLICIES if isinstance(p, ResourceValidationPolicy)}
    assert names > READS_RELEASE_VALUES


def test_the_packs_constants_are_the_programs() -> None:
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    assert project["name"] == common.PROJECT
    assert "allowPublicLoadBalancer" in project["config"] and "vmClasses" in project["config"]
    assert project["config"]["allowPublicLoadBalancer"]["default"] is False
    assert common.POOL_ROLE_LABEL == POOL_ROLE_LABEL
    assert common.DATASET_CLAIM == DATASET_CLAIM
    assert common.GPU_RESOURCE == GPU_RESOURCE
    assert tanzu.MIN_VGPU_KUBERNETES == MIN_VGPU_KUBERNETES
    paper = yaml.safe_load((REPO / "Pulumi.reference.yaml").read_text())["config"]
    assert tanzu.tkr_kubernetes_version(paper["dask-tkg:tkr"]) == MIN_VGPU_KUBERNETES  # the first with vGPU
    default = tanzu.tkr_kubernetes_version(project["config"]["tkr"]["default"])
    assert default is not None and default > MIN_VGPU_KUBERNETES


def test_the_packs_requirements_match_the_projects_pins() -> None:
    pack = pins(POLICY_DIR / "requirements.txt")
    project = {**pins(REPO / "requirements.txt"), **pins(REPO / "requirements-test.txt")}
    assert set(pack) == {"pulumi", "pulumi-policy", "argon2-cffi"}
    assert {k: project.get(k) for k in pack} == pack


def test_the_pack_is_a_python_policy_pack() -> None:
    manifest = yaml.safe_load((POLICY_DIR / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    assert manifest["runtime"]["options"]["virtualenv"] == "venv"
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"]) and manifest["description"]
    assert "venv/" in (POLICY_DIR / ".gitignore").read_text().split()
    entry = (POLICY_DIR / "__main__.py").read_text()
    assert "PolicyPack(" in entry and "from rules import" in entry
    assert re.fullmatch(r"[a-zA-Z0-9-_.]{1,100}", PACK_NAME)
    readme = (POLICY_DIR / "README.md").read_text()
    for policy in POLICIES:
        assert f"`{policy.name}`" in readme, f"README.md does not document {policy.name}"
