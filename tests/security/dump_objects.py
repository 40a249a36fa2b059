"""Write every stack's Kubernetes objects, as the cluster receives them, into one folder per stack.

An independent scanner reads them there (docs/reliability.md, "Security": the scan a security
team can repeat)::

    .venv/bin/python -m tests.security.dump_objects test-artifacts/objects
    checkov -d test-artifacts/objects --framework kubernetes --compact --quiet

Each object goes into ``<variant>/<NNN>-<kind>-<name>.yaml``; the objects are those of
``tests.security.stack_objects`` (the program under mocks, each chart rendered by the real
Helm engine through its post-renderer). A scanner does not know the ``DaskCluster`` kind, so the
Deployments the Dask operator's controller makes of one are written too, built by the
controller's own functions (dask-kubernetes 2026.3.0 ``build_scheduler_deployment_spec``,
``build_worker_deployment_spec``).
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import yaml
from dask_kubernetes.operator.controller.controller import build_scheduler_deployment_spec, build_worker_deployment_spec

from tests.render.program import VARIANTS
from tests.security.stack_objects import stack_objects


def _file_name(index: int, obj: dict) -> str:
    name = (obj.get("metadata") or {}).get("name", "unnamed")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{index:03d}-{obj['kind']}-{name}") + ".yaml"


def _operator_deployments(obj: dict) -> list[dict]:
    """The Deployments the controller makes of a DaskCluster (scheduler, default worker group)."""
    if obj.get("kind") != "DaskCluster":
        return []
    meta, spec = obj["metadata"], obj["spec"]
    name, namespace = meta["name"], meta.get("namespace", "")
    scheduler = build_scheduler_deployment_spec(name, spec["scheduler"]["spec"], {}, {})
    worker = build_worker_deployment_spec(f"{name}-default", namespace, name, "0",
                                          spec["worker"]["spec"], {}, {})
    return [{**deployment, "metadata": {**deployment["metadata"], "namespace": namespace}}
            for deployment in (scheduler, worker)]


def dump(variant: str, root: Path) -> int:
    """Writes one stack's objects under ``root/variant``; returns how many."""
    folder = root / variant
    folder.mkdir(parents=True, exist_ok=True)
    objects = []
    for _, namespace, declared in stack_objects(variant).objects:
        obj = declared
        if namespace and "namespace" not in (declared.get("metadata") or {}):
            obj = {**declared, "metadata": {**declared.get("metadata", {}), "namespace": namespace}}
        objects += [obj, *_operator_deployments(obj)]
    for index, obj in enumerate(objects):
        (folder / _file_name(index, obj)).write_text(yaml.safe_dump(obj, sort_keys=False))
    return len(objects)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                        help="only these stacks (default: every one)")
    args = parser.parse_args(argv)
    for variant in args.variant or sorted(VARIANTS):
        print(f"{variant}: {dump(variant, args.output)} objects")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
