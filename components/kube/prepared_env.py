"""The Dask pods' prepared environment (``workerEnvironment=prepared``): one locked Python
environment, installed once per lock change onto the shared claim, which scheduler, workers and
Jupyter mount read-only and run from. Nothing is installed when a pod starts.

- the lock: ``environment/worker-cu13.lock``, as pinned (``components/artifacts/worker_lock.py``);
- where it lives: the pip-cache claim (one RWX claim the stack already has), directory
  ``environments/<lock sha256, 16 hex>``; pip's wheel cache for the Job in ``pip/`` on the
  same claim, so a lock change downloads only the wheels that changed;
- how it gets there: the environment Job (components/addons/environment_job.py) runs the Dask
  image itself (so the venv's base interpreter is the pods'), mounts that directory at
  ``ENV_MOUNT`` (the pods' path: a venv's scripts name their interpreter by absolute path),
  and runs ``JOB_SCRIPT``: ``python -m venv``, ``pip install --require-hashes --no-deps
  --only-binary=:all:`` of the lock from ``packageIndexUrl``, then the marker; it exits at
  once when the marker is there and the tree still matches its record;
- the record: the Job writes the tree's manifest and records its digest in the ConfigMap
  ``DIGESTS_CONFIG_MAP`` of each namespace whose pods run it (environment/env_record.py);
- the pods mount the directory read-only at ``ENV_MOUNT`` and put its ``bin/`` first on PATH,
  after an init container (``verify_container``) checked the tree against that digest.

Pure functions on plain data; no Pulumi, no settings: the Kubernetes fragments every Dask pod and the
environment Job share.
"""
from __future__ import annotations

from typing import Any

from components.artifacts.worker_lock import ENV_DIR, lock_digest

ENV_MOUNT = "/opt/dask-env"
CLAIM_MOUNT = "/claim"  # the Job's view of the whole claim (to make the directory, and pip's cache)
LOCK_MOUNT = "/etc/dask-env"  # the lock, from the ConfigMap
LOCK_KEY = "worker.lock"
MARKER = ".complete"
# The record of what the Job prepared (components/dask/environment/env_record.py): the
# manifest's digest, in this ConfigMap of every namespace whose pods run the environment,
# under the environment's key (``record_key``); each pod checks its tree against it first
VERIFY_CONTAINER = "verify-environment"
DIGESTS_CONFIG_MAP = "dask-environment-digests"
MANIFEST_SCRIPT = "env_manifest.py"
RECORD_SCRIPT = "env_record.py"
REBUILD_EXIT = 3  # env_record.py confirm: nothing recorded, or the tree differs: prepare again
VOLUME = "environment"
SUBDIR_ROOT = "environments"
PIP_CACHE_SUBDIR = "pip"
# The image's own directories after the environment's bin/ (the Debian images' default PATH)
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def subdir(text: str) -> str:
    """The claim's directory of the environment of lock ``text``: a changed lock is a new one."""
    return f"{SUBDIR_ROOT}/{lock_digest(text)[:16]}"


def record_key(environment_subdir: str) -> str:
    """The ConfigMap key of an environment's digest: its directory's name (16 hex)."""
    return environment_subdir.rsplit("/", 1)[-1]


def script(name: str) -> str:
    """The text of one of the environment's stdlib scripts (``MANIFEST_SCRIPT``, ``RECORD_SCRIPT``)."""
    return (ENV_DIR / name).read_text(encoding="utf-8")


def plain_http_host(index_url: str) -> str:
    """The index's host when it is served over plain HTTP (a site mirror), which pip refuses
    unless trusted: the lock's hashes still decide what installs. Empty for HTTPS."""
    from urllib.parse import urlparse

    parsed = urlparse(index_url)
    return parsed.netloc if parsed.scheme == "http" else ""


def pod_env() -> list[dict[str, str]]:
    """The environment's bin/ first on PATH (``dask``, ``dask-cuda-worker``, ``jupyter`` resolve
    there), as ``activate`` would set it."""
    return [{"name": "VIRTUAL_ENV", "value": ENV_MOUNT},
            {"name": "PATH", "value": f"{ENV_MOUNT}/bin:{SYSTEM_PATH}"}]


def verify_container(image: str, environment_subdir: str) -> dict[str, Any]:
    """The init container that checks the environment against the Job's record before any of
    the pod's containers runs anything from it (env_manifest.py): the image's own interpreter,
    isolated and without ``site`` (no variable, no ``.pth`` of the environment reaches it), the
    environment read-only, its recorded digest from the namespace's ConfigMap (a pod whose key
    is not recorded yet waits, as for any missing key). Reading the whole tree costs one pass
    over its files (docs/dask.md, 'The Python environment')."""
    return {
        "name": VERIFY_CONTAINER, "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["python", "-I", "-S", "-c", script(MANIFEST_SCRIPT), "verify", ENV_MOUNT],
        "env": [{"name": "EXPECTED_DIGEST", "valueFrom": {"configMapKeyRef": {
            "name": DIGESTS_CONFIG_MAP, "key": record_key(environment_subdir)}}}],
        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "256Mi"}},
        "volumeMounts": [pod_mount(environment_subdir)],
        # a refusal's message in the pod's status (kubectl describe), not only in its log
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }


def pod_volume(claim: str) -> dict[str, Any]:
    return {"name": VOLUME, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}


def pod_mount(environment_subdir: str) -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": ENV_MOUNT, "subPath": environment_subdir, "readOnly": True}


# The Job's script (sh: every Debian image has it). The directory is made through the whole
# claim (a subPath the kubelet creates is root's), then filled through the subPath mounted
# at ENV_MOUNT. A directory without the marker is a build that stopped: emptied and redone.
JOB_SCRIPT = f"""set -eu
env={ENV_MOUNT}
if [ -f "$env/{MARKER}" ]; then
  if python -I -S "{LOCK_MOUNT}/{RECORD_SCRIPT}" confirm "$env"; then
    echo "environment $(cat "$env/{MARKER}") is prepared already"; exit 0
  else
    status=$?; [ "$status" -eq {REBUILD_EXIT} ] || exit "$status"
  fi
fi
find "$env" -mindepth 1 -maxdepth 1 -exec rm -rf {{}} +
python -m venv "$env"
"$env/bin/python" -m pip install --no-input --disable-pip-version-check --no-color --progress-bar off \\
  --isolated --require-hashes --no-deps --only-binary=:all: --index-url "$PACKAGE_INDEX_URL" \\
  ${{PLAIN_HTTP_HOST:+--trusted-host "$PLAIN_HTTP_HOST"}} \\
  --cache-dir "{CLAIM_MOUNT}/{PIP_CACHE_SUBDIR}" -r "{LOCK_MOUNT}/{LOCK_KEY}"
python -I -S "{LOCK_MOUNT}/{RECORD_SCRIPT}" record "$env"
echo "$LOCK_SHA256" > "$env/{MARKER}.tmp" && mv "$env/{MARKER}.tmp" "$env/{MARKER}"
echo "environment $LOCK_SHA256 prepared"
"""
INIT_SCRIPT = f'mkdir -p "{CLAIM_MOUNT}/$ENV_SUBDIR" "{CLAIM_MOUNT}/{PIP_CACHE_SUBDIR}"'
