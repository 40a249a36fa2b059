"""Real certificates with the shape components/dask/tls.py declares: one ECDSA P-256 CA, one
certificate per role with that role's key usages (``tls.allowed_uses``), names on the
servers' certificates alone. Under Pulumi's mocks the pulumi-tls resources return placeholder
text, so the tests that run real TLS issue these with OpenSSL."""
from __future__ import annotations

import subprocess
from pathlib import Path

from components.dask.tls import allowed_uses
from components.dask.values import service_names

NAMESPACE = "rapidsai"
# The scheduler's Service name as the stack's outputs give it.
SCHEDULER_NAME = f"dask-scheduler.{NAMESPACE}.svc.cluster.local"
JUPYTER_NAME = f"dask-jupyter.{NAMESPACE}.svc.cluster.local"
# The servers' names: their Services', and 127.0.0.1 standing for an exposed address.
SERVER_NAMES = {"scheduler": [*(f"DNS:{n}" for n in service_names("dask-scheduler", NAMESPACE)), "IP:127.0.0.1"],
                "jupyter": [*(f"DNS:{n}" for n in service_names("dask-jupyter", NAMESPACE)), "IP:127.0.0.1"]}
# pulumi-tls ``allowed_uses`` (terraform-provider-tls internal/provider/types.go) -> OpenSSL's names
OPENSSL_USES = {"digital_signature": ("keyUsage", "digitalSignature"),
                "key_encipherment": ("keyUsage", "keyEncipherment"),
                "server_auth": ("extendedKeyUsage", "serverAuth"), "client_auth": ("extendedKeyUsage", "clientAuth")}
EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def extensions(role: str, names: list[str] | tuple[str, ...] = ()) -> str:
    """The OpenSSL extension file of ``role``'s certificate: the program's uses, and ``names``
    (``DNS:...``/``IP:...``) as its subject alternative names."""
    fields: dict[str, list[str]] = {"basicConstraints": ["critical", "CA:FALSE"]}
    for use in allowed_uses(role):
        field, value = OPENSSL_USES[use]
        fields.setdefault(field, []).append(value)
    if names:
        fields["subjectAltName"] = list(names)
    return "".join(f"{field}={','.join(values)}\n" for field, values in fields.items())


def issue_pki(folder: Path, roles=("scheduler", "worker", "client"), names: dict[str, list[str]] | None = None,
              days: int = 2) -> dict[str, str]:
    """A CA and one certificate per role, keyed as the program's Secret is; ``names`` per role
    (default: ``SERVER_NAMES``, the servers' only)."""
    names = SERVER_NAMES if names is None else names
    folder.mkdir(parents=True, exist_ok=True)
    openssl("req", "-x509", *EC, "-keyout", "ca.key", "-out", "ca.crt", "-days", str(days),
            "-subj", "/O=dask-tkg/CN=dask-tkg CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    pems = {"ca.crt": (folder / "ca.crt").read_text()}
    for role in roles:
        openssl("req", *EC, "-keyout", f"{role}.key", "-out", f"{role}.csr", "-subj", f"/O=dask-tkg/CN=dask-{role}",
                cwd=folder)
        (folder / f"{role}.ext").write_text(extensions(role, names.get(role, ())))
        openssl("x509", "-req", "-in", f"{role}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{role}.crt", "-days", str(days), "-extfile", f"{role}.ext", cwd=folder)
        pems[f"{role}.crt"] = (folder / f"{role}.crt").read_text()
        pems[f"{role}.key"] = (folder / f"{role}.key").read_text()
    return pems
