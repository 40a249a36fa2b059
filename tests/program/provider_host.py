"""The engine's side of a dynamic provider, without the Pulumi CLI.

Under ``pulumi up`` the engine starts the Python dynamic-provider host (the SDK's
``pulumi.dynamic.__main__``: ``python -m pulumi.dynamic`` prints the port of a gRPC
``ResourceProvider`` server), calls ``Configure``, and then ``Check``/``Diff``/
``Create``/``Update``/``Delete`` with each resource's properties, whose ``__provider``
is the provider the program serialized. The host deserializes it (dill) in its own,
fresh process. :class:`ProviderHost` starts that same module in a new interpreter and
speaks the same gRPC requests to it, so a provider that pickles something it cannot
restore, or leans on state of the program's process, fails here.

Properties go over the wire as the engine sends them to a host that does not accept
secrets (``Configure`` answers ``acceptSecrets: false``): plain values, with
``rpc.UNKNOWN`` where a value is not known yet (preview).
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

REPO = Path(__file__).resolve().parents[2]


def to_struct(props: dict[str, Any]) -> struct_pb2.Struct:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(props, {}))
    finally:
        loop.close()


def from_struct(struct: struct_pb2.Struct) -> dict[str, Any]:
    return rpc.deserialize_properties(struct, True)


@dataclass
class Diff:
    changes: bool
    replaces: list[str]
    delete_before_replace: bool


class ProviderHost:
    """``python -m pulumi.dynamic`` in a fresh interpreter, driven over gRPC."""

    def __init__(self, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "pulumi.dynamic"],
            cwd=REPO,  # the engine runs the host in the project directory
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PULUMI_PROJECT": "dask-tkg", **(env or {})},
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None  # both PIPE
        self.stdout, self.stderr_pipe = self.proc.stdout, self.proc.stderr
        port = self.stdout.readline().decode().strip()
        if not port.isdigit():
            self.close()
            raise RuntimeError(f"the dynamic provider host did not start: {self.stderr()}")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)
        self.stub.Configure(provider_pb2.ConfigureRequest(args=to_struct({})))
        self.calls: list[str] = []

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return ""
        return self.stderr_pipe.read().decode(errors="replace")[-3000:]

    def check(self, urn: str, olds: dict, news: dict) -> tuple[dict, list[tuple[str, str]]]:
        self.calls.append("check")
        resp = self.stub.Check(provider_pb2.CheckRequest(urn=urn, olds=to_struct(olds), news=to_struct(news)))
        return from_struct(resp.inputs), [(f.property, f.reason) for f in resp.failures]

    def diff(self, id_: str, urn: str, olds: dict, news: dict) -> Diff:
        self.calls.append("diff")
        resp = self.stub.Diff(provider_pb2.DiffRequest(id=id_, urn=urn, olds=to_struct(olds), news=to_struct(news)))
        return Diff(resp.changes == provider_pb2.DiffResponse.DIFF_SOME, list(resp.replaces),
                    resp.deleteBeforeReplace)

    def create(self, urn: str, props: dict) -> tuple[str, dict]:
        self.calls.append("create")
        resp = self.stub.Create(provider_pb2.CreateRequest(urn=urn, properties=to_struct(props)))
        return resp.id, from_struct(resp.properties)

    def update(self, id_: str, urn: str, olds: dict, news: dict) -> dict:
        self.calls.append("update")
        resp = self.stub.Update(provider_pb2.UpdateRequest(id=id_, urn=urn, olds=to_struct(olds),
                                                           news=to_struct(news)))
        return from_struct(resp.properties)

    def delete(self, id_: str, urn: str, props: dict) -> None:
        self.calls.append("delete")
        self.stub.Delete(provider_pb2.DeleteRequest(id=id_, urn=urn, properties=to_struct(props)))

    def close(self) -> None:
        if getattr(self, "channel", None) is not None:
            self.channel.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stdout.close()
        self.stderr_pipe.close()

    def __enter__(self) -> ProviderHost:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
