"""Helm 3 against the test cluster: the official static helm v3.17.2 that scripts/install_helm.sh
puts into the cache (the render tests' engine), run with the cluster's admin kubeconfig and
Helm's own directories under the cluster's work directory."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from workloads.config import cache_dir

HELM_BIN = cache_dir() / "helm" / "bin" / "helm"
HELM_VERSION = "v3.17.2"


class HelmError(RuntimeError):
    pass


def helm(cluster, *args: str, timeout_s: float = 300.0) -> str:
    if not os.access(HELM_BIN, os.X_OK):
        raise HelmError(f"{HELM_BIN} is missing: run scripts/install_helm.sh (make stand-ins)")
    home = cluster.workdir / "helm"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "KUBECONFIG": str(cluster.kubeconfig), "HELM_CACHE_HOME": str(home / "cache"),
           "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data"),
           "NO_PROXY": "*"}
    result = subprocess.run([str(HELM_BIN), *args], env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=timeout_s)
    if result.returncode != 0:
        raise HelmError(f"helm {' '.join(args[:3])}: {result.stderr.strip()}")
    return result.stdout


def install(cluster, release: str, chart: Path, namespace: str, values: dict) -> dict:
    """``helm install`` (no --wait: the tests watch the pods themselves); returns Helm's status."""
    values_file = cluster.workdir / f"values-{namespace}-{release}.json"
    values_file.write_text(json.dumps(values))
    values_file.chmod(0o600)  # the values hold the Jupyter password hash
    out = helm(cluster, "install", release, str(chart), "--namespace", namespace, "--values", str(values_file),
               "--output", "json")
    return json.loads(out)


def uninstall(cluster, release: str, namespace: str) -> None:
    helm(cluster, "uninstall", release, "--namespace", namespace)
