"""TLS of a person's own cluster: a CA and one certificate per role, made by the runner,
in a Secret its pods mount as the stack's pods mount theirs.

The same shape as the stack's (components/dask/tls.py, which this layer does not import):
ECDSA P-256 keys; each certificate may do only what its role does (extended key usage, RFC
5280 4.2.1.12): the scheduler and the workers listen and dial (server and client auth), the
runner only dials (client auth); only the scheduler's carries names, its Service's, which the
runner's client checks (server_name.py). The CA's key signs these three and is then dropped:
nothing else can ever be certified for this cluster. Keys live in the runner's memory and in
the Secret, never on the runner's disk and never in output.

The pods see the Secret as files, only their role's keys, named by Dask's config variables:
the layout of workloads/contract.py (``tls_volume``, ``tls_env``), the stack's pods' too.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

VALIDITY = dt.timedelta(days=30)  # a kept cluster outlives its run; the idle timeout ends most sooner


def secret_name(cluster: str) -> str:
    return f"dask-tls-{cluster}"


def issue(scheduler_names: list[str], now: dt.datetime | None = None) -> dict[str, str]:
    """A fresh CA and the scheduler's, a worker's and the client's certificate and key, as PEM
    keyed like the stack's Secret (``ca.crt``, ``<role>.crt``, ``<role>.key``)."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID as Use

    now = now or dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("dask-tkg CA", ca_key, ca_key, None, now, ca=True)
    pems = {"ca.crt": _pem(ca_cert)}
    roles = {"scheduler": ((Use.SERVER_AUTH, Use.CLIENT_AUTH), scheduler_names),
             "worker": ((Use.SERVER_AUTH, Use.CLIENT_AUTH), []), "client": ((Use.CLIENT_AUTH,), [])}
    for role, (uses, names) in roles.items():
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(f"dask-{role}", key, ca_key, ca_cert, now, uses=uses, names=names)
        pems[f"{role}.crt"], pems[f"{role}.key"] = _pem(cert), _key_pem(key)
    return pems


def _certificate(common_name: str, key, ca_key, ca_cert, now: dt.datetime, ca: bool = False,
                 uses: tuple = (), names: Sequence[str] = ()):
    """One certificate: the CA's own (self-signed, signs certificates only) or a role's."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "dask-tkg"),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    issuer = subject if ca_cert is None else ca_cert.subject
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
               .not_valid_after(now + VALIDITY)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca,
                                            content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                              critical=False))
    if uses:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(uses)), critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]),
                                        critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _pem(cert) -> str:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _key_pem(key) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def secret(name: str, namespace: str, pems: dict[str, str], owner: dict[str, str] | None = None) -> dict[str, Any]:
    """The Secret of the cluster's TLS material; ``owner`` (the DaskCluster's apiVersion, kind,
    name, uid) makes Kubernetes' garbage collector delete it with the cluster, whoever deletes
    that: the runner, the idle timeout, ``kubectl delete``."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "labels": {"app.kubernetes.io/managed-by": "dask-tkg-runner"}}
    if owner:
        metadata["ownerReferences"] = [{**owner}]
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": metadata,
            "stringData": {key: pems[key] for key in ("ca.crt", *(f"{r}.{e}" for r in ("scheduler", "worker", "client")
                                                                  for e in ("crt", "key")))}}
