"""``dask-tkg team-outputs``: the document a person of the team runs with, written by a platform
engineer from the stack's outputs, holding what a person's login and run read and nothing else.

A person never needs the stack (``--stack`` reads its state through the Pulumi CLI, and the state
holds every secret of the stack); they need the team's outputs, none of them secret. The platform
engineer, who holds the stack, writes them out after each ``pulumi up``::

    pulumi stack output --json | dask-tkg team-outputs > team-outputs.json

and hands the file out; the person logs in where it says and runs ``dask-tkg run --outputs
team-outputs.json --own-cluster``. The document keeps the outputs ``workloads/cluster/team.py``
reads and where the login goes: the Supervisor's address, the vSphere Namespace and the
cluster's name (``KEPT``), checked to be a team's
(a stack without ``users`` is refused, saying so), and refuses any value that looks like a secret
(``pulumi stack output --json --show-secrets`` given by mistake: none of the kept outputs is secret).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workloads.cluster.team import READ, parse
from workloads.contract import CLUSTER_NAME, SUPERVISOR_NAMESPACE, SUPERVISOR_SERVER, ContractError

LOGIN = (SUPERVISOR_SERVER, SUPERVISOR_NAMESPACE, CLUSTER_NAME)  # kubectl vsphere login's --server and names
KEPT = (*READ, *LOGIN)  # what workloads/cluster/team.py reads, and where a person logs in
SECRET_MARKERS = ("-----BEGIN", "[secret]")


def document(outputs: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The person's document from the stack's outputs; ContractError naming what is wrong."""
    if not isinstance(outputs, Mapping):
        raise ContractError(f"{source}: expected `pulumi stack output --json`, a JSON object of outputs")
    kept = {key: outputs[key] for key in KEPT if key in outputs}
    parse(kept, source)  # a team's, and whole
    text = json.dumps(kept)
    found = [marker for marker in SECRET_MARKERS if marker in text]
    if found:
        raise ContractError(f"{source}: the team's outputs hold {found[0]!r}, which none of them should: write the"
                            " document from `pulumi stack output --json` (without --show-secrets)")
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dask-tkg team-outputs", description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", nargs="?", default="-",
                        help="the stack's `pulumi stack output --json` (a file, or - for standard input: the default)")
    args = parser.parse_args(argv)
    source = "standard input" if args.outputs == "-" else args.outputs
    try:
        text = sys.stdin.read() if args.outputs == "-" else Path(args.outputs).read_text(encoding="utf-8")
        outputs = json.loads(text)
        kept = document(outputs, source)
        print(json.dumps(kept, indent=2, sort_keys=True))
    except (OSError, ValueError) as exc:  # ContractError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2
    missing = [key for key in LOGIN if not kept.get(key)]
    if missing:
        print(f"note: the outputs hold no {', '.join(missing)}, so the document does not say where a person logs"
              " in: a stack last updated by an older version has none (pulumi up, then write it again)",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
