"""Taking a stack down: ``pulumi destroy`` stops at exactly the protected resources (the dataset
claim and the vSAN file share), and the steps docs/deploy.md gives ("Taking a stack down")
release them, in their order, leaving the share's data on vSAN.

What is tested: the resources' options as the program registers them under Pulumi's mocks
(``protect``, ``retainOnDelete``, parent, provider and dependencies), and what Pulumi's engine
decides from them, by the local model in ``destroy_model.py`` (written from pulumi/pulumi
v3.260's source, cited there). What is not: the engine itself (no Pulumi CLI here), the
providers' deletes against vCenter and Kubernetes, and how long they take.
"""
from __future__ import annotations

import re

import pytest

from tests.program.destroy_model import destroy, states, unprotect
from tests.program.graph import REPO, run_program

DEPLOY = REPO / "docs" / "deploy.md"
PROTECTED = {"storage-dataset", "vsphere-fileshare-share"}
UNPROTECT = re.compile(r"^pulumi state unprotect '([^']+)'", re.M)


def teardown_section() -> str:
    text = DEPLOY.read_text(encoding="utf-8")
    start = text.index("\n## Taking a stack down")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def documented_unprotects() -> list[str]:
    """The URNs the section's commands unprotect, in their order (the dev stack's)."""
    return UNPROTECT.findall(teardown_section())


def name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


@pytest.mark.parametrize("stack", ["dev", "reference"])
def test_the_protected_resources_are_the_dataset_claim_and_the_file_share(stack):
    graph = run_program(stack)
    assert graph.error is None, graph.traceback
    protected = {r.name for r in graph.resources if r.raw["protect"]}
    assert protected == PROTECTED
    assert all(graph.named(n).raw["retain_on_delete"] for n in PROTECTED)  # never deleted, even unprotected


def test_destroy_stops_at_exactly_the_protected_resources():
    state = states(run_program("dev"))
    outcome = destroy(state)
    assert {name(u) for u in outcome.refused} == PROTECTED
    left = {name(s.urn) for s in outcome.left}
    # The claim lives in the workload cluster: its provider needs the cluster's kubeconfig, so a
    # destroy that keeps the claim keeps the cluster, its namespace and the vSphere layer.
    assert {"tkc-cluster", "guest", "vsphere-namespace-ns"} <= left
    assert {"gpu-operator-release", "dask-cluster"} <= {name(u) for u in outcome.removed}


def test_the_documented_steps_release_the_claim_then_the_share():
    graph = run_program("dev")
    state = states(graph)
    steps = documented_unprotects()
    assert [name(u) for u in steps] == ["storage-dataset", "vsphere-fileshare-share"], steps
    # 1. the claim unprotected: destroy takes the cluster and everything in it; what stays is the
    #    share and what it needs (its storage policy, the checks the vSphere layer waits for)
    after_claim = destroy(unprotect(state, steps[0]))
    assert {name(u) for u in after_claim.refused} == {"vsphere-fileshare-share"}
    kept = {s.type.rsplit(":", 1)[-1] for s in after_claim.left
            if s.custom and not s.type.startswith("pulumi:providers")}
    assert kept == {"VsanFileShare", "VsanStoragePolicy", "VCenterPrivileges", "VgpuManagerCheck", "SupervisorReleases"}
    policy = [s for s in after_claim.left if s.type.endswith("VsanStoragePolicy")]
    assert [name(s.urn) for s in policy] == ["vsphere-policies-vsan-r1-sw8"]  # fileSharePolicy's
    assert {name(u) for u in after_claim.retained} == {"storage-dataset"}
    # 2. the share unprotected: nothing stays in the state, and the share itself stays on vSAN
    after_share = destroy(unprotect(after_claim.left, steps[1]))
    assert after_share.refused == frozenset() and after_share.left == ()
    assert {name(u) for u in after_share.retained} == {"vsphere-fileshare-share"}


def test_the_documented_urns_are_the_dev_stacks():
    graph = run_program("dev")
    assert set(documented_unprotects()) == {r.urn for r in graph.resources if r.raw["protect"]}
