"""What the program declares for the guest cluster, taken from its run under Pulumi's mocks
(tests.program.graph) and from the same settings loader it uses: objects, the Dask release's
values, node pools and the VM classes behind them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.settings import DictSource
from components.settings.build import load
from components.settings.model import Settings
from tests.program.graph import SECRETS, run_program
from tests.program.harness import stack_config

PROJECT = "dask-tkg"
# The stacks of the issue: name -> (stack file, config overrides)
STACKS: dict[str, tuple[str, dict[str, Any]]] = {
    "reference": ("reference", {}),
    "reference-dev": ("reference-dev", {}),
    "topology-b": ("reference", {"jupyterGpu": True, "gpuWorkers": 0}),
    "dev": ("dev", {}),  # the defaults: the current platform, the operator backend, the CPython image
}


def stack_settings(stack: str, overrides: dict[str, Any] | None = None) -> Settings:
    """The program's Settings for a stack file plus overrides (the mocks' dummy secrets)."""
    values: dict[str, Any] = {}
    provider: dict[str, Any] = {}
    for key, value in {**stack_config(stack), **SECRETS}.items():
        namespace, _, name = key.rpartition(":")
        if namespace in ("", PROJECT):
            values[name] = value
        else:
            provider[key] = value
    values.update(overrides or {})
    return load(DictSource(values, provider))


@dataclass(frozen=True)
class DeclaredStack:
    name: str
    settings: Settings
    objects: list[dict]
    releases: dict[str, dict]  # release name -> the Release resource's inputs
    outputs: dict  # the stack's exports (secrets as {"__secret__": value})

    def of_kind(self, kind: str) -> list[dict]:
        return [o for o in self.objects if o["kind"] == kind]

    @property
    def dask_release(self) -> dict:
        return self.releases["dask"]

    @property
    def dask_namespace(self) -> str:
        return self.dask_release["namespace"]


def declared_stack(name: str, config: dict[str, Any] | None = None) -> DeclaredStack:
    """The stack's declared objects; ``config`` adds settings (as ``pulumi config set`` would)."""
    stack, overrides = STACKS[name]
    overrides = {**overrides, **(config or {})}
    graph = run_program(stack, config=overrides)
    if graph.error is not None:
        raise RuntimeError(f"the program failed for stack {name}: {graph.traceback}")
    objects = [r.manifest() for r in graph.kubernetes_objects()]
    releases = {r.inputs.get("name"): r.inputs for r in graph.of_type("Release")}
    return DeclaredStack(name, stack_settings(stack, overrides), objects, releases, dict(graph.outputs))


def dev_stack(config: dict[str, Any] | None = None) -> DeclaredStack:
    """The current stack ``dev`` (the defaults), checked to be what the tests on it assume."""
    stack = declared_stack("dev", config)
    assert stack.outputs["daskBackend"] == "operator" and stack.outputs["daskImage"].startswith("python:3.11.")
    return stack


def vm_class_nodes(settings: Settings) -> list[dict]:
    """Node objects shaped like the stack's pools: the VM class's vCPUs and memory, one
    ``nvidia.com/gpu`` per vGPU class (a time-sliced vGPU profile is one device to the
    guest), the pool's labels, as TKG labels its nodes (pool labels from the TKC spec)."""
    nodes = []
    for pool in settings.cluster.node_pools:
        vm_class = settings.vm_class(pool.vm_class)
        capacity = {"cpu": str(vm_class.cpus), "memory": f"{vm_class.memory_mb}Mi", "pods": "110"}
        if vm_class.has_gpu:
            capacity["nvidia.com/gpu"] = "1"
        for i in range(pool.replicas):
            name = f"vmc-{pool.name}-{i}"
            labels = {**pool.labels, "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                      "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": pool.vm_class,
                      "dask-tkg.test/shape": "vm-class"}
            nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                          "status": {"capacity": capacity, "allocatable": dict(capacity)}})
    return nodes
