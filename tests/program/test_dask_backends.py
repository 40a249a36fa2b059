"""Both Dask backends follow one protocol (components/dask/backend.py): the same argument
shape, and exactly the outputs declared there, each a stack output the runner reads
(workloads/contract.py). A backend that declared or registered an output of its own would make
the runner's view of a stack depend on the backend."""
from __future__ import annotations

import inspect
import sys
from typing import get_origin, get_type_hints

import pulumi
import pytest

from components.dask.backend import OUTPUTS, DaskBackend, DaskBackendArgs
from components.dask.backends import BACKENDS
from components.settings.operator import BACKENDS as BACKEND_NAMES
from tests.operator.support import OPERATOR
from tests.program.graph import run_program
from workloads import contract


def _declared_outputs(cls: type) -> set[str]:
    """The ``pulumi.Output`` attributes ``cls`` itself annotates (not those it inherits)."""
    scope = vars(sys.modules[cls.__module__])
    hints = {name: eval(hint, scope) if isinstance(hint, str) else hint  # noqa: S307 (the module's own annotations)
             for name, hint in inspect.get_annotations(cls).items()}
    return {name for name, hint in hints.items() if hint is pulumi.Output or get_origin(hint) is pulumi.Output}


def test_every_backend_the_settings_accept_is_one_of_the_protocol():
    assert set(BACKENDS) == set(BACKEND_NAMES)
    for name, backend in BACKENDS.items():
        assert issubclass(backend, DaskBackend), name
        parameters = inspect.signature(backend.__init__).parameters
        assert list(parameters) == ["self", "name", "args", "opts"], name
        assert get_type_hints(backend.__init__)["args"] is DaskBackendArgs, name


def test_the_outputs_are_declared_once_and_each_is_read_by_the_runner():
    assert _declared_outputs(DaskBackend) == set(OUTPUTS)
    assert set(OUTPUTS.values()) <= contract.READ_BY_RUNNER
    for backend in BACKENDS.values():
        for cls in backend.__mro__[:backend.__mro__.index(DaskBackend)]:
            assert _declared_outputs(cls) == set(), f"{cls.__name__} declares outputs of its own"


@pytest.fixture(scope="module", params=["helm", "operator"])
def backend_graph(request):
    config = OPERATOR if request.param == "operator" else {}
    graph = run_program("reference", config=config)
    assert graph.error is None, graph.traceback
    return request.param, graph


def test_each_backend_registers_exactly_the_declared_outputs_and_the_stack_exports_them(backend_graph):
    name, graph = backend_graph
    [component] = graph.of_type(BACKENDS[name].TYPE)
    registered = graph.raw["component_outputs"][component.urn]
    assert set(registered) == set(OUTPUTS)
    assert set(OUTPUTS.values()) <= set(graph.outputs)
    assert graph.outputs[contract.DASK_CLUSTER_NAME] == (BACKENDS[name].SCALED_CLUSTER or "")
