"""Pure builders: TKC manifests, Helm values, secrets formats (no engine needed)."""
from __future__ import annotations

import base64
import json

import pytest
from argon2 import PasswordHasher

from components.addons.gpu_operator import docker_config
from components.addons.values import gpu_operator_values, licensing_uses_secret, nfs_provisioner_values
from components.cluster.manifests import tkc_manifest
from components.dask import post_render
from components.dask.jupyter_password import jupyter_hash
from components.dask.values import dask_values, labextension_config
from tests.unit.support import settings, values_inputs
from workloads.contract import TLS_DIR, TLS_KEYS, TLS_VOLUME


def test_tkc_v1alpha3_waits_on_the_ready_condition_and_asks_for_ubuntu():
    s = settings(vsphereVersion=8, supervisorId="sv", clusterApi="run.tanzu.vmware.com/v1alpha3",
                 tkr="v1.21.6---vmware.1-tkg.1")  # v1alpha3 needs a TKR >= 1.21
    m = tkc_manifest(s.cluster, "dask")
    assert m["apiVersion"] == "run.tanzu.vmware.com/v1alpha3"
    assert m["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Ready"
    assert m["metadata"]["annotations"]["run.tanzu.vmware.com/resolve-os-image"] == "os-name=ubuntu"


def test_tkc_storage_settings_list_every_class_used():
    m = tkc_manifest(settings().cluster, "dask")
    assert m["spec"]["settings"]["storage"] == {"classes": ["vsan-r1-sw8", "vsan-r5"], "defaultClass": "vsan-r5"}
    assert m["spec"]["settings"]["network"]["cni"] == {"name": "antrea"}


def test_tls_material_reaches_each_role_as_files_never_as_values():
    """The env names files under the TLS mount (no key material, no secretKeyRef); the chart's
    Deployments get exactly their role's keys mounted (post_render, as Helm runs it)."""
    values = dask_values(values_inputs(settings()))
    assert values["scheduler"]["extraArgs"] == ["--protocol", "tls"]

    def files(role):
        return {e["value"].removeprefix(TLS_DIR + "/") for e in values[role]["env"]
                if e["name"] in TLS_KEYS.values()}

    assert files("scheduler") == {"ca.crt", "scheduler.crt", "scheduler.key"}
    assert files("worker") == {"ca.crt", "worker.crt", "worker.key", "client.crt", "client.key"}
    assert files("jupyter") == {"ca.crt", "client.crt", "client.key"}
    assert not any("valueFrom" in e or "BEGIN" in str(e.get("value")) for role in ("scheduler", "worker", "jupyter")
                   for e in values[role]["env"])
    for role in ("scheduler", "worker", "jupyter"):
        deployment = {"kind": "Deployment",
                      "metadata": {"name": f"dask-{role}", "labels": {"app": "dask", "release": "dask"}},
                      "spec": {"template": {"spec": {"containers": [{"name": role, "env": values[role]["env"]}]}}}}
        spec = post_render.harden(deployment)["spec"]["template"]["spec"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == TLS_VOLUME]
        assert volume["secret"]["secretName"] == "dask-tls"
        server = {"jupyter.crt", "jupyter.key"} if role == "jupyter" else set()  # the Jupyter server's own
        assert {i["key"] for i in volume["secret"]["items"]} == files(role) | server
        assert {"name": TLS_VOLUME, "mountPath": TLS_DIR, "readOnly": True} in spec["containers"][0]["volumeMounts"]
    plain = dask_values(values_inputs(settings(daskTls=False), tls_secret=None))
    assert plain["scheduler"]["extraArgs"] == []
    assert not any(e["name"] in TLS_KEYS.values() for e in plain["worker"]["env"])


def test_extra_pip_packages_become_the_worker_env():
    values = dask_values(values_inputs(settings(extraPipPackages="torch==2.5.1")))
    assert {"name": "EXTRA_PIP_PACKAGES", "value": "torch==2.5.1"} in values["worker"]["env"]


def test_labextension_config_is_python_that_writes_the_default_url(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.prefix", str(tmp_path))
    exec(compile(labextension_config("http://dask-scheduler.ns.svc.cluster.local:8787"), "cfg", "exec"), {})
    written = json.loads((tmp_path / "share/jupyter/lab/settings/overrides.json").read_text())
    assert written == {"dask-labextension:plugin": {"defaultURL": "http://dask-scheduler.ns.svc.cluster.local:8787"}}


def test_labextension_config_that_cannot_write_keeps_the_rest_of_the_config(tmp_path, monkeypatch, capsys):
    """The chart puts it after the password in one file, and a config file that raises is
    dropped whole (traitlets 5.16.1 Application._load_config_files): Jupyter would then start
    with a random token. An unwritable prefix (here a file, so even root cannot) is reported."""
    blocked = tmp_path / "prefix"
    blocked.write_text("")
    monkeypatch.setattr("sys.prefix", str(blocked))
    config = {"password": None}
    exec(compile(labextension_config("http://s:8787") + "\npassword = 'kept'", "cfg", "exec"), config)
    assert config["password"] == "kept"
    assert "the Dask dashboard's default URL was not written" in capsys.readouterr().err


@pytest.mark.parametrize("version, expected", [
    ("v1.9.1", {"configMapName": "licensing-config", "nlsEnabled": True}),  # NVAIE 1.1: NLS
    ("v24.9.2", {"configMapName": "licensing-config", "nlsEnabled": True}),
    ("v25.10.0", {"secretName": "licensing-config", "nlsEnabled": True}),
])
def test_gpu_operator_licensing_follows_the_chart_version(version, expected):
    # versions scripts/artifacts.toml does not pin deploy by a site's pin (nothing is fetched here)
    pin = f"repo=https://nvidia.github.io/gpu-operator/stable,chart=gpu-operator,version={version},sha256={'0' * 64}"
    spec = settings(gpuOperatorVersion=version, chartPins=[pin]).gpu_operator
    assert gpu_operator_values(spec, enforces_psp=False)["driver"]["licensingConfig"] == expected
    assert licensing_uses_secret(spec) == ("secretName" in expected)


def test_psp_values_only_where_psp_is_enforced():
    s = settings()
    assert gpu_operator_values(s.gpu_operator, enforces_psp=True)["psp"] == {"enabled": True}
    assert "psp" not in gpu_operator_values(s.gpu_operator, enforces_psp=False)
    nfs = nfs_provisioner_values(s.storage, "10.0.0.5", "/ml", enforces_psp=True)
    assert nfs["storageClass"]["accessModes"] == "ReadWriteMany" and nfs["storageClass"]["reclaimPolicy"] == "Retain"
    assert nfs["podSecurityPolicy"] == {"enabled": True}


def test_ngc_pull_secret_format():
    doc = json.loads(docker_config("nvcr.io/nvaie", "KEY"))
    entry = doc["auths"]["nvcr.io/nvaie"]
    assert entry["username"] == "$oauthtoken" and entry["password"] == "KEY"
    assert base64.b64decode(entry["auth"]).decode() == "$oauthtoken:KEY"


def test_jupyter_hash_verifies_and_is_stable():
    first, second = jupyter_hash("s3cret-pass", "salt-0123456789"), jupyter_hash("s3cret-pass", "salt-0123456789")
    assert first == second and first.startswith("argon2:$argon2id$")
    assert PasswordHasher().verify(first.removeprefix("argon2:"), "s3cret-pass")
    assert jupyter_hash("dask", "salt-0123456789") != first
