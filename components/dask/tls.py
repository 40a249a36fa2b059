"""Mutual TLS for Dask: a private CA and certificates for scheduler, workers and clients
(pulumi-tls), stored in one Kubernetes Secret each pod mounts as files (its role's keys only:
``podspec.tls_volume``), named by Dask's config variables. Private keys are secrets in the
state and in the stack outputs."""
from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls

VALIDITY_HOURS = 24 * 365 * 2
_SERVER_USES = ["digital_signature", "key_encipherment", "server_auth", "client_auth"]


@dataclass(frozen=True)
class DaskTlsArgs:
    namespace: pulumi.Input[str]
    secret_name: str
    scheduler_dns_names: pulumi.Input[list[str]]


class DaskTls(pulumi.ComponentResource):
    ca_cert: pulumi.Output[str]
    client_cert: pulumi.Output[str]
    client_key: pulumi.Output[str]  # secret

    def __init__(self, name: str, args: DaskTlsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:dask:Tls", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        ca_key = tls.PrivateKey(f"{name}-ca-key", algorithm="ECDSA", ecdsa_curve="P256", opts=child)
        ca = tls.SelfSignedCert(
            f"{name}-ca",
            private_key_pem=ca_key.private_key_pem,
            subject=tls.SelfSignedCertSubjectArgs(common_name="dask-tkg CA", organization="dask-tkg"),
            is_ca_certificate=True,
            validity_period_hours=VALIDITY_HOURS,
            allowed_uses=["cert_signing", "crl_signing", "digital_signature"],
            opts=child,
        )
        pairs = {}
        for role, dns in (("scheduler", args.scheduler_dns_names), ("worker", []), ("client", [])):
            key = tls.PrivateKey(f"{name}-{role}-key", algorithm="ECDSA", ecdsa_curve="P256", opts=child)
            request = tls.CertRequest(
                f"{name}-{role}-csr",
                private_key_pem=key.private_key_pem,
                subject=tls.CertRequestSubjectArgs(common_name=f"dask-{role}", organization="dask-tkg"),
                dns_names=dns or None,
                opts=child,
            )
            cert = tls.LocallySignedCert(
                f"{name}-{role}-cert",
                cert_request_pem=request.cert_request_pem,
                ca_private_key_pem=ca_key.private_key_pem,
                ca_cert_pem=ca.cert_pem,
                validity_period_hours=VALIDITY_HOURS,
                allowed_uses=_SERVER_USES,
                opts=child,
            )
            pairs[role] = (cert.cert_pem, key.private_key_pem)
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret",
            metadata={"name": args.secret_name, "namespace": args.namespace},
            string_data={
                "ca.crt": ca.cert_pem,
                **{f"{role}.crt": cert for role, (cert, _) in pairs.items()},
                **{f"{role}.key": pulumi.Output.secret(key) for role, (_, key) in pairs.items()},
            },
            opts=child,
        )
        self.ca_cert = ca.cert_pem
        self.client_cert = pulumi.Output.secret(pairs["client"][0])
        self.client_key = pulumi.Output.secret(pairs["client"][1])
        self.register_outputs({"ca_cert": self.ca_cert, "client_cert": self.client_cert,
                               "client_key": self.client_key})
