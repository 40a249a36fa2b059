"""The caller's own kubeconfig: what ``kubectl vsphere login`` (or the VCF CLI) wrote for them.

Read once: its current context only (as ``kubectl config view --minify`` keeps it), file
references made absolute against the kubeconfig's folder (kubectl resolves them so), held in
memory as text for the ``kubernetes`` client (the quota, the port-forward, resizing) and
named by path for kr8s (dask-kubernetes' ``KubeCluster``), which reads ``KUBECONFIG``. Never
printed: a token or key in it is the person's.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from workloads.core.errors import EndpointError

FILE_FIELDS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}


@dataclass(frozen=True)
class Kubeconfig:
    path: Path
    context: str
    namespace: str | None  # the current context's namespace
    text: str = field(repr=False)  # minified, self-contained; never printed

    def api_client(self):
        """A ``kubernetes`` ApiClient on this context; an error names the file, not its contents."""
        from kubernetes import config

        try:
            return config.new_client_from_config_dict(yaml.safe_load(self.text), persist_config=False)
        except Exception as exc:
            raise EndpointError(f"the kubeconfig {self.path} (context {self.context}) cannot be used:"
                                f" {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None


def default_path() -> Path:
    """``$KUBECONFIG``'s first file, else ``~/.kube/config`` (where kubectl looks)."""
    listed = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return Path(listed[0]).expanduser() if listed else Path.home() / ".kube" / "config"


def load(path: str | os.PathLike | None = None, context: str | None = None) -> Kubeconfig:
    """The current context of the kubeconfig at ``path`` (default: ``default_path``), or the
    context named ``context``."""
    where = Path(path).expanduser() if path else default_path()
    try:
        config = yaml.safe_load(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EndpointError(f"no kubeconfig at {where}: log in first (kubectl vsphere login ...) or pass"
                            " --kubeconfig FILE") from None
    except (OSError, yaml.YAMLError) as exc:
        raise EndpointError(f"the kubeconfig {where} cannot be read ({type(exc).__name__})") from None
    if context is not None:
        config = _with_current(config, context, where)
    if not isinstance(config, dict) or not config.get("current-context"):
        raise EndpointError(f"the kubeconfig {where} has no current context: kubectl config use-context NAME")
    minified = minify(config, where.parent)
    chosen = minified["contexts"][0]
    return Kubeconfig(where.absolute(), chosen["name"], chosen["context"].get("namespace"),
                      yaml.safe_dump(minified, sort_keys=False))


def _with_current(config: Any, context: str, where: Path) -> dict[str, Any]:
    """``config`` with ``context`` as its current one; EndpointError listing them when it has none of that name."""
    names = [c.get("name") for c in (config.get("contexts") or ())] if isinstance(config, dict) else []
    if context not in names:
        raise EndpointError(f"the kubeconfig {where} has no context {context} (it has: {', '.join(map(str, names))})")
    return {**config, "current-context": context}


def minify(config: dict[str, Any], base: Path) -> dict[str, Any]:
    """The current context with its cluster and user only, file references absolute."""
    current = config["current-context"]
    context = _named(config, "contexts", current)
    cluster = _named(config, "clusters", context["context"].get("cluster"))
    user = _named(config, "users", context["context"].get("user"))
    for entry, kind in ((cluster, "cluster"), (user, "user")):
        body = entry.get(kind) or {}
        for key in FILE_FIELDS[kind]:
            if body.get(key) and not Path(body[key]).expanduser().is_absolute():
                body[key] = str(base / body[key])
    return {"apiVersion": "v1", "kind": "Config", "current-context": current, "contexts": [context],
            "clusters": [cluster], "users": [user]}


def _named(config: dict[str, Any], kind: str, name: str | None) -> dict[str, Any]:
    for entry in config.get(kind) or ():
        if entry.get("name") == name:
            return entry
    raise EndpointError(f"the kubeconfig's current context names {kind[:-1]} {name!r}, which it does not hold")
