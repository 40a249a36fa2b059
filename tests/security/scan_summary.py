"""What an independent scanner found in every stack's objects, and who may do what there, as one
committed file (``docs/results/security-scan.json``) that docs/reliability.md quotes.

A scan is two steps a security team can repeat, the scanner in a throwaway venv so that nothing
of it is a dependency of the project::

    .venv/bin/python -m tests.security.dump_objects /tmp/objects
    checkov -d /tmp/objects --framework kubernetes --compact --quiet -o json > /tmp/scan.json
    .venv/bin/python -m tests.security.scan_summary /tmp/scan.json /tmp/objects --label after \\
        --commit "$(git rev-parse --short HEAD)" --doc

The summary keeps the scanner's totals, its failures per stack and per check, and each
RoleBinding or ClusterRoleBinding with what its role allows that matters here: creating pods
(root on a node, through a privileged namespace) and reading Secrets, in which scope.
"""
from __future__ import annotations

import argparse
import collections
import json
import textwrap
from pathlib import Path

import yaml

from tests.docs.generated import replace_block

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "docs" / "results" / "security-scan.json"
DOC = REPO / "docs" / "reliability.md"
MARKERS = ("<!-- security-scan:begin -->", "<!-- security-scan:end -->")
RBAC_KINDS = ("Role", "ClusterRole")
BINDING_KINDS = ("RoleBinding", "ClusterRoleBinding")


def _allows(rules: list[dict], resource: str, verbs: set[str]) -> bool:
    return any(({resource, "*"} & set(rule.get("resources", []))) and ({"*"} | verbs) & set(rule.get("verbs", []))
               for rule in rules)


def bindings(objects: list[dict]) -> list[dict]:
    """Each binding of a stack with its subjects, scope, rule count and the two rights that matter."""
    roles = {(o["kind"], o["metadata"].get("namespace", "") if o["kind"] == "Role" else "", o["metadata"]["name"]): o
             for o in objects if o.get("kind") in RBAC_KINDS}
    found = []
    for binding in (o for o in objects if o.get("kind") in BINDING_KINDS):
        ref, namespace = binding["roleRef"], binding["metadata"].get("namespace", "")
        role = roles.get((ref["kind"], namespace if ref["kind"] == "Role" else "", ref["name"])) or {}
        rules = role.get("rules") or []
        found.append({
            "binding": f"{binding['kind']}/{binding['metadata']['name']}",
            "role": f"{ref['kind']}/{ref['name']}",
            "scope": "cluster-wide" if binding["kind"] == "ClusterRoleBinding" else namespace,
            "subjects": sorted(f"{s['kind']}:{s.get('namespace', '')}/{s['name']}"
                               for s in binding.get("subjects") or []),
            "rules": len(rules),
            "createPods": _allows(rules, "pods", {"create"}),
            "readSecrets": _allows(rules, "secrets", {"get", "list", "watch"}),
        })
    return found


def summarize(scan: dict | list, objects_dir: Path) -> dict:
    """The scanner's JSON (one report, or a list of one) and the folder it scanned."""
    report = scan[0] if isinstance(scan, list) else scan
    failed = report["results"]["failed_checks"]
    stacks = sorted(p.name for p in objects_dir.iterdir() if p.is_dir())
    return {
        "scanner": f"checkov {report['summary']['checkov_version']} --framework kubernetes",
        "resources": report["summary"]["resource_count"],
        "passed": report["summary"]["passed"],
        "failed": report["summary"]["failed"],
        "failedPerStack": dict(sorted(collections.Counter(f["file_path"].strip("/").split("/")[0]
                                                         for f in failed).items())),
        "failedPerCheck": dict(collections.Counter(f["check_id"] for f in failed).most_common()),
        "bindings": {stack: bindings([yaml.safe_load(p.read_text())
                                      for p in sorted((objects_dir / stack).glob("*.yaml"))])
                     for stack in stacks},
    }


def _dask_bindings(scan: dict, stack: str) -> str:
    rows = [b for b in scan["bindings"][stack] if "dask" in b["binding"]]
    return "; ".join(f"`{b['binding']}` ({b['scope']}, {b['rules']} rules"
                     + (", creates pods" if b["createPods"] else "") + (", reads Secrets" if b["readSecrets"] else "")
                     + ")" for b in rows) or "none"


def render(kept: dict) -> str:
    """The paragraph docs/reliability.md quotes, from the committed file."""
    lines = []
    for label in ("before", "after"):
        scan = kept[label]
        per_stack = ", ".join(f"{stack} {count}" for stack, count in scan["failedPerStack"].items())
        lines.append(f"- **{label}** (commit `{scan['commit']}`, {scan['scanner']}): {scan['failed']} failed of"
                     f" {scan['passed'] + scan['failed']} checks over {scan['resources']} objects ({per_stack});"
                     f" images not pinned by digest (CKV_K8S_43): {scan['failedPerCheck'].get('CKV_K8S_43', 0)}."
                     f" The Dask side's bindings on `dev`: {_dask_bindings(scan, 'dev')}.")
    return "\n".join(textwrap.fill(line, width=100, subsequent_indent="  ", break_long_words=False,
                                   break_on_hyphens=False) for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scan", type=Path, nargs="?", help="the scanner's JSON report")
    parser.add_argument("objects", type=Path, nargs="?", help="the folder tests.security.dump_objects wrote")
    parser.add_argument("--label", help="before or after: the key this scan is kept under")
    parser.add_argument("--commit", help="the commit whose objects were scanned")
    parser.add_argument("--doc", action="store_true", help="rewrite docs/reliability.md's scan paragraph from the file")
    args = parser.parse_args()
    kept = json.loads(RESULT.read_text()) if RESULT.exists() else {}
    if args.scan:
        if not (args.objects and args.label and args.commit):
            parser.error("a scan needs the objects folder, --label and --commit")
        kept[args.label] = {"commit": args.commit, **summarize(json.loads(args.scan.read_text()), args.objects)}
        RESULT.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
        scan = kept[args.label]
        print(f"{RESULT.name}: {args.label} {scan['failed']} failed of {scan['passed'] + scan['failed']} checks"
              f" over {scan['resources']} resources")
    if args.doc:
        DOC.write_text(replace_block(DOC.read_text(encoding="utf-8"), MARKERS, render(kept), DOC), encoding="utf-8")
        print(f"{DOC.name}: the scan paragraph rewritten")


if __name__ == "__main__":
    main()
