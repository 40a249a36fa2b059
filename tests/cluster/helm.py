"""Helm 3 against the test cluster: the official static helm v3.17.2 that scripts/install_helm.sh
puts into the cache (the render tests' engine), run with the cluster's admin kubeconfig and
Helm's own directories under the cluster's work directory."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from workloads.core.config import cache_dir

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
    result = subprocess.run([str(HELM_BIN), *args], check=False, env=env, capture_output=True, text=True,
                            stdin=subprocess.DEVNULL, timeout=timeout_s)
    if result.returncode != 0:
        raise HelmError(f"helm {' '.join(args[:3])}: {result.stderr.strip()}")
    return result.stdout


POST_RENDER = Path(__file__).resolve().with_name("post_render.py")
PROGRAM_POST_RENDER = POST_RENDER.parents[2] / "components" / "dask" / "post-render"


def install(cluster, release: str, chart: Path, namespace: str, values: dict,
            differences: dict | None = None) -> dict:
    """``helm install`` (no --wait: the tests watch the pods themselves); returns Helm's status.

    The rendered objects go through the release's own post-renderer (components/dask/post-render,
    as the program's Release names it) and, with ``differences``, then through
    tests/cluster/post_render.py (every way the test's release differs from the program's)."""
    values_file = cluster.workdir / f"values-{namespace}-{release}.json"
    values_file.write_text(json.dumps(values))
    values_file.chmod(0o600)  # the values hold the Jupyter password hash
    args = ["install", release, str(chart), "--namespace", namespace, "--values", str(values_file),
            "--output", "json"]
    if differences is not None:
        diff_file = cluster.workdir / f"differences-{namespace}-{release}.json"
        diff_file.write_text(json.dumps(differences))
        wrapper = cluster.workdir / f"post-render-{namespace}-{release}.sh"
        repo = POST_RENDER.parents[2]  # the module imports the program's own post-renderer
        wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{repo}" exec "{sys.executable}" -m tests.cluster.post_render'
                           f' "{diff_file}"\n')
        wrapper.chmod(0o700)
        args += ["--post-renderer", str(wrapper)]
    else:
        args += ["--post-renderer", str(PROGRAM_POST_RENDER)]
    return json.loads(helm(cluster, *args))


def uninstall(cluster, release: str, namespace: str) -> None:
    helm(cluster, "uninstall", release, "--namespace", namespace)
