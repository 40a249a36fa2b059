"""The three dynamic resources register under Pulumi's mocks with the inputs their
providers read and the outputs components wire.

Mocks are process-global, so this runs in a child interpreter and leaves the
suite's own mock session alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json
    import pulumi

    registered = []

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            registered.append({"type": args.typ, "name": args.name, "inputs": sorted(args.inputs)})
            outs = dict(args.inputs)
            outs.update(policy_id="pid", adopted=False, config_status="RUNNING",
                        share_uuid="uuid", nfs_server="10.0.0.9", nfs_path="/vsanfs/ml-share")
            return [args.name + "-id", outs]

        def call(self, args):
            raise NotImplementedError(args.token)

    pulumi.runtime.set_mocks(Mocks(), preview=False)

    from components.vsphere.access import VCenterAccess
    from components.vsphere.providers.file_share import VsanFileShare
    from components.vsphere.providers.namespace_rest import SupervisorNamespace
    from components.vsphere.providers.spbm import VsanStoragePolicy

    conn = dict(vcenter=VCenterAccess(server="vc.example.com", user="administrator@vsphere.local",
                                      password=pulumi.Output.secret("not-a-real-password")))

    @pulumi.runtime.test
    def build():
        policy = VsanStoragePolicy("r5", None, policy_name="vsan-r5", description="d",
                                   rules={"hostFailuresToTolerate": 1,
                                          "replicaPreference": "RAID-5/6 (Erasure Coding) - Capacity"}, **conn)
        ns = SupervisorNamespace("ns", None, namespace="dask", cluster="domain-c8",
                                 storage_specs=[{"policy": policy.policy_id, "limit": 1024}],
                                 vm_classes=["best-effort-medium"], content_libraries=["lib"], **conn)
        share = VsanFileShare("share", None, share_name="ml-share", cluster="domain-c8", quota_gib=2048,
                              policy_id=policy.policy_id,
                              net_permissions=[{"ips": "*", "permissions": "READ_WRITE", "allow_root": True}], **conn)
        outs = [policy.policy_id, policy.adopted, ns.namespace, ns.config_status, share.nfs_server, share.nfs_path]
        report = lambda values: print(json.dumps({"outs": values, "registered": registered}))  # noqa: E731
        return pulumi.Output.all(*outs).apply(report)

    build()
    """
)


def test_resources_register_with_their_type_tokens_and_outputs():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], check=False, cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["outs"] == ["pid", False, "dask", "RUNNING", "10.0.0.9", "/vsanfs/ml-share"]
    types = {r["type"]: r["inputs"] for r in report["registered"]}
    assert set(types) == {
        "pulumi-python:dynamic/vsphere:VsanStoragePolicy",
        "pulumi-python:dynamic/vsphere:SupervisorNamespace",
        "pulumi-python:dynamic/vsphere:VsanFileShare",
    }
    for inputs in types.values():
        assert {"__provider", "server", "user", "password", "port"} <= set(inputs)
    assert "not-a-real-password" not in proc.stdout + proc.stderr
