"""The scan paragraph of docs/reliability.md is what the committed scan file gives, and the
bindings summary reads roles as the API server grants them (scope from the binding, rights from
the role it names)."""
from __future__ import annotations

import json

from tests.docs.generated import block
from tests.security.scan_summary import DOC, MARKERS, RESULT, bindings, render


def test_the_docs_quote_the_committed_scan():
    kept = json.loads(RESULT.read_text())
    assert block(DOC.read_text(encoding="utf-8"), MARKERS, DOC) == render(kept)


def _role(kind, name, rules, namespace=None):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "rules": rules}


def _binding(kind, name, role_kind, role, namespace=None):
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "roleRef": {"kind": role_kind, "name": role},
            "subjects": [{"kind": "ServiceAccount", "namespace": "ops", "name": "op"}]}


def test_a_cluster_role_bound_in_a_namespace_grants_only_there():
    objects = [_role("ClusterRole", "pods", [{"resources": ["pods"], "verbs": ["create", "get"]}]),
               _binding("RoleBinding", "here", "ClusterRole", "pods", namespace="team"),
               _binding("ClusterRoleBinding", "everywhere", "ClusterRole", "pods")]
    found = {b["binding"]: b for b in bindings(objects)}
    assert found["RoleBinding/here"]["scope"] == "team" and found["RoleBinding/here"]["createPods"]
    assert found["ClusterRoleBinding/everywhere"]["scope"] == "cluster-wide"


def test_rights_come_from_the_role_of_the_bindings_namespace_and_wildcards_count():
    objects = [_role("Role", "r", [{"resources": ["secrets"], "verbs": ["list"]}], namespace="a"),
               _role("Role", "r", [{"resources": ["*"], "verbs": ["*"]}], namespace="b"),
               _role("Role", "read", [{"resources": ["pods"], "verbs": ["get", "list"]}], namespace="a"),
               _binding("RoleBinding", "in-a", "Role", "r", namespace="a"),
               _binding("RoleBinding", "in-b", "Role", "r", namespace="b"),
               _binding("RoleBinding", "reader", "Role", "read", namespace="a")]
    found = {b["binding"]: b for b in bindings(objects)}
    assert (found["RoleBinding/in-a"]["readSecrets"], found["RoleBinding/in-a"]["createPods"]) == (True, False)
    assert (found["RoleBinding/in-b"]["readSecrets"], found["RoleBinding/in-b"]["createPods"]) == (True, True)
    assert (found["RoleBinding/reader"]["readSecrets"], found["RoleBinding/reader"]["createPods"]) == (False, False)
