"""Stack outputs from a file (--outputs), TLS credentials, the pulumi CLI, address hygiene."""
from __future__ import annotations

import json
import os

import pytest

from tests.workloads.support import OUTPUTS
from workloads import run
from workloads.cluster import endpoint
from workloads.contract import ContractError
from workloads.core.errors import EndpointError


def write(tmp_path, outputs) -> str:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    return str(path)


def test_outputs_file_gives_the_endpoint(tmp_path):
    found = endpoint.read_outputs_file(write(tmp_path, OUTPUTS))
    assert (found.kind, found.scheduler_address, found.data_dir, found.expected_workers) == (
        "outputs", "tcp://dask-scheduler.dask.svc:8786", "/ml-share", 8)
    assert found.security is None and not found.local


def test_missing_key_and_wrong_type_are_named(tmp_path):
    missing = {k: v for k, v in OUTPUTS.items() if k != "daskNamespace"}
    with pytest.raises(ContractError, match="missing output 'daskNamespace'"):
        endpoint.read_outputs_file(write(tmp_path, missing))
    with pytest.raises(ContractError, match="output 'workerCount' must be int, got str"):
        endpoint.read_outputs_file(write(tmp_path, {**OUTPUTS, "workerCount": "8"}))


@pytest.mark.parametrize("change, fragment", [
    ({"daskNamespace": None}, "missing output 'daskNamespace'"),
    ({"workerCount": "8"}, "output 'workerCount' must be int, got str"),
])
def test_cli_reports_bad_outputs_in_one_line_with_exit_2(tmp_path, capsys, change, fragment):
    outputs = {k: v for k, v in {**OUTPUTS, **change}.items() if v is not None}
    code = run.main(["--outputs", write(tmp_path, outputs), "--benchmark", "images", "--output", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("error: ") and fragment in err and "outputs.json" in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "results.jsonl").exists()


def test_unreadable_outputs_file(tmp_path):
    with pytest.raises(EndpointError, match="no such file"):
        endpoint.read_outputs_file(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(EndpointError, match="not valid JSON"):
        endpoint.read_outputs_file(bad)


def test_tls_outputs_become_security_from_the_pem_text_itself(tmp_path, monkeypatch):
    """distributed takes a value with a newline as PEM contents (security.py,
    ``_get_tls_context``: ``"\\n" in ca`` -> ``cadata``; cert/key in memory), so the key is
    never written to a file by the runner."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    outputs = {**OUTPUTS, "schedulerAddress": "tls://dask-scheduler:8786", "tlsCaCert": "CA PEM",
               "tlsClientCert": "CERT PEM", "tlsClientKey": "KEY PEM"}
    found = endpoint.read_outputs_file(write(tmp_path, outputs))
    security = found.security
    assert security.require_encryption
    assert (security.tls_ca_file, security.tls_client_cert, security.tls_client_key) == \
        ("CA PEM\n", "CERT PEM\n", "KEY PEM\n")
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing written
    assert "KEY PEM" not in repr(found)


def test_stack_without_the_pulumi_cli_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EndpointError, match=r"pulumi CLI, which is not on PATH.*--outputs"):
        endpoint.read_stack("dev")


def test_stack_uses_the_cli_output(monkeypatch, tmp_path):
    fake = tmp_path / "pulumi"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/args\ncat {write(tmp_path, OUTPUTS)}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    found = endpoint.read_stack("dev")
    assert found.kind == "stack" and found.source == "stack dev"
    assert (tmp_path / "args").read_text().split()[:6] == ["stack", "output", "--json", "--show-secrets",
                                                          "--stack", "dev"]


def test_resolve_precedence(monkeypatch):
    with pytest.raises(EndpointError, match="choose one of --scheduler-address, --local"):
        endpoint.resolve(scheduler_address="tcp://a:8786", use_local=True)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://in-cluster:8786")
    found = endpoint.resolve()
    assert (found.kind, found.scheduler_address) == ("environment", "tcp://in-cluster:8786")
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    assert endpoint.resolve().local
    assert endpoint.resolve(scheduler_address="10.0.0.1:8786").scheduler_address == "tcp://10.0.0.1:8786"
    with pytest.raises(EndpointError, match="needs TLS credentials"):
        endpoint.resolve(scheduler_address="tls://10.0.0.1:8786")


def test_redact_drops_credentials():
    assert endpoint.redact("tcp://user:secret@host:8786") == "tcp://host:8786"
    assert endpoint.redact("http://h:8787/status?token=abc") == "http://h:8787/status"
    assert endpoint.redact("") == ""


def test_stack_outputs_are_read_in_the_project_that_declares_the_stacks():
    """``pulumi stack output`` runs where ``Pulumi.yaml`` is, wherever the user stands."""
    assert (endpoint.PROJECT_DIR / "Pulumi.yaml").is_file()
