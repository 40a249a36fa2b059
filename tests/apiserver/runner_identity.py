"""The runner's namespaced identity on a real API server, as the program declares it: its
ServiceAccount, Role and RoleBinding applied from the program's run under Pulumi's mocks, and a
kubeconfig built by the program's own builder (components/dask/runner_access.py) on a token
the API server issues for that account.

Two ways to the token, both the server's own: ``request_token`` asks the TokenRequest API
(the kube-apiserver signs it with its service-account key; the ``apiserver`` tests have no
controller-manager), ``secret_token`` waits for the token controller of a real
controller-manager to fill the program's ``kubernetes.io/service-account-token`` Secret (the
``cluster`` tests), which is what a deployed stack reads.
"""
from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import yaml

from components.dask.runner_access import NAME, TOKEN_SECRET, runner_kubeconfig
from tests.kube.rest import KubeApiError, api_request, apply_manifest

RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding")


def runner_objects(objects: list[dict], namespace: str, kinds: tuple[str, ...] = RBAC_KINDS) -> list[dict]:
    """The program's objects of the runner's identity in ``namespace`` (its token Secret too
    when ``kinds`` names Secret)."""
    names = {NAME, TOKEN_SECRET}
    return [o for o in objects if o["kind"] in kinds and o["metadata"].get("namespace") == namespace
            and o["metadata"]["name"] in names]


def apply_runner_identity(api, objects: list[dict], namespace: str, kinds: tuple[str, ...] = RBAC_KINDS) -> None:
    found = runner_objects(objects, namespace, kinds)
    assert sorted(o["kind"] for o in found) == sorted(kinds), f"the program declares {found!r}"
    for kind in (*RBAC_KINDS, "Secret"):  # the account before its token Secret
        for obj in (o for o in found if o["kind"] == kind):
            apply_manifest(api, obj)


def request_token(api, namespace: str, seconds: int = 3600) -> str:
    """A token of the runner's ServiceAccount from the TokenRequest API."""
    answer = api_request(api, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{NAME}/token",
                         body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                               "spec": {"expirationSeconds": seconds}})
    return answer["status"]["token"]


def secret_token(api, namespace: str, timeout_s: float = 60.0) -> str:
    """``data.token`` of the program's token Secret once the token controller has filled it
    (base64, as the Secret holds it and as the program reads it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            secret = api_request(api, "GET", f"/api/v1/namespaces/{namespace}/secrets/{TOKEN_SECRET}")
        except KubeApiError as exc:
            if exc.status != 404:
                raise
            secret = {}
        token = (secret.get("data") or {}).get("token")
        if token:
            return token
        if time.monotonic() > deadline:
            raise TimeoutError(f"Secret {namespace}/{TOKEN_SECRET} has no data.token after {timeout_s:.0f} s")
        time.sleep(0.5)


def admin_kubeconfig_inline(kubeconfig: Path) -> str:
    """The server's admin kubeconfig with the CA inline, as Cluster API's ``<cluster>-kubeconfig``
    Secret holds one (only its server and CA reach the runner's)."""
    config = yaml.safe_load(kubeconfig.read_text())
    for entry in config["clusters"]:
        cluster = entry["cluster"]
        if "certificate-authority" in cluster:
            cluster["certificate-authority-data"] = base64.b64encode(
                Path(cluster.pop("certificate-authority")).read_bytes()).decode()
    return yaml.safe_dump(config)


def kubeconfig_for(admin_kubeconfig: Path, token: str, namespace: str, *, encoded: bool = False) -> str:
    """The runner's kubeconfig as the program builds it; ``token`` plain (TokenRequest) or
    base64 (``encoded``: a Secret's data)."""
    token_b64 = token if encoded else base64.b64encode(token.encode()).decode()
    return runner_kubeconfig(admin_kubeconfig_inline(admin_kubeconfig), token_b64, namespace)


def deploy_runner_identity(api, objects: list[dict], namespace: str, admin_kubeconfig: Path,
                           kinds: tuple[str, ...] = (*RBAC_KINDS, "Secret")) -> str:
    """The program's identity and token Secret applied (``kinds``: those not applied yet), the
    token the cluster's token controller puts there, the runner's kubeconfig on it."""
    apply_runner_identity(api, objects, namespace, kinds)
    return kubeconfig_for(admin_kubeconfig, secret_token(api, namespace), namespace, encoded=True)


def token_subject(kubeconfig: str) -> str:
    """The ``sub`` claim of the kubeconfig's token, a JWT the cluster signed (not verified here:
    the API server that accepts it does that)."""
    token = yaml.safe_load(kubeconfig)["users"][0]["user"]["token"]
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"]
