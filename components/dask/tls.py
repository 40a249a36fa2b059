"""Mutual TLS for Dask and TLS for Jupyter: a private CA and one certificate per role
(pulumi-tls), stored in one Kubernetes Secret each pod mounts as files (its role's keys only:
``podspec.tls_volume``), named by Dask's config variables. Private keys are secrets in the
state and in the stack outputs.

Each certificate may do only what its role does (extended key usage, RFC 5280 4.2.1.12), and
only a server's certificate carries names: the scheduler's its Services' names, Jupyter's its
own, each with its LoadBalancer address when exposed (so a client that checks names, as the
runner does, can reach it there). A worker's or a client's key then cannot pass for the
scheduler's with anyone who checks names, and a client's key not with anyone at all."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls

VALIDITY_HOURS = 24 * 365 * 2
# ECDSA keys sign; they encipher nothing (RFC 5480 3: no keyEncipherment for id-ecPublicKey).
KEY_USES = ("digital_signature",)
# Which side of a TLS connection each role takes, in distributed 2026.7.1 (the same in the paper's
# 2021.09.1): the scheduler listens (scheduler.py ``get_listen_args("scheduler")``) and dials
# workers with its own certificate (scheduler.py ``self.connection_args =
# get_connection_args("scheduler")``); a worker and its nanny listen (worker.py, nanny.py
# ``get_listen_args("worker")``) and dial the scheduler and other workers (worker.py, nanny.py
# ``get_connection_args("worker")``); a client only dials (client.py
# ``get_connection_args("client")``). The Jupyter server only listens (jupyter_server
# ``ServerApp.certfile``); its Dask clients use the client's certificate.
ROLE_USES = {
    "scheduler": ("server_auth", "client_auth"),
    "worker": ("server_auth", "client_auth"),
    "client": ("client_auth",),
    "jupyter": ("server_auth",),
}


@dataclass(frozen=True)
class DaskTlsArgs:
    namespace: pulumi.Input[str]
    secret_name: str
    scheduler_dns_names: pulumi.Input[list[str]]
    # The exposed scheduler's LoadBalancer address (IP or host name; "" when not exposed or
    # not assigned): its Service exists before this certificate, the pods after its Secret.
    scheduler_external_host: pulumi.Input[str] = ""
    jupyter_dns_names: pulumi.Input[list[str]] | None = None  # None: no Jupyter, no certificate
    jupyter_external_host: pulumi.Input[str] = ""


def server_names(dns_names: list[str], external_host: str) -> tuple[list[str], list[str]]:
    """A server certificate's (DNS names, IP addresses): the Service's names and, when it is
    exposed, its LoadBalancer's address, which is an IP or a host name."""
    if not external_host:
        return list(dns_names), []
    try:
        return list(dns_names), [str(ipaddress.ip_address(external_host))]
    except ValueError:
        return [*dns_names, external_host], []


def allowed_uses(role: str) -> list[str]:
    return [*KEY_USES, *ROLE_USES[role]]


class DaskTls(pulumi.ComponentResource):
    ca_cert: pulumi.Output[str]
    client_cert: pulumi.Output[str]
    client_key: pulumi.Output[str]  # secret

    def __init__(self, name: str, args: DaskTlsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:dask:Tls", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self._ca_key = tls.PrivateKey(f"{name}-ca-key", algorithm="ECDSA", ecdsa_curve="P256", opts=child)
        self._ca = tls.SelfSignedCert(
            f"{name}-ca",
            private_key_pem=self._ca_key.private_key_pem,
            subject=tls.SelfSignedCertSubjectArgs(common_name="dask-tkg CA", organization="dask-tkg"),
            is_ca_certificate=True,
            validity_period_hours=VALIDITY_HOURS,
            allowed_uses=["cert_signing", "crl_signing", "digital_signature"],
            opts=child,
        )
        names = {"scheduler": (args.scheduler_dns_names, args.scheduler_external_host),
                 "worker": ([], ""), "client": ([], "")}
        if args.jupyter_dns_names is not None:
            names["jupyter"] = (args.jupyter_dns_names, args.jupyter_external_host)
        pairs = {role: self._issue(name, role, dns, host, child) for role, (dns, host) in names.items()}
        keys: dict[str, pulumi.Output[str]] = {f"{role}.key": pulumi.Output.secret(key)
                                               for role, (_, key) in pairs.items()}
        self.secret = k8s.core.v1.Secret(
            f"{name}-secret",
            metadata={"name": args.secret_name, "namespace": args.namespace},
            string_data={
                "ca.crt": self._ca.cert_pem,
                **{f"{role}.crt": cert for role, (cert, _) in pairs.items()},
                **keys,
            },
            opts=child,
        )
        self.ca_cert = self._ca.cert_pem
        self.client_cert = pulumi.Output.secret(pairs["client"][0])
        self.client_key = pulumi.Output.secret(pairs["client"][1])
        self.register_outputs({"ca_cert": self.ca_cert, "client_cert": self.client_cert,
                               "client_key": self.client_key})

    def _issue(self, name: str, role: str, dns: pulumi.Input[list[str]], host: pulumi.Input[str],
               child: pulumi.ResourceOptions) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
        """The role's key and its certificate from the CA: (certificate PEM, key PEM)."""
        key = tls.PrivateKey(f"{name}-{role}-key", algorithm="ECDSA", ecdsa_curve="P256", opts=child)
        subjects = pulumi.Output.all(dns, host).apply(lambda a: server_names(a[0] or [], a[1] or ""))
        request = tls.CertRequest(
            f"{name}-{role}-csr",
            private_key_pem=key.private_key_pem,
            subject=tls.CertRequestSubjectArgs(common_name=f"dask-{role}", organization="dask-tkg"),
            dns_names=subjects.apply(lambda s: s[0] or None),
            ip_addresses=subjects.apply(lambda s: s[1] or None),
            opts=child,
        )
        cert = tls.LocallySignedCert(
            f"{name}-{role}-cert",
            cert_request_pem=request.cert_request_pem,
            ca_private_key_pem=self._ca_key.private_key_pem,
            ca_cert_pem=self._ca.cert_pem,
            validity_period_hours=VALIDITY_HOURS,
            allowed_uses=allowed_uses(role),
            opts=child,
        )
        return cert.cert_pem, key.private_key_pem
