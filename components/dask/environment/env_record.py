"""The environment Job's record of what it prepared: the manifest's digest (env_manifest.py) in
the ConfigMap ``dask-environment-digests`` of the Dask namespace and of each person's namespace,
under the environment's key (the lock digest's first 16 hex, as its directory), where the
pods' ``verify-environment`` init containers read it.

Why the API server and not the share: whoever can write the share (a client in
``fileShareClients``, a node's root) could rewrite a digest kept beside the files. The
ConfigMaps are the program's (made empty, their data left to this script); the Job's
ServiceAccount may ``get`` and ``patch`` that one ConfigMap in those namespaces and nothing else
(components/addons/environment_job.py).

- ``record ROOT``: after pip installed the environment, write its manifest to ROOT/.manifest and
  its digest into every namespace's ConfigMap.
- ``confirm ROOT``: the environment was prepared before (its marker is there): the Dask
  namespace's recorded digest must still match the tree; then it is recorded in every namespace
  (a person added since gets it). Exit 3 when nothing is recorded or the tree differs: the Job
  then prepares the environment again rather than vouch for files it did not write.

Standard library only (the Job runs the Dask image). Environment: RECORD_NAMESPACES (comma
separated, the Dask namespace first), RECORD_KEY, RECORD_CONFIG_MAP; KUBERNETES_SERVICE_HOST and
_PORT, ENV_RECORD_TOKEN_FILE, ENV_RECORD_CA_FILE (the pod's own by default).
"""
from __future__ import annotations

import json
import os
import ssl
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # python -I leaves the script's directory out
import env_manifest

ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
CONFIG_MAP = "/api/v1/namespaces/{namespace}/configmaps/{name}"
REBUILD = 3


def request(method: str, path: str, body: dict | None = None, content_type: str = "application/json") -> dict:
    """One call to the API server as the pod's ServiceAccount; the decoded answer."""
    host = os.environ["KUBERNETES_SERVICE_HOST"]
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    with open(os.environ.get("ENV_RECORD_TOKEN_FILE", f"{ACCOUNT}/token")) as handle:
        token = handle.read().strip()
    context = ssl.create_default_context(cafile=os.environ.get("ENV_RECORD_CA_FILE", f"{ACCOUNT}/ca.crt"))
    data = json.dumps(body).encode() if body is not None else None
    call = urllib.request.Request(f"https://{host}:{port}{path}", data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json", "Content-Type": content_type})
    with urllib.request.urlopen(call, context=context, timeout=30) as answer:  # noqa: S310 (https only)
        return json.loads(answer.read() or b"{}")


def _settings() -> tuple[list[str], str, str]:
    namespaces = [n for n in os.environ["RECORD_NAMESPACES"].split(",") if n]
    return namespaces, os.environ["RECORD_KEY"], os.environ.get("RECORD_CONFIG_MAP", "dask-environment-digests")


def record_everywhere(digest: str) -> None:
    namespaces, key, name = _settings()
    for namespace in namespaces:
        request("PATCH", CONFIG_MAP.format(namespace=namespace, name=name), {"data": {key: digest}},
                content_type="application/merge-patch+json")
        print(f"env-record: {namespace}/{name} {key}={digest[:16]}", flush=True)


def record(root: str) -> int:
    text = env_manifest.manifest(root)
    path = os.path.join(root, env_manifest.MANIFEST)
    with open(f"{path}.tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(f"{path}.tmp", path)
    record_everywhere(env_manifest.digest(text))
    return 0


def confirm(root: str) -> int:
    namespaces, key, name = _settings()
    recorded = (request("GET", CONFIG_MAP.format(namespace=namespaces[0], name=name)).get("data") or {}).get(key, "")
    if not recorded:
        print(f"env-record: nothing recorded for {key} in {namespaces[0]}/{name}: preparing again", flush=True)
        return REBUILD
    ok, line = env_manifest.verify(root, recorded)
    print(f"env-record: {line}", flush=True)
    if not ok:
        return REBUILD
    record_everywhere(recorded)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("record", "confirm"):
        print("usage: env_record.py record|confirm ROOT", file=sys.stderr)
        return 2
    try:
        return (record if argv[0] == "record" else confirm)(argv[1])
    except (OSError, urllib.error.URLError, KeyError, ValueError) as exc:
        detail = exc.read().decode(errors="replace")[:500] if isinstance(exc, urllib.error.HTTPError) else ""
        line = f"env-record: {argv[0]} failed: {type(exc).__name__}: {exc} {detail}".rstrip()
        print(line, file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
