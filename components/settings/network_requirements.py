"""The network a stack needs, derived from its settings so that it cannot go stale: the hosts and
ports the workload cluster's nodes and pods reach, those the machine running Pulumi reaches,
and what vCenter itself fetches.

A command, not a preview line: a site opens its firewall before the first preview, and a
preview needs vCenter and the Supervisor reachable and the secrets set. The command reads only
the stack file (as the tests load a stack), no secret and no network:

    python -m components.settings.network_requirements --stack dev

docs/deploy.md ("The network a stack needs") shows the dev stack's list, checked by a test.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from components.artifacts.images import ImageRef
from components.facts import network_facts as facts
from components.settings import SettingsError, stack_file
from components.settings.build import load
from components.settings.exposure import fetch_urls, workers_install
from components.settings.model import Settings

REPO = Path(__file__).resolve().parents[2]
SOURCES = {
    "cluster": "From the workload cluster's nodes and pods",
    "pulumi": "From the machine that runs Pulumi",
    "vcenter": "From vCenter",
}


@dataclass(frozen=True)
class Endpoint:
    """One destination: ``host`` a name or address (``literal``) or a description of one."""

    host: str
    port: int
    why: str
    literal: bool = True


def requirements(s: Settings) -> dict[str, tuple[Endpoint, ...]]:
    """Source (``SOURCES``) -> its destinations, one per host and port, reasons joined."""
    return {"cluster": _merged(cluster_needs(s)), "pulumi": _merged(pulumi_needs(s)),
            "vcenter": _merged(vcenter_needs(s))}


def _merged(endpoints: Iterable[Endpoint]) -> tuple[Endpoint, ...]:
    seen: dict[tuple[str, int], Endpoint] = {}
    for e in endpoints:
        old = seen.get((e.host, e.port))
        whys = old.why.split("; ") if old else []
        seen[(e.host, e.port)] = Endpoint(e.host, e.port, "; ".join(dict.fromkeys([*whys, e.why])), e.literal)
    return tuple(seen.values())


# --- the workload cluster ------------------------------------------------------------------

def registry_hosts(image: str) -> tuple[tuple[str, int], ...]:
    """The hosts a pull of ``image`` reaches: its registry (a first path part with a dot, a
    colon or ``localhost``, as Docker's reference grammar reads it), else Docker Hub's."""
    first, slash, _ = ImageRef.parse(image).repository.partition("/")
    names_a_registry = "." in first or ":" in first or first == "localhost"
    if slash and names_a_registry and first not in ("docker.io", "index.docker.io"):
        host, _, port = first.partition(":")
        return ((host, int(port) if port else 443),)
    return tuple((host, 443) for host in facts.DOCKER_HUB)


def _image(image: str, why: str) -> Iterator[Endpoint]:
    for host, port in registry_hosts(image):
        yield Endpoint(host, port, why)


def _chart_images(chart: str, version: str, what: str) -> Iterator[Endpoint]:
    registries = facts.CHART_REGISTRIES.get((chart, version))
    if registries is None:
        yield Endpoint(f"the registries of {chart} {version}'s images", 443,
                       f"{what}: a chart this list has no row for (helm template it and read its images)", False)
        return
    for registry in registries:
        yield from _image(f"{registry}/{chart}", f"images of {what}")


def _images(s: Settings) -> Iterator[Endpoint]:
    d, g = s.dask, s.gpu_operator
    users = "scheduler, workers, Jupyter" + (", the environment Job" if d.prepared else "")
    yield from _image(d.image, f"daskImage ({users})")
    if s.data.enabled:
        yield from _image(s.data.image, "dataJobImage (the data Job)")
    yield from _image(f"{g.driver_repository}/{g.driver_image}", "vgpuDriverRepository (the vGPU guest driver)")
    yield from _chart_images("gpu-operator", g.version, f"GPU operator {g.version}")
    if s.storage.provisioner == "nfs-subdir":
        yield from _chart_images("nfs-subdir-external-provisioner", s.storage.nfs_chart_version, "the NFS provisioner")
    if d.on_operator and d.operator is not None:
        yield from _chart_images("dask-kubernetes-operator", d.operator.chart_version, "the Dask operator")


def _url(url: str, why: str) -> Endpoint:
    parts = urlsplit(url)
    return Endpoint(parts.hostname or url, parts.port or (80 if parts.scheme == "http" else 443), why)


def _downloads(s: Settings) -> Iterator[Endpoint]:
    who = {"packageIndexUrl": "the environment Job", "extraPipPackages": "each worker at start"}
    for key, urls in fetch_urls(s).items():
        for url in urls:
            endpoint = _url(url, f"{key} ({who.get(key, 'the data Job')})")
            yield endpoint
            if endpoint.host == facts.PYPI_HOST:
                yield Endpoint(facts.PYPI_FILES, 443, f"{key}: PyPI's file host")
    text = s.dask.extra_pip_packages
    if workers_install(s) and not any(flag in text.split() for flag in ("-i", "--index-url")):
        for host in (facts.PYPI_HOST, facts.PYPI_FILES):  # pip's default index
            yield Endpoint(host, 443, "extraPipPackages (each worker at start, from PyPI)")


def cluster_needs(s: Settings) -> Iterator[Endpoint]:
    yield from _images(s)
    yield from _downloads(s)
    if s.gpu_nodes:
        yield Endpoint(facts.CLS_HOST, 443,
                       "the vGPU licence from each GPU node (CLS; a DLS: its address, in the token)")
        for host in facts.UBUNTU_ARCHIVES:
            yield Endpoint(host, 80, "the GPU operator's driver container: the node's kernel packages")
    share = s.file_share
    server = share.nfs_server if share.mode == "existing" else f"vSAN file share {share.name}'s access point"
    yield Endpoint(server, facts.NFS_PORT, "every node mounts the file share (NFS 4.1)", share.mode == "existing")


# --- the machine that runs Pulumi, and vCenter ----------------------------------------------

def _chart_pins(s: Settings) -> Iterator[tuple[str, object]]:
    d = s.dask
    yield f"GPU operator {s.gpu_operator.version}", s.gpu_operator.chart_pin
    if s.storage.provisioner == "nfs-subdir":
        yield f"NFS provisioner {s.storage.nfs_chart_version}", s.storage.nfs_chart_pin
    if not d.on_operator or d.jupyter.enabled:
        yield f"dask chart {d.chart_version}", d.chart_pin
    if d.on_operator and d.operator is not None:
        yield f"Dask operator chart {d.operator.chart_version}", d.operator.chart_pin


def pulumi_needs(s: Settings) -> Iterator[Endpoint]:
    yield Endpoint(s.vsphere.server, facts.VCENTER_PORT, "vsphere:vsphereServer (the provider, the program's sessions)")
    server = s.supervisor.server or "the Supervisor's control-plane address"
    for port, what in zip(facts.SUPERVISOR_PORTS, ("its login, /wcp/login", "its Kubernetes API"), strict=True):
        yield Endpoint(server, port, f"supervisorServer ({what})", bool(s.supervisor.server))
    yield Endpoint(f"{s.cluster.name}'s control-plane address", facts.API_SERVER_PORT,
                   "the workload cluster's API (every add-on and Dask object)", False)
    for what, pin in _chart_pins(s):
        url = getattr(pin, "url", "")
        if url:
            endpoint = _url(url, f"the {what} archive, unless cached")
            yield endpoint
            if endpoint.host == "github.com":
                yield from (Endpoint(h, 443, f"the {what} archive (GitHub's redirect)") for h in facts.GITHUB_ASSETS)
    for host in facts.PLUGIN_HOSTS:
        yield Endpoint(host, 443, "provider plugins, unless installed")
    yield Endpoint(facts.PULUMI_CLOUD, 443, "the state, where Pulumi Cloud is the backend (else the backend's URL)")


def vcenter_needs(s: Settings) -> Iterator[Endpoint]:
    library = s.content_library
    if s.vsphere.version == 7 and not library.existing:
        yield _url(library.url, "contentLibraryUrl (the TKR library's subscription)")


# --- the stack file, and the command --------------------------------------------------------

REQUIRED_SECRETS = ("ngcApiKey", "vgpuLicenseToken", *stack_file.PROVIDER_SECRETS)


def stack_file_settings(path: Path) -> Settings:
    """The settings of a stack file over ``Pulumi.yaml``'s defaults, its secrets never read (a
    placeholder stands for each, set or not: nothing here depends on one)."""
    return load(stack_file.stack_source(stack_file.stack_config(path), assume=REQUIRED_SECRETS))


def markdown(needs: dict[str, tuple[Endpoint, ...]]) -> str:
    """One table per source that needs anything: host, port, what needs it."""
    parts = []
    for source, endpoints in needs.items():
        if not endpoints:
            continue
        rows = [f"| {f'`{e.host}`' if e.literal else e.host} | {e.port} | {e.why} |" for e in endpoints]
        parts.append("\n".join([f"{SOURCES[source]}:", "", "| host | port | what needs it |", "|---|---|---|", *rows]))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The hosts and ports a stack needs, from its stack file.")
    parser.add_argument("--stack", required=True, help="the stack's name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--dir", type=Path, default=REPO, help="the project folder (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        settings = stack_file_settings(stack_file.stack_path(args.dir, args.stack))
    except stack_file.StackFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SettingsError as exc:
        for problem in exc.problems:
            print(f"stack {args.stack}: {problem.config_key(exc.project)}: {problem.message}", file=sys.stderr)
        print(f"stack {args.stack}: its settings have {len(exc.problems)} problem(s), so its network cannot be"
              f" derived (dask-tkg check --stack {args.stack} lists the same)", file=sys.stderr)
        return 1
    print(markdown(requirements(settings)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
