"""Whether the Supervisor can serve the Cluster: checked at ``pulumi preview``, before anything is built.

A ``cluster.x-k8s.io/v1beta1`` Cluster names a ClusterClass (``clusterClass``), a release
(``tkr``, a VKr) and, on GPU pools, an OS image (Ubuntu). A Supervisor that lacks any of them
(a vSphere 8 U3 Supervisor with TKG Service 3.0 has neither ``builtin-generic-v3.4.0`` nor a
1.32 VKr) refuses the Cluster only after VM classes, storage policies, namespace and file share
were created. ``SupervisorReleasesProvider.check`` reads the Supervisor's own objects with the
Supervisor kubeconfig at preview (it changes nothing) and refuses, naming the setting.

Upstream facts relied on (the CRD files are the pinned artifacts of scripts/artifacts.toml):

- ClusterClass: ``cluster.x-k8s.io/v1beta1``, namespaced, plural ``clusterclasses``
  (kubernetes-sigs/cluster-api v1.10.10, config/crd/bases/cluster.x-k8s.io_clusterclasses.yaml).
- Releases come in one of two APIs, and the check reads whichever the Supervisor's API discovery
  lists (``GET /apis/<group>/<version>``), the newer first:

  - KubernetesRelease (VKS 3.4 and later, ``kubectl get kr``): ``kubernetes.vmware.com/v1alpha1``,
    cluster-scoped, plural ``kubernetesreleases``, short name ``kr``; ``spec.version`` is the
    release with ``+`` (``v1.35.2+vmware.1-vkr.3``, the object's name writing ``+`` as ``---``);
    ``status.conditions`` ``Ready`` and ``Compatible`` (the READY and COMPATIBLE columns). VMware's
    VKS API reference (developer.broadcom.com/xapis/vmware-vsphere-kubernetes-service) cannot be
    read from where this was written; these facts come from VKS 3.4-3.7 and VCF 9 Supervisors as
    public tooling reads them (a VCF Automation action that lists
    ``/apis/kubernetes.vmware.com/v1alpha1/kubernetesreleases``, keeps ``Ready=True`` and takes
    ``spec.version``; a VKS dashboard that tries it after the TKR path; ``kubectl get kr`` output
    with those columns; ``kubectl get tkr -l '!kubernetes.vmware.com/kubernetesrelease'`` on a
    1.34 VKr, i.e. VKS still mirrors each KubernetesRelease as a labelled TKR). A KubernetesRelease
    names no OS images: those are the OSImages (still ``kubectl get osimages`` on VKS 3.4+) whose
    ``spec.kubernetesVersion`` is the release's version without its ``-vkr.N`` suffix, the value a
    Cluster's ``topology.version`` takes.
  - TanzuKubernetesRelease (vSphere 8, TKG Service): ``run.tanzu.vmware.com/v1alpha3``,
    cluster-scoped, plural ``tanzukubernetesreleases``; ``spec.osImages`` lists OSImage names;
    ``status.conditions`` with ``type``/``status``/``reason``/``message``, the printer columns
    reading ``Ready`` and ``Compatible`` (vmware-tanzu/tanzu-framework@2bcc114e,
    apis/run/config/crd/bases/run.tanzu.vmware.com_tanzukubernetesreleases.yaml). The object's
    name is the release with ``+`` written ``---``, which ``tkr`` already is.

- OSImage: ``run.tanzu.vmware.com/v1alpha3``, cluster-scoped, plural ``osimages``,
  ``spec.os.name`` (``ubuntu``, ``photon``), ``spec.os.version`` and ``spec.kubernetesVersion``
  (same commit, run.tanzu.vmware.com_osimages.yaml).

A Supervisor that serves neither release API is refused with both named: its kubeconfig points
elsewhere, or the vSphere Kubernetes Service is not running on it.

The product does not depend on the ``kubernetes`` client package: ``kube_api`` parses the
kubeconfig and reads the API with ``requests``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic as dyn
import requests

from components.cluster.os_images import ANY, pool_os_needs, pool_os_versions
from components.cluster.providers import kube_api
from components.facts.cluster_classes import UNVERSIONED_CLASS
from components.settings.model import ClusterSpec
from components.vsphere.providers.session import changed_keys, is_unknown

CLUSTERCLASSES = "/apis/cluster.x-k8s.io/v1beta1/namespaces/{namespace}/clusterclasses"
OSIMAGES = "/apis/run.tanzu.vmware.com/v1alpha3/osimages"
SPEC_KEYS = ("cluster_class", "class_namespace", "tkr", "pools")
TIMEOUT_S = 30.0


class SupervisorReadError(RuntimeError):
    """The Supervisor's API could not be read (not a missing object: that is a refusal)."""


class NoReleaseApi(RuntimeError):
    """The Supervisor serves no API for Kubernetes releases at all."""


@dataclass(frozen=True)
class ReleaseApi:
    """One of the two APIs a Supervisor serves its Kubernetes releases in."""

    kind: str
    group_version: str
    plural: str
    names_images: bool  # True: ``spec.osImages`` lists them; False: matched by Kubernetes version
    served_by: str

    @property
    def discovery(self) -> str:
        return f"/apis/{self.group_version}"

    @property
    def path(self) -> str:
        return f"{self.discovery}/{self.plural}"

    def describe(self) -> str:
        return f"{self.group_version} {self.kind}s ({self.served_by})"


KUBERNETES_RELEASES = ReleaseApi("KubernetesRelease", "kubernetes.vmware.com/v1alpha1", "kubernetesreleases",
                                 names_images=False, served_by="VKS 3.4 and later, `kubectl get kr`")
TANZU_RELEASES = ReleaseApi("TanzuKubernetesRelease", "run.tanzu.vmware.com/v1alpha3", "tanzukubernetesreleases",
                            names_images=True, served_by="vSphere 8 TKG Service, `kubectl get tkr`")
RELEASE_APIS = (KUBERNETES_RELEASES, TANZU_RELEASES)  # the newer first: VKS 3.4+ serves both
VKR_SUFFIX = re.compile(r"-vkr\.\d+$")


# --- the Supervisor's API, from a kubeconfig (components.cluster.providers.kube_api) ------------

def get(http: requests.Session, target: kube_api.ApiTarget, path: str) -> dict[str, Any] | None:
    """One object or list (``None`` when the server answers 404)."""
    try:
        answer: dict[str, Any] = kube_api.get_json(http, target, path, timeout=TIMEOUT_S)
        return answer
    except kube_api.KubeApiError as exc:
        if exc.status == 404:
            return None
        raise SupervisorReadError(str(exc)) from None


# --- what the Supervisor offers ---------------------------------------------------------------

def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The status condition ``kind`` (Cluster API's Condition shape, which the TKR CRD uses)."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            found: Mapping[str, Any] = cond
            return found
    return None


def _usable(obj: Mapping[str, Any]) -> bool:
    return all((condition(obj, kind) or {}).get("status") == "True" for kind in ("Ready", "Compatible"))


def served_release_api(http: requests.Session, target: kube_api.ApiTarget) -> ReleaseApi:
    """The release API the Supervisor's discovery lists (the newer when both are)."""
    for api in RELEASE_APIS:
        resources = (get(http, target, api.discovery) or {}).get("resources") or []
        if any(resource.get("name") == api.plural for resource in resources):
            return api
    raise NoReleaseApi(f"the Supervisor ({target.server}) serves no Kubernetes releases: neither "
                       f"{KUBERNETES_RELEASES.describe()} nor {TANZU_RELEASES.describe()} (GET "
                       f"{KUBERNETES_RELEASES.discovery} and {TANZU_RELEASES.discovery} list neither); is this"
                       " kubeconfig the Supervisor's, and is the vSphere Kubernetes Service running on it?")


def usable_releases(http: requests.Session, target: kube_api.ApiTarget, api: ReleaseApi) -> list[str]:
    """The releases a Cluster can use now: Ready and Compatible."""
    items = (get(http, target, api.path) or {}).get("items") or []
    return sorted(item["metadata"]["name"] for item in items if _usable(item))


def class_problems(http: requests.Session, target: kube_api.ApiTarget,
                   props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``clusterClass`` not served in ``clusterClassNamespace``.

    ``tanzukubernetescluster`` is skipped: VKS publishes it into each vSphere Namespace, and
    this program creates that namespace later in the same run, so nothing can be read yet."""
    name, namespace = props["cluster_class"], props["class_namespace"]
    if name == UNVERSIONED_CLASS:
        return []
    path = CLUSTERCLASSES.format(namespace=namespace)
    if get(http, target, f"{path}/{name}") is not None:
        return []
    listed = get(http, target, path)
    if listed is None:
        held = "it serves no cluster.x-k8s.io/v1beta1 ClusterClass at all (is the vSphere Kubernetes Service 3.x?)"
    else:
        names = sorted(item["metadata"]["name"] for item in listed.get("items") or [])
        held = f"namespace {namespace} has: {', '.join(names) or 'no ClusterClass'}"
    return [("clusterClass", f"the Supervisor ({target.server}) does not serve ClusterClass {name} in namespace "
                             f"{namespace} (GET {path}/{name} -> HTTP 404); {held}")]


def _condition_text(obj: Mapping[str, Any], kind: str) -> str | None:
    cond = condition(obj, kind)
    if cond is None:
        return f"has no {kind} condition"
    if cond.get("status") == "True":
        return None
    detail = "; ".join(part for part in (cond.get("reason"), cond.get("message")) if part)
    return f"is not {kind} ({kind}={cond.get('status')}{': ' + detail if detail else ''})"


def release_problems(http: requests.Session, target: kube_api.ApiTarget,
                     props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``tkr`` missing, not Ready or not Compatible; else what its OS images leave out."""
    tkr, api = props["tkr"], served_release_api(http, target)
    release = get(http, target, f"{api.path}/{tkr}")
    if release is None:
        why = f"is not on the Supervisor ({target.server}; GET {api.path}/{tkr} -> HTTP 404)"
    else:
        faults = [t for t in (_condition_text(release, k) for k in ("Ready", "Compatible")) if t]
        if not faults:
            return os_problems(http, target, props, api, release)
        why = " and ".join(faults)
    usable = usable_releases(http, target, api)
    return [("tkr", f"{api.kind} {tkr} {why}; Ready and Compatible there: {', '.join(usable) or 'none'}")]


def kubernetes_version(release: Mapping[str, Any]) -> str:
    """``v1.35.2+vmware.1`` of a KubernetesRelease whose ``spec.version`` is ``v1.35.2+vmware.1-vkr.3``."""
    return VKR_SUFFIX.sub("", str((release.get("spec") or {}).get("version") or ""))


def _belongs(api: ReleaseApi, release: Mapping[str, Any], image: Mapping[str, Any]) -> bool:
    if api.names_images:
        listed = (release.get("spec") or {}).get("osImages") or []
        return image["metadata"]["name"] in {ref.get("name") for ref in listed}
    return (image.get("spec") or {}).get("kubernetesVersion") == kubernetes_version(release)


def release_images(http: requests.Session, target: kube_api.ApiTarget, api: ReleaseApi,
                   release: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The release's OSImage objects that exist, by name: those a TanzuKubernetesRelease lists
    in ``spec.osImages``, or those of a KubernetesRelease's Kubernetes version."""
    items = (get(http, target, OSIMAGES) or {}).get("items") or []
    return {item["metadata"]["name"]: item for item in items if _belongs(api, release, item)}


def _describe(images: Mapping[str, Mapping[str, Any]]) -> str:
    """``photon 5 (vmi-...), ubuntu 22.04 (vmi-...)``: what a pool could have asked for instead."""
    def one(name: str, image: Mapping[str, Any]) -> str:
        os_ = (image.get("spec") or {}).get("os") or {}
        return f"{os_.get('name')} {os_.get('version')} ({name})"
    return ", ".join(one(name, image) for name, image in sorted(images.items())) or "no OS image"


def os_problems(http: requests.Session, target: kube_api.ApiTarget, props: Mapping[str, Any], api: ReleaseApi,
                release: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Pools asking for an OS (GPU pools: Ubuntu, on a current Cluster Ubuntu 22.04) the release
    does not offer: its OSImages' ``spec.os.name`` and ``spec.os.version``."""
    images = release_images(http, target, api, release)
    offered = {(os_.get("name"), str(os_.get("version"))) for os_ in
               (((image.get("spec") or {}).get("os") or {}) for image in images.values())}
    problems = []
    for pool in props["pools"]:
        version = pool.get("os_version") or ANY
        if (pool["os"] == ANY and images) or any(name == pool["os"] and version in (ANY, offered_version)
                                                 for name, offered_version in offered):
            continue
        wants = ("an OS image" if pool["os"] == ANY else
                 f"an {pool['os']} {version} OS image" if version else f"an {pool['os']} OS image")
        why = (" (the GPU operator is validated on VKS with Ubuntu 22.04 only: choose a tkr that offers it)"
               if version else "")
        problems.append((pool["key"], f"node pool {pool['name']} (role {pool['role']}) needs {wants} of "
                                      f"{api.kind} {props['tkr']} (tkr), which offers: {_describe(images)}"
                                      f"{why}"))
    return problems


def supervisor_problems(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every reason the Supervisor cannot serve the Cluster, as (setting key, message)."""
    try:
        target = kube_api.parse_kubeconfig(props["kubeconfig"])
        with kube_api.api_session(target) as http:
            return class_problems(http, target, props) + release_problems(http, target, props)
    except NoReleaseApi as exc:
        return [(props["access_key"], str(exc))]
    except (SupervisorReadError, kube_api.KubeconfigError) as exc:
        return [(props["access_key"], f"cannot check what the Supervisor serves: {exc} (its user must be"
                                      " able to read ClusterClasses in clusterClassNamespace and the"
                                      " cluster-scoped KubernetesReleases or TanzuKubernetesReleases, and"
                                      " OSImages)")]


# --- the dynamic resource ---------------------------------------------------------------------

class SupervisorReleasesProvider(dyn.ResourceProvider):
    """A check-only resource: ``check`` reads the Supervisor at every preview and ``up``;
    create and update only record what was checked (never the kubeconfig)."""

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> dyn.CheckResult:
        if any(is_unknown(v) for v in news.values()):
            return dyn.CheckResult(news, [])
        return dyn.CheckResult(news, [dyn.CheckFailure(key, why) for key, why in supervisor_problems(news)])

    def _outs(self, props: Mapping[str, Any]) -> dict[str, Any]:
        return {k: props.get(k) for k in SPEC_KEYS}

    def create(self, props: dict[str, Any]) -> dyn.CreateResult:
        return dyn.CreateResult(f"{props['tkr']}:{props['cluster_class']}", self._outs(props))

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.DiffResult:
        return dyn.DiffResult(changes=bool(changed_keys(olds, news, SPEC_KEYS)))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> dyn.UpdateResult:
        return dyn.UpdateResult(self._outs(news))


def pools_input(spec: ClusterSpec) -> list[dict[str, str]]:
    """Each node pool's setting key, name, role and the OS it asks for (``ANY``: any)."""
    return [{"key": key, "name": name, "role": pool.role, "os": wants, "os_version": version}
            for pool, (key, name, wants), version in zip(spec.node_pools, pool_os_needs(spec), pool_os_versions(spec),
                                                         strict=True)]


class SupervisorReleases(dyn.Resource, module="cluster", name="SupervisorReleases"):
    """The check that the Supervisor serves ``cluster_class`` and ``tkr`` (Ready, Compatible)
    with the OS image each pool asks for. ``access_key`` is the setting that gave the
    kubeconfig (``supervisorKubeconfig`` or ``supervisorServer``), named when it cannot read."""

    tkr: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None, *,
                 kubeconfig: pulumi.Input[str], access_key: str, spec: ClusterSpec) -> None:
        props = {"kubeconfig": kubeconfig, "access_key": access_key, "cluster_class": spec.cluster_class,
                 "class_namespace": spec.class_namespace, "tkr": spec.tkr, "pools": pools_input(spec)}
        secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        super().__init__(SupervisorReleasesProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
