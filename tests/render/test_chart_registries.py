"""The registries ``components/facts/network_facts.py`` lists for each pinned chart are those
of the images the real Helm engine renders from it with the program's values: every ``image``
of the rendered objects, and every ``repository`` (the GPU operator's ClusterPolicy names its
operands by repository, image and version; the operator pulls them when it starts them). So the
network list (``network_requirements``) names every registry a stack's releases pull from, and
no registry a chart no longer uses."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.facts import network_facts
from components.settings.network_requirements import registry_hosts
from tests.render.program import program_releases
from tests.render.stacks import stack_settings


def image_fields(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """Every ``image`` and ``repository`` string of a rendered object, with its key."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from image_fields(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from image_fields(v, key)
    elif isinstance(value, str) and key in ("image", "repository"):
        yield key, value


def rendered_registries(objects: tuple[dict, ...]) -> set[str]:
    """The registry hosts the objects pull from (a bare operand name, whose repository sits
    beside it, names none)."""
    out: set[str] = set()
    for key, text in (f for o in objects for f in image_fields(o)):
        if key == "image" and "/" not in text and ":" not in text:
            continue  # e.g. ClusterPolicy's ``image: dcgm`` under ``repository: nvcr.io/nvidia``
        out.update(host for host, _ in registry_hosts(text if key == "image" else f"{text}/x"))
    return out


def named_by_settings(stack: str, chart: str) -> set[str]:
    """The registries the settings name for a release (not chart facts)."""
    s = stack_settings(stack, {})
    images = {"gpu-operator": [f"{s.gpu_operator.driver_repository}/{s.gpu_operator.driver_image}"],
              "dask": [s.dask.image]}.get(chart, [])
    return {host for image in images for host, _ in registry_hosts(image)}


@pytest.mark.parametrize("stack", ["dev", "reference"])
def test_each_release_pulls_from_the_registries_the_network_list_names(stack):
    for chart, release in program_releases(stack).items():
        facts = set(network_facts.CHART_REGISTRIES[(chart, release.version)])
        rendered = rendered_registries(release.render().objects)
        assert rendered == facts | named_by_settings(stack, chart), (chart, release.version)
        assert facts <= rendered, f"{chart} {release.version}: a listed registry no image uses"
