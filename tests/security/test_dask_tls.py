"""Mutual TLS for Dask, for real on a local cluster: certificates shaped like the ones the
program issues (ECDSA P-256, one private CA, scheduler/worker/client pairs), a client with
the client certificate computes, a client without one (or with a foreign CA's) is refused,
and the environment variables the Helm values set are the ones Dask reads."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from distributed import Client, LocalCluster
from distributed.security import Security

from components.dask.values import TLS_KEYS
from workloads.endpoint import security_from_pems


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def issue_pki(folder: Path, roles=("scheduler", "worker", "client")) -> dict[str, str]:
    """A CA and one certificate per role, as components/dask/tls.py issues them."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
             "-out", "ca.crt", "-days", "2", "-subj", "/O=dask-tkg/CN=dask-tkg CA", cwd=folder)
    pems = {"ca.crt": (folder / "ca.crt").read_text()}
    for role in roles:
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{role}.key",
                 "-out", f"{role}.csr", "-subj", f"/O=dask-tkg/CN=dask-{role}", cwd=folder)
        (folder / "ext.cnf").write_text("subjectAltName=DNS:dask-scheduler,IP:127.0.0.1\n"
                                        "extendedKeyUsage=serverAuth,clientAuth\n")
        _openssl("x509", "-req", "-in", f"{role}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", f"{role}.crt", "-days", "2", "-extfile", "ext.cnf", cwd=folder)
        pems[f"{role}.crt"] = (folder / f"{role}.crt").read_text()
        pems[f"{role}.key"] = (folder / f"{role}.key").read_text()
    return pems


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return issue_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_cluster(pki):
    # PEM contents, not paths: what the pods get from the Secret through env variables.
    security = Security(tls_ca_file=pki["ca.crt"], tls_scheduler_cert=pki["scheduler.crt"],
                        tls_scheduler_key=pki["scheduler.key"], tls_worker_cert=pki["worker.crt"],
                        tls_worker_key=pki["worker.key"], tls_client_cert=pki["client.crt"],
                        tls_client_key=pki["client.key"], require_encryption=True)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, protocol="tls://", host="127.0.0.1",
                      security=security, dashboard_address=":0") as cluster:
        yield cluster


def test_scheduler_listens_on_tls(tls_cluster):
    assert tls_cluster.scheduler_address.startswith("tls://")


def test_client_with_the_outputs_certificate_computes(tls_cluster, pki, tmp_path):
    security = security_from_pems(pki["ca.crt"], pki["client.crt"], pki["client.key"])
    with Client(tls_cluster.scheduler_address, security=security, timeout=30) as client:
        assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6
    for pem in tmp_path.iterdir():
        assert pem.stat().st_mode & 0o077 == 0, f"{pem.name} is readable by others"


def test_client_without_a_certificate_is_refused(tls_cluster):
    with pytest.raises(Exception) as info:
        Client(tls_cluster.scheduler_address, timeout=5)
    assert "TLS" in str(info.value) or "Timed out" in str(info.value) or "ssl" in str(info.value).lower()


def test_client_with_another_ca_is_refused(tls_cluster, tmp_path):
    foreign = issue_pki(tmp_path / "foreign", roles=("client",))
    security = Security(tls_ca_file=foreign["ca.crt"], tls_client_cert=foreign["client.crt"],
                        tls_client_key=foreign["client.key"], require_encryption=True)
    with pytest.raises(Exception):
        Client(tls_cluster.scheduler_address, security=security, timeout=5)


def test_the_helm_values_env_variables_configure_dask(pki):
    """The pods get PEM contents through DASK_DISTRIBUTED__COMM__TLS__* variables; a fresh
    Python reading Dask's config must build a TLS Security from them alone."""
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
           "DASK_DISTRIBUTED__COMM__DEFAULT_SCHEME": "tls"}
    env.update({variable: pki[key] for key, variable in TLS_KEYS.items()})
    probe = ("import json, dask, distributed.security as s; sec = s.Security();"
             "print(json.dumps({'ca': sec.tls_ca_file, 'worker': sec.tls_worker_cert, 'client': sec.tls_client_key,"
             " 'require': sec.require_encryption, 'scheme': dask.config.get('distributed.comm.default-scheme')}))")
    out = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                    check=True).stdout)
    assert out == {"ca": pki["ca.crt"], "worker": pki["worker.crt"], "client": pki["client.key"],
                   "require": True, "scheme": "tls"}
