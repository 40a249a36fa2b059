"""The prepared environment's check in the pods the pinned dask chart renders, through the
release's post-renderer as Helm runs it: every Deployment whose pod mounts the environment
(the operator backend's Jupyter; the Helm backend always runs the image as it is) starts with
the ``verify-environment`` init container, hardened like the others; a pod without the
environment gets none."""
from __future__ import annotations

import pytest

import components.kube.prepared_env as prepared_env
from tests.render.program import program_releases


def deployments(variant: str, **config) -> list[dict]:
    return program_releases(variant, **config)["dask"].render().of_kind("Deployment")


@pytest.mark.parametrize("variant, config, expected", [
    # the operator backend runs Jupyter from the chart (its worker Deployment too, at 0 replicas)
    ("dev", {}, {"dask-jupyter", "dask-worker"}),
    ("full", {}, {"dask-jupyter", "dask-worker"}),
])
def test_each_chart_pod_with_the_environment_checks_it_first(helm, variant, config, expected):
    checked = set()
    for deployment in deployments(variant, **config):
        pod = deployment["spec"]["template"]["spec"]
        mounts = [m for c in pod["containers"] for m in c.get("volumeMounts", [])
                  if m["mountPath"] == prepared_env.ENV_MOUNT]
        if not mounts:
            assert prepared_env.VERIFY_CONTAINER not in {c["name"] for c in pod.get("initContainers", [])}
            continue
        first = pod["initContainers"][0]
        assert first["name"] == prepared_env.VERIFY_CONTAINER
        assert first["env"][0]["valueFrom"]["configMapKeyRef"] == {
            "name": prepared_env.DIGESTS_CONFIG_MAP, "key": prepared_env.record_key(mounts[0]["subPath"])}
        assert first["volumeMounts"] == [prepared_env.pod_mount(mounts[0]["subPath"])]
        assert first["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
        checked.add(deployment["metadata"]["name"])
    assert checked == expected


def test_the_helm_backend_without_the_environment_gets_no_check(helm):
    for deployment in deployments("reference"):
        pod = deployment["spec"]["template"]["spec"]
        assert prepared_env.VERIFY_CONTAINER not in {c["name"] for c in pod.get("initContainers", [])}
