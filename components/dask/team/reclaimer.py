"""The team's reclaimer: deletes each person's DaskClusters older than their maximum lifetime.

It runs in the Dask operator's namespace as a CronJob (components/dask/team/reclaim.py), as a
ServiceAccount whose only rights are listing and deleting DaskClusters in the people's
namespaces. The operator's own idle check deletes a cluster idle for its ``idleTimeout``, but it
skips a scheduler that does not answer (dask-kubernetes 2026.3.0, operator/controller/
controller.py ``daskcluster_autoshutdown``: "Unable to connect to scheduler, skipping autoshutdown
check") and never stops a busy one, and a person writes their scheduler's pod spec. A maximum
lifetime the person cannot change holds either way; deleting the DaskCluster lets Kubernetes'
garbage collector remove its Deployments, pods, Service and TLS Secret (all owned by it).

Standard library only: the pod runs the stack's Dask image, whatever it holds.

Usage: reclaimer.py LIMITS.json (a namespace -> seconds map; 0 = no maximum there)
Environment (the defaults are the pod's own): KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT,
RECLAIM_TOKEN_FILE, RECLAIM_CA_FILE.
"""
from __future__ import annotations

import json
import os
import ssl
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
CLUSTERS = "/apis/kubernetes.dask.org/v1/namespaces/{namespace}/daskclusters"


def request(method: str, path: str, body: dict | None = None) -> dict:
    """One call to the API server as the pod's ServiceAccount; the decoded answer."""
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    with open(os.environ.get("RECLAIM_TOKEN_FILE", f"{ACCOUNT}/token")) as handle:
        token = handle.read().strip()
    context = ssl.create_default_context(cafile=os.environ.get("RECLAIM_CA_FILE", f"{ACCOUNT}/ca.crt"))
    data = json.dumps(body).encode() if body is not None else None
    call = urllib.request.Request(f"https://{host}:{port}{path}", data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json", "Content-Type": "application/json"})
    with urllib.request.urlopen(call, context=context, timeout=30) as answer:  # noqa: S310 (https only)
        return json.loads(answer.read() or b"{}")


def age_s(cluster: dict, now: datetime) -> float:
    created = datetime.fromisoformat(cluster["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    return (now - created).total_seconds()


def reclaim(namespace: str, maximum_s: int, now: datetime) -> list[str]:
    """Delete the namespace's DaskClusters older than ``maximum_s``; a line for each deleted."""
    if maximum_s <= 0:
        return []
    done = []
    for cluster in request("GET", CLUSTERS.format(namespace=namespace)).get("items", []):
        meta, age = cluster["metadata"], age_s(cluster, now)
        if age <= maximum_s or meta.get("deletionTimestamp"):
            continue
        request("DELETE", f"{CLUSTERS.format(namespace=namespace)}/{meta['name']}",
                {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        done.append(f"deleted {namespace}/{meta['name']}: {age:.0f} s old, the maximum there is {maximum_s} s")
    return done


def main(argv: list[str]) -> int:
    with open(argv[0]) as handle:
        limits = json.load(handle)
    now, failed = datetime.now(UTC), 0
    for namespace, maximum_s in sorted(limits.items()):
        try:
            lines = reclaim(namespace, int(maximum_s), now)
        except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:
            print(f"reclaimer: {namespace}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            failed += 1
            continue
        for line in lines:
            print(f"reclaimer: {line}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
