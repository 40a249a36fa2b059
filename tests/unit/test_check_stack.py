"""``dask-tkg check --stack NAME``: a stack's settings checked offline, every problem in one
round and one line each, no traceback, no network and no secret; an unknown stack answered in
one line naming the stacks there are. ``python -m components.settings.network_requirements``
answers a bad stack the same way. Each test runs the real command on real stack files (the
repository's, or a copy in a temporary folder)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
STACKS = "dev, full, reference, reference-dev"
CIPHERTEXT = {"secure": "v1:Y2lwaGVydGV4dC1ub3QtYS1zZWNyZXQ="}  # what `pulumi config set --secret` writes
SECRETS = {"vsphere:password": CIPHERTEXT, "dask-tkg:ngcApiKey": CIPHERTEXT, "dask-tkg:vgpuLicenseToken": CIPHERTEXT}


def python_module(*args: str, module: str = "workloads.cli") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120, check=False)


def check(stack: str, folder: Path | None = None) -> subprocess.CompletedProcess:
    return python_module("check", "--stack", stack, *(["--dir", str(folder)] if folder else []))


def stack_file(folder: Path, name: str, base: str = "dev", drop: tuple[str, ...] = (), **config: object) -> Path:
    """``Pulumi.<name>.yaml`` in ``folder``: the repository's ``base`` stack with its secrets set
    (encrypted, as the CLI writes them), ``config`` over it and the keys of ``drop`` removed."""
    values = yaml.safe_load((REPO / f"Pulumi.{base}.yaml").read_text())["config"]
    values = {k: v for k, v in {**values, **SECRETS, **config}.items() if k not in drop}
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": values}))
    return path


def lines(done: subprocess.CompletedProcess) -> list[str]:
    return (done.stdout + done.stderr).strip().splitlines()


def test_a_clean_stack_gets_one_ok_line_and_no_secret(tmp_path):
    stack_file(tmp_path, "site")
    done = check("site", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    last = lines(done)[-1]
    assert last.startswith("stack site: OK: no problem in Pulumi.site.yaml (")
    assert "3 of them secret and not decrypted" in last and "vCenter and the Supervisor (not contacted)" in last
    assert "v1:" not in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_the_warnings_preview_gives_come_before_the_ok_line(tmp_path):
    stack_file(tmp_path, "paper", base="reference")
    done = check("paper", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [line for line in lines(done) if line.startswith("stack paper: warning: ")]
    assert any("out of support today: vSphere 7" in w for w in warnings), done.stdout
    assert lines(done)[-1].startswith("stack paper: OK: ")


def test_every_problem_is_named_in_one_round(tmp_path):
    """A refused value (datasetPvcSize), a missing address a cross-field rule requires
    (vsphere:vsphereServer), a missing secret and a misspelt key: all four at once, each a
    line naming its key, and nothing waits for a second run."""
    stack_file(tmp_path, "broken", drop=("vsphere:vsphereServer", "vsphere:password"),
               **{"dask-tkg:datasetPvcSize": "lots", "dask-tkg:clusterNmae": "vks-typo"})
    done = check("broken", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    found = lines(done)
    assert "stack broken: dask-tkg:clusterNmae: is not a setting of dask-tkg" in "\n".join(found)
    assert "did you mean clusterName?" in found[0]
    assert any(line.startswith("stack broken: dask-tkg:datasetPvcSize: must be a Kubernetes quantity")
               for line in found)
    assert "stack broken: vsphere:vsphereServer: is required: the vCenter address" in found
    assert any(line.startswith("stack broken: vsphere:password: is required") for line in found)
    assert found[-1].startswith("stack broken: 4 problem(s) in Pulumi.broken.yaml;"
                                " pulumi preview refuses it the same way.")
    assert "Traceback" not in done.stderr


def test_an_unknown_stack_is_one_line_naming_the_stacks_there_are():
    done = check("prod")
    assert done.returncode == 2
    assert lines(done) == [f"error: no stack 'prod' in {REPO}: no Pulumi.prod.yaml there (its stacks: {STACKS})"]


def test_a_stack_file_that_is_not_yaml_is_one_line(tmp_path):
    (tmp_path / "Pulumi.bad.yaml").write_text("config:\n  dask-tkg:clusterName: [unclosed\n")
    done = check("bad", tmp_path)
    assert done.returncode == 1
    [line] = lines(done)
    assert line.startswith("stack bad: Pulumi.bad.yaml: not valid YAML at line 3")


def test_the_network_list_answers_an_unknown_stack_in_one_line():
    done = python_module("--stack", "prod", module="components.settings.network_requirements")
    assert done.returncode == 2
    assert lines(done) == [f"error: no stack 'prod' in {REPO}: no Pulumi.prod.yaml there (its stacks: {STACKS})"]


def test_the_network_list_names_each_settings_problem_without_a_traceback(tmp_path):
    stack_file(tmp_path, "broken", **{"dask-tkg:datasetPvcSize": "lots"})
    done = python_module("--stack", "broken", "--dir", str(tmp_path), module="components.settings.network_requirements")
    assert done.returncode == 1
    found = lines(done)
    assert found[0].startswith("stack broken: dask-tkg:datasetPvcSize: must be a Kubernetes quantity")
    assert found[-1] == ("stack broken: its settings have 1 problem(s), so its network cannot be derived"
                         " (dask-tkg check --stack broken lists the same)")
    assert "Traceback" not in done.stderr and done.stdout == ""
