"""The runner's ``--own-cluster`` options: which combinations make sense, and the cluster made
around the sweep (``own_cluster.OwnCluster``) and deleted after it, also after a failure,
Ctrl-C or SIGTERM (the runner's signal handlers raise in the main thread, and the ``finally``
here runs on the way out)."""
from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from typing import Any

OWN_ONLY = (("kubeconfig", "--kubeconfig"), ("user", "--user"), ("keep_cluster", "--keep-cluster"),
            ("cluster_name", "--cluster-name"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    own = parser.add_argument_group("a cluster of your own (a person of the stack's users; docs/dask.md, For a team)")
    own.add_argument("--own-cluster", action="store_true",
                     help="make a Dask cluster of your own in your namespace for this run (with --stack or"
                          " --outputs, no stack secrets needed), delete it at the end")
    own.add_argument("--kubeconfig", metavar="FILE",
                     help="your kubeconfig, as kubectl vsphere login wrote it (default: $KUBECONFIG, else"
                          " ~/.kube/config; its current context)")
    own.add_argument("--user", metavar="NAME", help="your vSphere SSO name as the stack's users lists it,"
                                                     " e.g. alice@vsphere.local (default: by the context's namespace)")
    own.add_argument("--keep-cluster", action="store_true",
                     help="leave the cluster running after the run (its idle timeout still deletes it)")
    own.add_argument("--cluster-name", metavar="NAME", help="the DaskCluster's name (default: dask-<random>)")


def option_problem(args: argparse.Namespace) -> str | None:
    """Why the options do not go together, or None."""
    if not args.own_cluster:
        given = [flag for field, flag in OWN_ONLY if getattr(args, field)]
        return f"{', '.join(given)} only go with --own-cluster" if given else None
    if args.scheduler_address or args.local:
        return "--own-cluster makes the cluster: not with --scheduler-address or --local"
    if not (args.stack or args.outputs):
        return "--own-cluster reads the stack's team outputs: give --stack NAME or --outputs FILE"
    return None


def workers_asked(args: argparse.Namespace, profile: dict[str, Any]) -> int:
    """The cluster's size: the sweep's largest worker count (or --adaptive's maximum)."""
    if args.adaptive:
        return args.adaptive[1]
    return max(args.workers) if args.workers else int(profile["workers"])


def team_outputs(args: argparse.Namespace):
    """The stack's non-secret outputs (``pulumi stack output --json``, no ``--show-secrets``)."""
    from workloads.cluster import endpoint, team

    if args.stack:
        return team.parse(endpoint.stack_outputs_json(args.stack, show_secrets=False), f"stack {args.stack}")
    return team.parse(endpoint.outputs_file_json(args.outputs), args.outputs)


@contextlib.contextmanager
def around(args: argparse.Namespace, runner: Any) -> Iterator[None]:
    """With ``--own-cluster``: the person's cluster made (``runner.where`` its endpoint) for
    the sweep and deleted after it (unless ``--keep-cluster``); nothing otherwise."""
    if not args.own_cluster:
        yield
        return
    from workloads.cluster import kubeconfig, team
    from workloads.cluster.own_cluster import OwnCluster, cluster_name

    outputs = team_outputs(args)
    kube = kubeconfig.load(args.kubeconfig)
    person = team.pick(outputs.people, args.user, kube.namespace)
    own = OwnCluster(outputs, person, kube, cluster_name(args.cluster_name), workers_asked(args, runner.profile),
                     keep=args.keep_cluster, echo=runner.echo)
    runner.person = person.name  # the GPU usage is the person's, from the moment the cluster is asked for
    runner.held_since = time.time()
    try:
        runner.where = own.start(timeout=args.wait_timeout or max(300, runner.profile.get("wait_timeout_s", 0)))
        yield
    finally:
        own.close()
