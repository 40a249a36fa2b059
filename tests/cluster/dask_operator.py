"""The Dask Kubernetes operator's side on the real node: its CRDs applied, its objects deleted
before their namespace, and the DaskCluster's pod specs changed for this node (the image
stand-in, CPU ``dask worker``, small requests, the node's toleration, the scheduler's name
mapped to a fixed ClusterIP: there is no cluster DNS here; tests/cluster/test_default_image.py
says why each)."""
from __future__ import annotations

from components.dask.values import service_names
from tests.cluster.kube import wait_for
from tests.cluster.node import REAL_NODE_TOLERATION
from tests.cluster.post_render import set_env, set_mounts, without_environment_check
from tests.cluster.support import SMALL
from tests.kube.crds import install_crd
from tests.kube.rest import KubeApiError, api_request
from tests.operator.support import chart_crds


def scheduler_names(namespace: str) -> list[str]:
    """The names the program's scheduler Service answers to (its certificate's names)."""
    return service_names("dask-scheduler", namespace)


def change_pod_spec(spec: dict, component: str, d: dict) -> None:
    """The DaskCluster's scheduler or worker pod spec, changed for this node (module docstring)."""
    spec.pop("nodeSelector", None)
    spec["tolerations"] = [*spec.get("tolerations", []), REAL_NODE_TOLERATION]
    spec["hostAliases"] = [{"ip": d["scheduler_ip"], "hostnames": d["scheduler_names"]}]
    without_environment_check(spec)
    for container in spec["containers"]:
        container["image"] = d["image"]
        container["imagePullPolicy"] = "Never"
        container["resources"] = SMALL
        set_mounts(spec, container, d["mounts"])
        set_env(container, d["env"])
        args = container["args"]
        if component == "worker":
            assert args[0] == "dask-cuda-worker", args
            args[0:1] = ["dask", "worker"]  # a CPU node: dask-cuda-worker needs a GPU and NVML
            for flag, value in (("--nthreads", "1"), ("--memory-limit", "2Gi")):
                args[args.index(flag) + 1] = value
        else:
            assert args[:2] == ["dask", "scheduler"], args


def apply_crds(api) -> list[str]:
    """The pinned operator chart's CRDs, each Established and served (the names returned)."""
    return [install_crd(api, crd)["metadata"]["name"] for crd in chart_crds()]


DASK_PLURALS = ("daskautoscalers", "daskworkergroups", "daskclusters")


def delete_dask_resources(api, namespace: str, timeout_s: float = 60.0) -> None:
    """The operator's objects deleted before their namespace (a terminating namespace refuses
    the controller's events, and its retries hold up the finalizers); finalizers still there
    after ``timeout_s`` are removed."""
    base = f"/apis/kubernetes.dask.org/v1/namespaces/{namespace}"

    def left() -> list[tuple[str, str]]:
        try:
            return [(plural, o["metadata"]["name"]) for plural in DASK_PLURALS
                    for o in api_request(api, "GET", f"{base}/{plural}")["items"]]
        except KubeApiError as exc:
            if exc.status == 404:
                return []
            raise

    for plural, name in left():
        if plural != "daskworkergroups":  # the cluster's own group goes with it
            api_request(api, "DELETE", f"{base}/{plural}/{name}")
    try:
        wait_for("the operator's objects deleted", lambda: not left(), timeout_s)
    except TimeoutError:
        for plural, name in left():
            api_request(api, "PATCH", f"{base}/{plural}/{name}", body={"metadata": {"finalizers": None}},
                        content_type="application/merge-patch+json")
