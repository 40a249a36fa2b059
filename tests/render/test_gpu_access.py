"""GPUs only through the device plugin, in the ClusterPolicy the pinned GPU operator chart renders
from the program's values: on the current stacks (GPU operator v26.7.0) CDI is on and the
toolkit ignores ``NVIDIA_VISIBLE_DEVICES`` in unprivileged containers, so a pod that requests no
``nvidia.com/gpu`` sees no GPU whatever its variables or its image's (CUDA images set it to
``all``); the paper's stack (v1.9.1, no CDI) stays as published."""
from __future__ import annotations

import pytest

from components.addons.values import UNPRIVILEGED_ENVVAR
from tests.render.program import program_releases


def cluster_policy(variant: str) -> dict:
    return program_releases(variant)["gpu-operator"].render().named("ClusterPolicy", "cluster-policy")["spec"]


@pytest.mark.parametrize("variant", ["dev", "full"])
def test_the_toolkit_refuses_the_variable_and_cdi_carries_the_allocation(helm, variant):
    spec = cluster_policy(variant)
    assert spec["cdi"]["enabled"] is True
    assert {"name": UNPRIVILEGED_ENVVAR, "value": "false"} in spec["toolkit"]["env"]


def test_the_papers_operator_is_left_as_published(helm):
    spec = cluster_policy("reference")
    assert UNPRIVILEGED_ENVVAR not in {e.get("name") for e in spec.get("toolkit", {}).get("env") or []}
