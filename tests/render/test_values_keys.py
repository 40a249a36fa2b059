"""Every values key the program emits exists in the pinned chart's own values.yaml (or in
the program's commented allow-list of keys the chart documents only in comments), with a
value of the kind the chart's default has. Helm ignores an unknown key without a word."""
from __future__ import annotations

import re
import tarfile
from typing import Any

import pytest

from components.addons.values import GPU_OPERATOR_KEYS_NOT_IN_VALUES_YAML, NFS_PROVISIONER_KEYS_NOT_IN_VALUES_YAML
from components.facts.dask_chart import KEYS_NOT_IN_VALUES_YAML
from tests.render.helm import chart_values
from tests.render.program import VARIANTS, program_releases

ALLOWED = {
    "dask": KEYS_NOT_IN_VALUES_YAML,
    "gpu-operator": GPU_OPERATOR_KEYS_NOT_IN_VALUES_YAML,
    "nfs-subdir-external-provisioner": NFS_PROVISIONER_KEYS_NOT_IN_VALUES_YAML,
    "dask-kubernetes-operator": {},
}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def undeclared(emitted: dict, defaults: Any, allowed: dict[str, str], prefix: str = "") -> list[str]:
    """Dotted paths the chart's values.yaml does not declare, or whose value is of another kind.

    A default of null, ``{}`` or ``[]`` is a free-form value the templates pass through
    (``toYaml``): anything of that container kind is accepted under it.
    """
    problems = []
    for key, value in emitted.items():
        path = f"{prefix}{key}"
        if path in allowed:
            continue
        if not isinstance(defaults, dict) or key not in defaults:
            problems.append(f"{path}: not in the chart's values.yaml")
            continue
        default = defaults[key]
        if default is None:
            continue
        if isinstance(default, dict) and default and isinstance(value, dict):
            problems += undeclared(value, default, allowed, f"{path}.")
        elif _kind(default) != _kind(value) and not (isinstance(default, str) and value is None):
            problems.append(f"{path}: the chart's default is a {_kind(default)}, the program gives a {_kind(value)}")
    return problems


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_emitted_key_is_one_the_chart_declares(variant):
    for chart, release in program_releases(variant).items():
        assert undeclared(release.values, chart_values(release.archive), ALLOWED[chart]) == [], (variant, chart)


def test_a_key_at_the_wrong_level_or_of_the_wrong_kind_is_found():
    release = program_releases("reference-dev")["dask"]
    defaults = chart_values(release.archive)
    # The RAPIDS docs' sample put dask_worker under worker instead of worker.image.
    assert undeclared({"worker": {"dask_worker": "dask-cuda-worker"}}, defaults, {}) == [
        "worker.dask_worker: not in the chart's values.yaml"]
    assert undeclared({"scheduler": {"replicas": "1"}}, defaults, {}) == [
        "scheduler.replicas: the chart's default is a number, the program gives a str"]


@pytest.mark.parametrize("chart", list(ALLOWED))
def test_each_allowed_key_is_read_by_the_chart(chart):
    """The allow-list cannot rot: each entry is really absent from values.yaml and its
    template expression is in the chart's templates."""
    release = next(r for v in VARIANTS for r in program_releases(v).values() if r.chart == chart)
    with tarfile.open(release.archive) as archive:
        texts = {m.name: archive.extractfile(m).read().decode() for m in archive.getmembers() if m.isfile()}
    templates = "\n".join(text for name, text in texts.items() if "/templates/" in name)
    defaults = chart_values(release.archive)
    for path, expression in ALLOWED[chart].items():
        assert undeclared(_nested(path), defaults, {}) != [], f"{path} is in values.yaml: drop it from the allow-list"
        assert re.search(re.escape(expression) + r"\b", templates), f"no template of {chart} reads {expression}"


def _nested(path: str) -> dict:
    out: dict = {"__leaf__": None}
    for part in reversed(path.split(".")):
        out = {part: out}
    return out
