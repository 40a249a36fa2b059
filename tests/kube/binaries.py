"""The two Kubernetes builds the tests run against, each with the stacks it stands in for.

- :data:`CURRENT`: the minor of the default VKr (Pulumi.yaml ``tkr``: 1.33 today), built from
  the ``k8s.io/kubernetes`` module through the Go module proxy by
  ``scripts/build_kube_current.sh`` (its pins: ``scripts/kube_current/*/go.mod``, ``go.sum``),
  with etcd 3.5, into ``$CACHE/kube-current/bin``. The current stacks' tests run on it: a server
  older than the platform the product ships for cannot judge Pod Security Admission, CEL rules
  or ValidatingAdmissionPolicy, and hides what the product needs on newer servers.
- :data:`PAPER`: v1.20.2, built from Debian bookworm's ``kubernetes`` source package by
  ``scripts/build_kube_apiserver.sh``, with Debian's etcd 3.4, into ``$CACHE/kube/bin``: the
  paper's stacks (TKR 1.20: PodSecurityPolicy, the TanzuKubernetesCluster CRDs).

A stack's tests run on the build nearest the Kubernetes minor its ``tkr`` names
(:func:`release_for_minor`). A missing build is made once before the first test that needs it;
a failed build raises :class:`KubeBuildError` with its log's tail.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.kube.processes import log_tail
from workloads.core.config import cache_dir

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 45 * 60
CONTROL_PLANE = ("etcd", "kube-apiserver")
NODE = ("kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl")


class KubeBuildError(RuntimeError):
    """A build script failed or left binaries missing."""


def _pinned_version(path: Path, pattern: str) -> str:
    """The version a build pins, read from the file that pins it (one place to change it)."""
    match = re.search(pattern, path.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{path.relative_to(REPO)}: no version matching {pattern!r}")
    return match.group(1)


@dataclass(frozen=True)
class KubeRelease:
    """One Kubernetes build: its version, where its binaries are, what builds them, what it serves."""

    key: str  # "current" | "paper"
    version: str  # v1.33.13
    cache: Path
    build_script: Path
    serves: str  # the stacks it stands in for, as the pytest header says

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])

    @property
    def bin_dir(self) -> Path:
        return self.cache / "bin"

    @property
    def build_log(self) -> Path:
        return self.cache / "build.log"

    def binary(self, name: str) -> Path:
        return self.bin_dir / name

    def missing(self, names: tuple[str, ...] = CONTROL_PLANE + NODE) -> list[str]:
        return [n for n in names if not (self.binary(n).is_file() and os.access(self.binary(n), os.X_OK))]

    def ensure(self, names: tuple[str, ...] = CONTROL_PLANE + NODE) -> None:
        """Run the build script when any of ``names`` is missing; raise KubeBuildError on failure."""
        if not self.missing(names):
            return
        started = time.monotonic()
        rc = _run_logged(self.build_script, self._log_path())
        if rc != 0 or self.missing(names):
            raise KubeBuildError(
                f"{self.build_script.relative_to(REPO)} failed (exit {rc}) after {time.monotonic() - started:.0f} s; "
                f"{', '.join(self.missing(names)) or 'nothing'} missing in {self.bin_dir}. Full log: "
                f"{self._log_path()}\n--- last lines ---\n{log_tail(self._log_path(), 15)}")

    def _log_path(self) -> Path:
        try:
            self.cache.mkdir(parents=True, exist_ok=True)
            return self.build_log
        except OSError:  # the script says why it cannot use the cache; keep its log elsewhere
            return Path(tempfile.gettempdir()) / f"{self.build_script.stem}.log"


def _run_logged(script: Path, log_path: Path) -> int | str:
    try:
        with log_path.open("w") as log:
            return subprocess.run(["bash", str(script)], stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S, cwd=REPO, check=False).returncode
    except subprocess.TimeoutExpired:
        return f"timeout after {BUILD_TIMEOUT_S} s"
    except OSError as exc:
        return f"could not run: {exc}"


CURRENT = KubeRelease(
    key="current",
    version=_pinned_version(REPO / "scripts" / "kube_current" / "kubernetes" / "go.mod",
                            r"^\s*(?:require\s+)?k8s\.io/kubernetes (v1\.\d+\.\d+)\b"),
    cache=cache_dir() / "kube-current",
    build_script=REPO / "scripts" / "build_kube_current.sh",
    serves="current stacks",
)
PAPER = KubeRelease(
    key="paper",
    version=_pinned_version(REPO / "scripts" / "build_kube_apiserver.sh", r"^KUBE_GIT_VERSION=(v1\.\d+\.\d+)$"),
    cache=cache_dir() / "kube",
    build_script=REPO / "scripts" / "build_kube_apiserver.sh",
    serves="paper's stacks",
)
RELEASES = (CURRENT, PAPER)


def release_for_minor(minor: int) -> KubeRelease:
    """The build nearest a stack's Kubernetes minor (ties go to the newer)."""
    return min(RELEASES, key=lambda r: (abs(r.minor - minor), -r.minor))


def release_for_tkr(tkr: str) -> KubeRelease:
    """The build a stack asking for this TKR or VKr (``v1.33.6---vmware.1-fips-vkr.2``) runs on."""
    from components.settings.values import tkr_kubernetes_version

    return release_for_minor(tkr_kubernetes_version(tkr)[1])


def stack_tkr(stack: str, config: dict | None = None) -> str:
    """The TKR or VKr a stack file (plus config overrides) asks for: the override, else the stack
    file's ``dask-tkg:tkr``, else Pulumi.yaml's default."""
    import yaml

    if config and "tkr" in config:
        return str(config["tkr"])
    stack_file = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text()) or {}
    given = (stack_file.get("config") or {}).get("dask-tkg:tkr")
    if given:
        return str(given)
    return str(yaml.safe_load((REPO / "Pulumi.yaml").read_text())["config"]["tkr"]["default"])


def release_for_stack(stack: str, config: dict | None = None) -> KubeRelease:
    """The build a stack's tests run on."""
    return release_for_tkr(stack_tkr(stack, config))
