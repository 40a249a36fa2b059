"""``dask-tkg check`` and ``pulumi preview`` judge a stack alike: the program under Pulumi's
mocks (what preview runs) refuses a stack with the very problems the offline check prints, all
in one round, and logs first the very warnings the check prints for a clean one."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from tests.program.graph import REPO, run_program

CIPHERTEXT = {"secure": "v1:Y2lwaGVydGV4dC1ub3QtYS1zZWNyZXQ="}  # what `pulumi config set --secret` writes
SECRETS = ("vsphere:password", "dask-tkg:ngcApiKey", "dask-tkg:vgpuLicenseToken")


def checked(folder: Path, stack: str, config: dict) -> list[str]:
    """What the check prints for ``Pulumi.<stack>.yaml`` with ``config`` over it (project keys)
    and its secrets set, each line without its ``stack <name>: `` prefix."""
    values = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]
    values.update(dict.fromkeys(SECRETS, CIPHERTEXT), **{f"dask-tkg:{k}": v for k, v in config.items()})
    (folder / "Pulumi.site.yaml").write_text(yaml.safe_dump({"config": values}))
    done = subprocess.run([sys.executable, "-m", "workloads.cli", "check", "--stack", "site", "--dir", str(folder)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return [line.removeprefix("stack site: ") for line in done.stdout.splitlines()]


def test_preview_refuses_a_stack_with_the_problems_the_check_prints(tmp_path):
    """A refused value (schedulerCpu), another part's (datasetPvcSize) and a rule's finding on
    sound parts (a second control plane class that is not offered): one round for both."""
    config = {"schedulerCpu": "lots", "datasetPvcSize": "1 tonne", "controlPlaneVmClass": "no-such-class"}
    lines = checked(tmp_path, "dev", config)
    error = run_program("dev", config=config).error
    assert error.startswith("SettingsError: 3 invalid setting(s):"), error
    assert [line.removeprefix("  - ") for line in error.splitlines()[1:]] == lines[:-1]
    assert lines[-1].startswith("3 problem(s) in Pulumi.site.yaml; pulumi preview refuses it the same way.")


def test_preview_logs_first_the_warnings_the_check_prints(tmp_path):
    lines = checked(tmp_path, "reference", {})
    warnings = [line.removeprefix("warning: ") for line in lines if line.startswith("warning: ")]
    assert warnings and lines[-1].startswith("OK: no problem in Pulumi.site.yaml")
    assert run_program("reference").warnings[:len(warnings)] == warnings
