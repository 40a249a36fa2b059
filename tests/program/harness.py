"""Run the Pulumi program under Pulumi's mocks and print its resource graph as JSON.

Usage: python tests/program/harness.py SPEC_JSON
SPEC_JSON: {"stack": "reference", "config": {key: value}, "secrets": {key: value},
            "mock": {"vgpu_profiles": {host: [profiles]}, "preview": false,
                     "benchmarks": {name: module}}}   # registry lines a test adds (a third benchmark)

Runs in its own process because Pulumi's mocks are process-global: every test run gets a
fresh engine. The program is the real ``__main__.py`` run with ``runpy``; config comes
from ``Pulumi.yaml`` defaults (applied by the settings loader), the stack file, then the
overrides, as the CLI would layer them. Parents, dependencies and resource options are
recorded from the register requests (``MockResourceArgs`` does not carry them).
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import runpy
import sys
import traceback
import uuid
from pathlib import Path

from google.protobuf import json_format

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.chdir(REPO)

import pulumi  # noqa: E402
import yaml  # noqa: E402
from pulumi.runtime.mocks import MockMonitor  # noqa: E402

from workloads.runs import benchmarks  # noqa: E402

PROJECT = "dask-tkg"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
SIG_KEY = "4dabf18193072939515e22adb298388d"


def plain(value):
    """Protobuf JSON with Pulumi's secret wrappers turned into {"__secret__": value}."""
    if isinstance(value, dict):
        if value.get(SIG_KEY) == SECRET_SIG:
            return {"__secret__": plain(value.get("value"))}
        if SIG_KEY in value:  # resource reference or asset: keep the visible fields
            return {k: plain(v) for k, v in value.items() if k != SIG_KEY}
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # protobuf Struct numbers are doubles; the program sent integers
    return value


# The Cluster API Secret <cluster>-kubeconfig holds an admin kubeconfig of this shape (a
# client certificate of system:masters, the cluster's CA inline); the runner's kubeconfig keeps
# only its server and CA.
ADMIN_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: tkc
  cluster:
    server: https://192.168.100.60:6443
    certificate-authority-data: bW9jay1jbHVzdGVyLWNh
users:
- name: tkc-admin
  user:
    client-certificate-data: bW9jay1hZG1pbi1jZXJ0aWZpY2F0ZQ==
    client-key-data: bW9jay1hZG1pbi1rZXk=
contexts:
- name: tkc-admin@tkc
  context: {cluster: tkc, user: tkc-admin}
current-context: tkc-admin@tkc
"""
RUNNER_TOKEN = "mock-runner-token"
# The workload cluster's UID (a Cluster API Cluster's metadata.uid), which vSphere CSI's
# paravirtual driver puts in front of each volume's handle (below).
CLUSTER_UID = "0b6f3a52-8a0e-4c1e-9d7a-2f64c1a3b1d5"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _default(state: dict, key: str, value) -> None:
    """Fill an output the provider would compute (dynamic resources pass it as None)."""
    if state.get(key) is None:
        state[key] = value


class GraphMocks(pulumi.runtime.Mocks):
    """Fabricates provider outputs; raises on an unknown invoke (returning {} would
    silently give id=None)."""

    def __init__(self, options: dict):
        self.options = options
        self.claims: dict[str, dict] = {}  # volume name -> the claim bound to it
        self.classes: dict[str, str] = {}  # StorageClass name -> provisioner
        self.nfs_values: dict = {}  # nfs-subdir-external-provisioner's nfs values (server, path, mountOptions)

    def bind_claim(self, state: dict) -> None:
        """A claim comes back Bound (pulumi-kubernetes waits for it: provider/pkg/await/awaiters.go
        ``untilCoreV1PersistentVolumeClaimReady``), to a volume ``pvc-<uid>`` as external
        provisioners name theirs (sig-storage-lib-external-provisioner: "pvc-" + the claim's UID)."""
        meta, spec = state.get("metadata") or {}, state.setdefault("spec", {})
        if not spec.get("volumeName"):
            uid = uuid.uuid5(uuid.NAMESPACE_URL, f"pvc/{meta.get('namespace')}/{meta.get('name')}")
            spec["volumeName"] = f"pvc-{uid}"
        self.claims[spec["volumeName"]] = {"metadata": meta, "spec": spec}
        state["status"] = {"phase": "Bound", "accessModes": spec.get("accessModes", [])}

    def bound_volume(self, name: str) -> dict:
        """The PersistentVolume a claim was bound to, as its provisioner made it:
        nfs-subdir-external-provisioner (cmd/nfs-subdir-external-provisioner/provisioner.go,
        ``Provision``): ``nfs`` with the chart's server, ``<path>/<namespace>-<claim>-<volume>`` and
        the StorageClass's mountOptions; vSphere CSI in a guest cluster
        (kubernetes-sigs/vsphere-csi-driver pkg/csi/service/wcpguest/controller.go: the handle is
        the Supervisor claim ``<cluster UID>-<volume UID>``; docs/book/features/file_volume.md: a
        file volume's attributes)."""
        claim = self.claims[name]
        meta, spec = claim["metadata"], claim["spec"]
        storage_class = spec.get("storageClassName", "")
        volume = {"capacity": {"storage": spec["resources"]["requests"]["storage"]},
                  "accessModes": spec.get("accessModes", []), "persistentVolumeReclaimPolicy": "Retain",
                  "storageClassName": storage_class, "volumeMode": "Filesystem",
                  "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta["namespace"], "name": meta["name"]}}
        if self.classes.get(storage_class) == "csi.vsphere.vmware.com":
            volume["csi"] = {"driver": "csi.vsphere.vmware.com", "volumeHandle": f"{CLUSTER_UID}-{name[4:]}",
                             "volumeAttributes": {"storage.kubernetes.io/csiProvisionerIdentity":
                                                  "1700000000000-8081-csi.vsphere.vmware.com",
                                                  "type": "vSphere CNS File Volume"}}
        else:
            path = f"{self.nfs_values['path'].rstrip('/')}/{meta['namespace']}-{meta['name']}-{name}"
            volume["nfs"] = {"server": self.nfs_values["server"], "path": path}
            volume["mountOptions"] = list(self.nfs_values.get("mountOptions") or [])
        return {"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": storage_class}},
                "spec": volume, "status": {"phase": "Bound"}}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        state = dict(args.inputs)
        rid = f"{args.name}-id"
        typ = args.typ
        if typ == "vsphere:index/virtualMachineClass:VirtualMachineClass":
            rid = state.get("name", args.name)
        elif typ.startswith("pulumi-python:dynamic"):
            if "policy_name" in state:
                _default(state, "policy_id", f"pbm-{state['policy_name']}")
                _default(state, "adopted", False)
            if "namespace" in state and "cluster" in state:
                _default(state, "config_status", "RUNNING")
            if "share_name" in state:
                _default(state, "share_uuid", f"share-{state['share_name']}")
                _default(state, "nfs_server", "192.168.100.50")
                _default(state, "nfs_path", f"/{state['share_name']}")
        elif typ == "kubernetes:core/v1:PersistentVolume" and args.resource_id:  # read: a claim's volume
            state = self.bound_volume(args.resource_id)
            rid = args.resource_id
        elif typ == "kubernetes:core/v1:PersistentVolumeClaim":
            self.bind_claim(state)
        elif typ == "kubernetes:storage.k8s.io/v1:StorageClass":
            self.classes[(state.get("metadata") or {}).get("name", "")] = state.get("provisioner", "")
        elif typ == "kubernetes:helm.sh/v3:Release":
            if isinstance((state.get("values") or {}).get("nfs"), dict):  # nfs-subdir-external-provisioner
                self.nfs_values = state["values"]["nfs"]
                self.classes[state["values"]["storageClass"]["name"]] = "nfs-subdir"
            _default(state, "status", {"name": state.get("name", args.name), "namespace": state.get("namespace", ""),
                                        "status": "deployed", "version": state.get("version", ""), "revision": 1})
        elif typ == "kubernetes:core/v1:Secret" and args.resource_id:  # a read Secret: the cluster's kubeconfig
            _default(state, "data", {"value": _b64(ADMIN_KUBECONFIG)})
        elif typ == "kubernetes:core/v1:Secret" and state.get("type") == "kubernetes.io/service-account-token":
            # filled by the token controller; pulumi-kubernetes reads it back once data is there
            # (provider/pkg/await/awaiters.go, untilCoreV1SecretInitialized)
            _default(state, "data", {"token": _b64(RUNNER_TOKEN), "ca.crt": _b64("mock-cluster-ca"),
                                     "namespace": _b64(state["metadata"]["namespace"])})
        elif typ == "tls:index/privateKey:PrivateKey":
            _default(state, "privateKeyPem",
                     f"-----BEGIN PRIVATE KEY-----\nmock-{args.name}\n-----END PRIVATE KEY-----\n")
        elif typ in ("tls:index/selfSignedCert:SelfSignedCert", "tls:index/locallySignedCert:LocallySignedCert"):
            _default(state, "certPem", f"-----BEGIN CERTIFICATE-----\nmock-{args.name}\n-----END CERTIFICATE-----\n")
        elif typ == "tls:index/certRequest:CertRequest":
            _default(state, "certRequestPem",
                     f"-----BEGIN CERTIFICATE REQUEST-----\nmock-{args.name}\n-----END CERTIFICATE REQUEST-----\n")
        elif typ == "random:index/randomString:RandomString":
            _default(state, "result", "mocksalt01234567")
        elif typ == "random:index/randomPassword:RandomPassword":
            _default(state, "result", "mock-generated-password-0123456789")
            _default(state, "bcrypt_hash", "$2a$10$mockhash")
        state.update(self.options.get("outputs", {}).get(args.name, {}))
        return rid, state

    def call(self, args: pulumi.runtime.MockCallArgs):
        tok, a = args.token, args.args
        if tok == "vsphere:index/getDatacenter:getDatacenter":
            return {"id": "datacenter-3", "name": a.get("name")}
        if tok == "vsphere:index/getComputeCluster:getComputeCluster":
            return {"id": "domain-c8", "name": a.get("name"), "datacenterId": a.get("datacenterId"),
                    "resourcePoolId": "resgroup-9"}
        if tok == "vsphere:index/getContentLibrary:getContentLibrary":
            return {"id": f"library-{a.get('name')}", "name": a.get("name")}
        if tok == "vsphere:index/getDatastore:getDatastore":
            return {"id": "datastore-12", "name": a.get("name"), "stats": {}}
        if tok == "vsphere:index/getHost:getHost":
            return {"id": f"host-{a.get('name')}", "name": a.get("name"), "resourcePoolId": "resgroup-9"}
        if tok == "vsphere:index/getHostVgpuProfile:getHostVgpuProfile":
            host = a["hostId"].removeprefix("host-")
            offered = self.options.get("vgpu_profiles", {}).get(host,
                                                                ["grid_a100-10c", "grid_a100-20c", "grid_a100-40c"])
            return {"hostId": a["hostId"], "id": a["hostId"], "vgpuProfiles": [
                {"vgpu": p, "diskSnapshotSupported": False, "memorySnapshotSupported": False,
                 "migrateSupported": True, "suspendSupported": True} for p in offered]}
        raise NotImplementedError(f"the mocks have no answer for invoke {tok}")


class RecordingMonitor(MockMonitor):
    def __init__(self, mocks):
        super().__init__(mocks)
        self.records: list[dict] = []
        self.outputs: dict[str, dict] = {}

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.records.append({
                "urn": response.urn,
                "type": request.type,
                "name": request.name,
                "custom": request.custom,
                "parent": request.parent,
                "dependencies": list(request.dependencies),
                "property_dependencies": {k: list(v.urns) for k, v in request.propertyDependencies.items()},
                "inputs": plain(json_format.MessageToDict(request.object)),
                "state": plain(json_format.MessageToDict(response.object)),
                "protect": request.protect,
                "retain_on_delete": request.retainOnDelete,
                "ignore_changes": list(request.ignoreChanges),
                "replace_on_changes": list(request.replaceOnChanges),
                "delete_before_replace": request.deleteBeforeReplace,
                "additional_secret_outputs": list(request.additionalSecretOutputs),
                "provider": request.provider,
                "custom_timeouts": json_format.MessageToDict(request.customTimeouts),
            })
        return response

    def ReadResource(self, request):
        response = super().ReadResource(request)
        self.records.append({
            "urn": response.urn, "type": request.type, "name": request.name, "custom": True, "read": True,
            "id": request.id, "parent": request.parent, "dependencies": list(request.dependencies),
            "property_dependencies": {}, "inputs": plain(json_format.MessageToDict(request.properties)),
            "state": plain(json_format.MessageToDict(response.properties)), "protect": False,
            "retain_on_delete": False, "ignore_changes": [], "replace_on_changes": [],
            "delete_before_replace": False, "additional_secret_outputs": list(request.additionalSecretOutputs),
            "provider": request.provider, "custom_timeouts": {},
        })
        return response

    def RegisterResourceOutputs(self, request):
        self.outputs[request.urn] = plain(json_format.MessageToDict(request.outputs))
        return super().RegisterResourceOutputs(request)


def stack_config(stack: str | None) -> dict:
    if not stack:
        return {}
    doc = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text()) or {}
    return dict(doc.get("config") or {})


def main() -> int:
    spec = json.loads(sys.argv[1])
    config = stack_config(spec.get("stack"))
    config.update({f"{PROJECT}:{k}" if ":" not in k else k: v for k, v in spec.get("config", {}).items()})
    secrets = {f"{PROJECT}:{k}" if ":" not in k else k: v for k, v in spec.get("secrets", {}).items()}
    config.update(secrets)
    as_strings = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items() if v is not None}
    pulumi.runtime.set_all_config(as_strings, list(secrets))
    mocks = GraphMocks(spec.get("mock", {}))
    benchmarks.BENCHMARKS.update(spec.get("mock", {}).get("benchmarks", {}))
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=spec.get("stack") or "test",
                             preview=spec.get("mock", {}).get("preview", False), monitor=monitor)
    result: dict = {"error": None}
    warnings: list[str] = []
    real_warn = pulumi.log.warn

    def recording_warn(msg: str, resource: pulumi.Resource | None = None, stream_id: int | None = None,
                       ephemeral: bool | None = None) -> None:
        """What the program says at preview, kept for the tests (and still sent on)."""
        warnings.append(msg)
        real_warn(msg, resource, stream_id, ephemeral)

    pulumi.log.warn = recording_warn

    exports: dict = {}

    async def resolve_exports(stack) -> None:
        for key, value in stack.outputs.items():
            output = pulumi.Output.from_input(value)
            resolved, secret = await output.future(), await output.is_secret()
            exports[key] = {"__secret__": resolved} if secret else resolved

    @pulumi.runtime.test
    def program():
        runpy.run_path(str(REPO / "__main__.py"), run_name="__main__")
        # Stack outputs are only registered when a real engine finishes the stack:
        # resolve the exported Outputs here, keeping whether each is secret.
        return asyncio.ensure_future(resolve_exports(pulumi.runtime.get_root_resource()))

    try:
        program()
    except BaseException as exc:  # the test decides what an error means
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
    result["resources"] = monitor.records
    result["outputs"] = exports
    result["component_outputs"] = monitor.outputs  # urn -> what a component registered (register_outputs)
    result["warnings"] = warnings
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
