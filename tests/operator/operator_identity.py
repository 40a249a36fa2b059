"""The Dask operator's identity on a real API server, as the program deploys it: the pinned
operator chart rendered by the real Helm engine with the values the program declares (its
ServiceAccount, and whatever RBAC the chart renders with them), the program's own Role and
RoleBinding in the Dask namespace, and a token the API server issues for that account
(TokenRequest: the kube-apiserver signs it with its service-account key; the ``apiserver``
tests have no controller-manager).

What the account may do is asked of the server itself (SubjectAccessReview, the RBAC
authorizer's answer), not read from the objects.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from components.dask.operator_rbac import OBSERVE_NAME, ROLE_NAME
from tests.kube.binaries import release_for_stack
from tests.kube.rest import api_request, apply_manifest
from tests.program.graph import Graph, run_program
from tests.render.helm import Rendered, render

RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
OPERATOR_RELEASE_RESOURCE = "dask-operator"  # the program's Helm release of the operator chart


def operator_config(dask_namespace: str) -> dict:
    """The test's namespaces as the stack's: the Dask namespace and the operator's own."""
    return {"daskNamespace": dask_namespace, "daskOperatorNamespace": f"{dask_namespace}-op"}


@dataclass(frozen=True)
class OperatorDeployment:
    graph: Graph
    chart: Rendered  # the operator chart as Helm renders it from the program's values
    dask_namespace: str
    operator_namespace: str

    @classmethod
    def of_program(cls, stack: str, config: dict) -> OperatorDeployment:
        graph = run_program(stack, config=config)
        assert graph.error is None, graph.traceback
        release = graph.named(OPERATOR_RELEASE_RESOURCE).inputs
        chart = render(Path(release["chart"]), release["name"], release["namespace"], release["values"],
                       kube_version=release_for_stack(stack, config).version)
        return cls(graph, chart, config["daskNamespace"], release["namespace"])

    @property
    def deployment(self) -> dict:
        [deployment] = self.chart.of_kind("Deployment")
        return deployment

    @property
    def service_account(self) -> str:
        return self.deployment["spec"]["template"]["spec"]["serviceAccountName"]

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.operator_namespace}:{self.service_account}"

    def kopf_args(self) -> list[str]:
        """The controller's command-line flags as the chart passes them, but the liveness
        endpoint (a port on this host)."""
        [container] = self.deployment["spec"]["template"]["spec"]["containers"]
        return [a for a in container["args"] if not a.startswith("--liveness")]

    def rbac_objects(self) -> list[dict]:
        """The account and every RBAC object deployed for it: the chart's and the program's."""
        chart = [o for o in self.chart.objects if o["kind"] in RBAC_KINDS]
        return chart + self.program_rbac()

    def program_rbac(self) -> list[dict]:
        """The program's grants to the account: its Role and RoleBinding in the Dask namespace,
        its read-only ClusterRole and binding."""
        return [m for m in (r.manifest() for r in self.graph.kubernetes_objects())
                if m["kind"] in RBAC_KINDS and m["metadata"]["name"] in (ROLE_NAME, OBSERVE_NAME)]

    def apply(self, api) -> None:
        apply_manifest(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.operator_namespace}},
                       update_existing=True)
        for obj in self.rbac_objects():
            apply_manifest(api, obj, namespace=self.operator_namespace, update_existing=True)


def allowed(api, user: str, verb: str, resource: str, namespace: str | None, group: str = "") -> bool:
    """The API server's answer to ``user`` doing ``verb`` on ``resource`` (SubjectAccessReview)."""
    attributes = {"verb": verb, "resource": resource, "group": group}
    if namespace:
        attributes["namespace"] = namespace
    review = api_request(api, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts", "system:authenticated"],
                 "resourceAttributes": attributes}})
    return bool(review["status"].get("allowed"))


def request_token(api, namespace: str, account: str, seconds: int = 3600) -> str:
    answer = api_request(api, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                         body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                               "spec": {"expirationSeconds": seconds}})
    return answer["status"]["token"]


def kubeconfig_with_token(admin_kubeconfig: Path, token: str, path: Path) -> Path:
    """The server's kubeconfig with the account's token as its only user."""
    config = yaml.safe_load(admin_kubeconfig.read_text())
    config["users"] = [{"name": "operator", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "operator"
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path
