"""Throw-away certificate authorities for the stand-ins, made with ``openssl``: a CA, leaf
certificates it signs, and the service-account key pair a kube-apiserver signs tokens with.

ECDSA P-256 throughout (the API server takes ECDSA serving certificates and signs
service-account tokens with ES256): key generation is instant, where three RSA-2048 keys
take about 2 s on these machines. Everything is valid for three days.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
# the names the in-cluster clients dial the API server by
KUBERNETES_DNS_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")


def openssl(*args: str, cwd: Path) -> None:
    """One ``openssl`` command in ``cwd``; its error output is kept on the CalledProcessError."""
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)


def make_ca(pki: Path, common_name: str) -> None:
    """``ca.key`` and the self-signed ``ca.crt`` in ``pki`` (made if missing)."""
    pki.mkdir(parents=True, exist_ok=True)
    openssl("req", "-x509", *EC, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3",
            "-subj", f"/CN={common_name}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=pki)


def sign(pki: Path, name: str, subject: str, extensions: str) -> None:
    """``<name>.key`` and ``<name>.crt`` for ``subject``, signed by the CA in ``pki`` with the
    X.509v3 ``extensions`` (openssl's extension file syntax, one per line)."""
    (pki / f"{name}.ext").write_text(extensions)
    openssl("req", *EC, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=pki)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "3", "-extfile", f"{name}.ext", cwd=pki)


def serving_extensions(sans: list[str], *, key_identifiers: bool = False) -> str:
    """The extensions of a TLS server certificate for the subject alternative names ``sans``."""
    text = (f"subjectAltName={','.join(sans)}\nbasicConstraints=critical,CA:FALSE\n"
            "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    if key_identifiers:
        text += "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
    return text


def service_account_keys(pki: Path) -> None:
    """``sa.key`` and ``sa.pub``: what the API server signs and checks service-account tokens with."""
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key", cwd=pki)
    openssl("ec", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def make_pki(pki: Path) -> None:
    """The kube-apiserver stand-in's PKI: a CA, a serving certificate for 127.0.0.1 and the
    in-cluster names (``apiserver.crt``), and service-account keys."""
    make_ca(pki, "dask-tkg-test-ca")
    sans = ["IP:127.0.0.1", *(f"DNS:{name}" for name in KUBERNETES_DNS_NAMES)]
    sign(pki, "apiserver", "/CN=kube-apiserver", serving_extensions(sans, key_identifiers=True))
    service_account_keys(pki)


def self_signed_pem(folder: Path, common_name: str, *, ip_san: str | None = None) -> tuple[Path, Path]:
    """A self-signed certificate (its own CA, valid one day) and its key, as ``c.pem`` and ``k.pem``
    in ``folder``: a fake server's identity, or a CA that trusts nothing the tests serve."""
    folder.mkdir(parents=True, exist_ok=True)
    san = ("-addext", f"subjectAltName=IP:{ip_san}") if ip_san else ()
    openssl("req", "-x509", *EC, "-keyout", "k.pem", "-out", "c.pem", "-days", "1",
            "-subj", f"/CN={common_name}", *san, cwd=folder)
    return folder / "c.pem", folder / "k.pem"
