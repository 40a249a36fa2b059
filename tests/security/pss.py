"""A Pod Security Standards checker whose rules are those of Kubernetes' own admission plugin.

The rules are re-expressed from ``k8s.io/pod-security-admission`` at tag v0.36.2 (the
``policy/check_*.go`` files), evaluated at policy version "latest": for each check, the newest
rule version registered at that tag. Manifests can therefore be judged here, without a cluster,
exactly as a namespace labelled ``pod-security.kubernetes.io/enforce=<level>`` would judge the
pods they create.

How levels combine follows upstream's ``policy/registry.go``: "privileged" allows everything;
"baseline" runs the baseline checks; "restricted" runs the restricted checks plus every baseline
check that no restricted check overrides (``capabilities_restricted`` replaces
``capabilities_baseline``, ``restrictedVolumes`` replaces ``hostPathVolumes``,
``seccompProfile_restricted`` replaces ``seccompProfile_baseline`` and ``procMount_restricted``
replaces ``procMount``). Like upstream's ``policy/visitor.go``, container checks visit
initContainers, containers and ephemeralContainers.

Each violation is one string ``"<check id>: <what, and where>"``, the check id being upstream's,
so a failure names the rule to look up and the container, volume or field to fix. Where upstream
reports only its first class of offender (e.g. explicit ``runAsNonRoot=false`` before missing
ones), every offender is listed here: the pod is refused either way, and the list is complete.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

LEVELS = ("privileged", "baseline", "restricted")
UPSTREAM = "k8s.io/pod-security-admission v0.36.2"

ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"

# Facts from the upstream checks (latest rule version at v0.36.2).
BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",  # 1.27
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",  # 1.29
    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",  # 1.29
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",  # 1.32
})
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
SECCOMP_TYPES = frozenset({"RuntimeDefault", "Localhost"})
APPARMOR_TYPES = frozenset({"RuntimeDefault", "Localhost"})
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
RESTRICTED_VOLUME_SOURCES_ALLOWED = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim",
    "projected", "secret",
})
RESTRICTED_VOLUME_SOURCES_KNOWN = frozenset({
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs",
    "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte",
    "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos",
})

Metadata = dict
Spec = dict
CheckFn = Callable[[Metadata, Spec], "list[str]"]


# ---- helpers -------------------------------------------------------------------------------

def _dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...`` with None for any missing or null step, because JSON omits and nulls alike."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _containers(spec: Spec) -> Iterator[tuple[str, dict]]:
    """Every container with its label, in upstream's visiting order, because every kind runs code."""
    for field, kind in (("initContainers", "initContainer"), ("containers", "container"),
                        ("ephemeralContainers", "ephemeralContainer")):
        for container in spec.get(field) or ():
            if isinstance(container, dict):
                yield f"{kind} '{container.get('name', '')}'", container


def _sc(container: dict) -> dict:
    """A container's securityContext, empty when unset, because unset means the defaults."""
    return container.get("securityContext") or {}


def _pod_sc(spec: Spec) -> dict:
    """The pod's securityContext, empty when unset, because unset means the defaults."""
    return spec.get("securityContext") or {}


def _is_windows(spec: Spec) -> bool:
    """Whether spec.os.name is windows, because upstream exempts such pods from Linux-only restricted rules."""
    return _dig(spec, "os", "name") == "windows"


def _in_user_namespace(spec: Spec) -> bool:
    """Whether hostUsers is false, because a user-namespaced pod's root is not the node's root (helpers.go)."""
    return spec.get("hostUsers") is False


def _quote(items) -> str:
    """Items as 'a', 'b', because names in messages must stand out from the prose."""
    return ", ".join(f"'{item}'" for item in items)


# ---- baseline checks -----------------------------------------------------------------------

def check_app_armor_profile(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_appArmorProfile.go`` (v0.36.2): forbids AppArmor profiles other than
    RuntimeDefault/Localhost in pod or container fields, and beta annotations other than
    runtime/default, localhost/* or empty, because an unconfined profile lifts the default confinement."""
    found = []
    pod_type = _dig(_pod_sc(spec), "appArmorProfile")
    if pod_type is not None and _dig(pod_type, "type") not in APPARMOR_TYPES:
        found.append(f"pod sets appArmorProfile.type '{_dig(pod_type, 'type') or ''}'")
    for label, container in _containers(spec):
        profile = _sc(container).get("appArmorProfile")
        if profile is not None and _dig(profile, "type") not in APPARMOR_TYPES:
            found.append(f"{label} sets appArmorProfile.type '{_dig(profile, 'type') or ''}'")
    for key, annotation in sorted((metadata.get("annotations") or {}).items()):
        value = annotation or ""
        if key.startswith(APPARMOR_ANNOTATION_PREFIX) and not (
                value == "" or value == "runtime/default" or value.startswith("localhost/")):
            found.append(f"annotation {key}='{value}' sets a forbidden AppArmor profile")
    return [f"appArmorProfile: {item}" for item in found]


def check_capabilities_baseline(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_capabilities_baseline.go`` (v0.36.2): forbids adding capabilities
    beyond the container runtime's default set, because those (SYS_ADMIN, NET_RAW, ...) widen the
    kernel attack surface."""
    found = []
    for label, container in _containers(spec):
        added = _dig(_sc(container), "capabilities", "add") or ()
        bad = sorted({str(cap) for cap in added if cap not in BASELINE_CAPABILITIES})
        if bad:
            found.append(f"capabilities_baseline: {label} adds non-default capabilities {_quote(bad)}")
    return found


def check_host_namespaces(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_hostNamespaces.go`` (v0.36.2): forbids hostNetwork, hostPID and
    hostIPC, because sharing the node's namespaces lets the pod see and reach the node's processes
    and traffic."""
    return [f"hostNamespaces: pod sets {field}=true"
            for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field)]


def check_host_path_volumes(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_hostPathVolumes.go`` (v0.36.2): forbids hostPath volumes, because
    they expose the node's file system to the pod."""
    return [f"hostPathVolumes: volume '{volume.get('name', '')}' is a hostPath volume"
            for volume in spec.get("volumes") or () if isinstance(volume, dict) and volume.get("hostPath") is not None]


def check_host_ports(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_hostPorts.go`` (v0.36.2): forbids non-zero hostPort on container
    ports, because a host port binds the node's network interface and bypasses network policy."""
    found = []
    for label, container in _containers(spec):
        ports = sorted({str(port.get("hostPort")) for port in container.get("ports") or ()
                        if isinstance(port, dict) and port.get("hostPort")})
        if ports:
            found.append(f"hostPorts: {label} uses hostPort {', '.join(ports)}")
    return found


def _handler_hosts(prefix: str, handler: Any) -> list[str]:
    """'field=host' for a probe or lifecycle handler naming a host, because only the pod IP is safe."""
    return [f"{prefix}.{action}.host '{host}'" for action in ("httpGet", "tcpSocket")
            if (host := _dig(handler, action, "host"))]


def check_host_probes_and_host_lifecycle(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_hostProbesAndhostLifecycle.go`` (v0.36.2, rule of 1.34): forbids a
    host in httpGet/tcpSocket probes and lifecycle handlers, because the kubelet would then connect
    to an arbitrary address (the node itself included) on the pod's behalf."""
    found = []
    for label, container in _containers(spec):
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            found += [f"{label} sets {item}" for item in _handler_hosts(probe, container.get(probe))]
        for hook in ("postStart", "preStop"):
            found += [f"{label} sets {item}" for item in _handler_hosts(f"lifecycle.{hook}",
                                                                        _dig(container, "lifecycle", hook))]
    return [f"hostProbesAndHostLifecycle: {item}" for item in found]


def check_privileged(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_privileged.go`` (v0.36.2): forbids securityContext.privileged=true,
    because a privileged container disables nearly every isolation mechanism."""
    return [f"privileged: {label} sets securityContext.privileged=true"
            for label, container in _containers(spec) if _sc(container).get("privileged")]


def _unmasked_proc_mounts(check_id: str, spec: Spec) -> list[str]:
    """Containers whose procMount is set to something other than Default, because /proc masks hide host data."""
    return [f"{check_id}: {label} sets securityContext.procMount '{_sc(container)['procMount']}'"
            for label, container in _containers(spec)
            if _sc(container).get("procMount") is not None and _sc(container)["procMount"] != "Default"]


def check_proc_mount(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_procMount_baseline.go`` (v0.36.2, rule of 1.35): forbids procMount
    other than Default unless hostUsers is false, because the default /proc masks hide host
    information and only a user namespace makes an unmasked /proc harmless."""
    return [] if _in_user_namespace(spec) else _unmasked_proc_mounts("procMount", spec)


def _selinux_problems(options: Any) -> list[str]:
    """What is wrong with one seLinuxOptions, because type is allow-listed and user/role are forbidden."""
    if not isinstance(options, dict):
        return []
    problems = []
    if (options.get("type") or "") not in SELINUX_TYPES:
        problems.append(f"type '{options.get('type')}'")
    problems += [f"{field} may not be set" for field in ("user", "role") if options.get(field)]
    return problems


def check_se_linux_options(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_seLinuxOptions.go`` (v0.36.2, rule of 1.31): forbids SELinux types
    outside the container_* allow-list and any custom user or role, because those escape the
    container SELinux domain."""
    found = []
    if problems := _selinux_problems(_pod_sc(spec).get("seLinuxOptions")):
        found.append(f"pod sets forbidden seLinuxOptions: {'; '.join(problems)}")
    for label, container in _containers(spec):
        if problems := _selinux_problems(_sc(container).get("seLinuxOptions")):
            found.append(f"{label} sets forbidden seLinuxOptions: {'; '.join(problems)}")
    return [f"seLinuxOptions: {item}" for item in found]


def _bad_seccomp_setters(spec: Spec) -> list[str]:
    """Pod/containers that explicitly set a seccomp type other than RuntimeDefault/Localhost."""
    found = []
    profile = _pod_sc(spec).get("seccompProfile")
    if profile is not None and _dig(profile, "type") not in SECCOMP_TYPES:
        found.append(f"pod sets seccompProfile.type '{_dig(profile, 'type') or ''}'")
    for label, container in _containers(spec):
        profile = _sc(container).get("seccompProfile")
        if profile is not None and _dig(profile, "type") not in SECCOMP_TYPES:
            found.append(f"{label} sets seccompProfile.type '{_dig(profile, 'type') or ''}'")
    return found


def check_seccomp_profile_baseline(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_seccompProfile_baseline.go`` (v0.36.2, rule of 1.19): forbids a
    seccomp profile other than RuntimeDefault/Localhost where one is set, because Unconfined turns
    the syscall filter off."""
    return [f"seccompProfile_baseline: {item}" for item in _bad_seccomp_setters(spec)]


def check_sysctls(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_sysctls.go`` (v0.36.2, rule of 1.32): forbids sysctls outside the
    safe, namespaced allow-list, because the others can affect the whole node."""
    return [f"sysctls: pod sets unsafe sysctl '{sysctl.get('name')}'"
            for sysctl in _pod_sc(spec).get("sysctls") or ()
            if isinstance(sysctl, dict) and sysctl.get("name") not in SAFE_SYSCTLS]


def check_windows_host_process(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_windowsHostProcess.go`` (v0.36.2): forbids
    windowsOptions.hostProcess=true, because a Windows HostProcess container runs directly on the
    node with full access."""
    found = ["pod"] if _dig(_pod_sc(spec), "windowsOptions", "hostProcess") else []
    found += [label for label, container in _containers(spec)
              if _dig(_sc(container), "windowsOptions", "hostProcess")]
    return [f"windowsHostProcess: {who} sets securityContext.windowsOptions.hostProcess=true" for who in found]


# ---- restricted checks ---------------------------------------------------------------------

def check_allow_privilege_escalation(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_allowPrivilegeEscalation.go`` (v0.36.2, rule of 1.25): requires
    allowPrivilegeEscalation=false explicitly on every container of a non-Windows pod, because
    the default lets setuid binaries gain privileges."""
    if _is_windows(spec):
        return []
    return [f"allowPrivilegeEscalation: {label} does not set securityContext.allowPrivilegeEscalation=false"
            for label, container in _containers(spec) if _sc(container).get("allowPrivilegeEscalation") is not False]


def check_capabilities_restricted(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_capabilities_restricted.go`` (v0.36.2, rule of 1.25): requires every
    container of a non-Windows pod to drop ALL and add nothing but NET_BIND_SERVICE, because even
    the runtime's default capabilities are more than an application needs."""
    if _is_windows(spec):
        return []
    found = []
    for label, container in _containers(spec):
        capabilities = _sc(container).get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or ()):
            found.append(f"{label} does not set securityContext.capabilities.drop=['ALL']")
        added = sorted({str(cap) for cap in capabilities.get("add") or () if cap != "NET_BIND_SERVICE"})
        if added:
            found.append(f"{label} adds {_quote(added)} (only 'NET_BIND_SERVICE' may be added)")
    return [f"capabilities_restricted: {item}" for item in found]


def check_proc_mount_restricted(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_procMount_restricted.go`` (v0.36.2, rule of 1.35): forbids procMount
    other than Default even in a user namespace, because restricted keeps the /proc masks
    unconditionally."""
    return _unmasked_proc_mounts("procMount_restricted", spec)


def check_restricted_volumes(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_restrictedVolumes.go`` (v0.36.2): allows only configMap, csi,
    downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected and secret volumes,
    because every other inline source reaches node or storage-system resources directly."""
    found = []
    for volume in spec.get("volumes") or ():
        if not isinstance(volume, dict):
            continue
        sources = [key for key, value in volume.items() if key != "name" and value is not None]
        bad = sorted({key if key in RESTRICTED_VOLUME_SOURCES_KNOWN else "unknown"
                      for key in sources if key not in RESTRICTED_VOLUME_SOURCES_ALLOWED})
        if bad or not sources:
            found.append(f"restrictedVolumes: volume '{volume.get('name', '')}' uses restricted volume type "
                         f"{_quote(bad or ['unknown'])}")
    return found


def check_run_as_non_root(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_runAsNonRoot.go`` (v0.36.2, rule of 1.35): requires runAsNonRoot=true
    at pod level or on every container (and never false), unless hostUsers is false, because a
    container running as UID 0 is root on the node once it escapes."""
    if _in_user_namespace(spec):
        return []
    found = []
    pod_value = _pod_sc(spec).get("runAsNonRoot")
    if pod_value is not None and pod_value is not True:
        found.append("pod sets securityContext.runAsNonRoot=false")
    for label, container in _containers(spec):
        value = _sc(container).get("runAsNonRoot")
        if value is None and pod_value is not True:
            found.append(f"{label} does not set runAsNonRoot=true (nor does the pod)")
        elif value is not None and value is not True:
            found.append(f"{label} sets securityContext.runAsNonRoot=false")
    return [f"runAsNonRoot: {item}" for item in found]


def check_run_as_user(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_runAsUser.go`` (v0.36.2, rule of 1.35): forbids runAsUser=0 on the
    pod or any container unless hostUsers is false, because UID 0 is root."""
    if _in_user_namespace(spec):
        return []
    found = ["pod"] if _pod_sc(spec).get("runAsUser") == 0 else []
    found += [label for label, container in _containers(spec) if _sc(container).get("runAsUser") == 0]
    return [f"runAsUser: {who} sets runAsUser=0" for who in found]


def check_seccomp_profile_restricted(metadata: Metadata, spec: Spec) -> list[str]:
    """Upstream ``policy/check_seccompProfile_restricted.go`` (v0.36.2, rule of 1.25): requires
    seccomp RuntimeDefault or Localhost at pod level or on every container of a non-Windows pod,
    because without a profile the container runs unfiltered (Unconfined)."""
    if _is_windows(spec):
        return []
    found = _bad_seccomp_setters(spec)
    pod_ok = _dig(_pod_sc(spec), "seccompProfile", "type") in SECCOMP_TYPES
    if not pod_ok:
        found += [f"{label} does not set seccompProfile.type 'RuntimeDefault' or 'Localhost' (nor does the pod)"
                  for label, container in _containers(spec) if _sc(container).get("seccompProfile") is None]
    return [f"seccompProfile_restricted: {item}" for item in found]


# ---- registry ------------------------------------------------------------------------------

# (upstream check ID, level, function, baseline IDs it overrides), as registered at v0.36.2.
CHECKS: tuple[tuple[str, str, CheckFn, tuple[str, ...]], ...] = (
    ("appArmorProfile", "baseline", check_app_armor_profile, ()),
    ("capabilities_baseline", "baseline", check_capabilities_baseline, ()),
    ("hostNamespaces", "baseline", check_host_namespaces, ()),
    ("hostPathVolumes", "baseline", check_host_path_volumes, ()),
    ("hostPorts", "baseline", check_host_ports, ()),
    ("hostProbesAndHostLifecycle", "baseline", check_host_probes_and_host_lifecycle, ()),
    ("privileged", "baseline", check_privileged, ()),
    ("procMount", "baseline", check_proc_mount, ()),
    ("seLinuxOptions", "baseline", check_se_linux_options, ()),
    ("seccompProfile_baseline", "baseline", check_seccomp_profile_baseline, ()),
    ("sysctls", "baseline", check_sysctls, ()),
    ("windowsHostProcess", "baseline", check_windows_host_process, ()),
    ("allowPrivilegeEscalation", "restricted", check_allow_privilege_escalation, ()),
    ("capabilities_restricted", "restricted", check_capabilities_restricted, ("capabilities_baseline",)),
    ("procMount_restricted", "restricted", check_proc_mount_restricted, ("procMount",)),
    ("restrictedVolumes", "restricted", check_restricted_volumes, ("hostPathVolumes",)),
    ("runAsNonRoot", "restricted", check_run_as_non_root, ()),
    ("runAsUser", "restricted", check_run_as_user, ()),
    ("seccompProfile_restricted", "restricted", check_seccomp_profile_restricted, ("seccompProfile_baseline",)),
)


def checks_for(level: str) -> list[tuple[str, CheckFn]]:
    """The (id, function) pairs a level runs, baseline ones first, because registry.go orders
    messages so and lets restricted checks replace the baseline checks they tighten."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}; expected one of {LEVELS}")
    if level == "privileged":
        return []
    wanted = ("baseline",) if level == "baseline" else ("baseline", "restricted")
    overridden = {o for _, lvl, _, overrides in CHECKS if lvl in wanted for o in overrides}
    return [(check_id, fn) for check_id, lvl, fn, _ in CHECKS if lvl in wanted and check_id not in overridden]


def check_pod(metadata: dict | None, spec: dict | None, level: str) -> list[str]:
    """Every violation of ``level`` by the pod (restricted includes baseline), empty when the
    pod is admitted, because a caller wants the whole list of fixes in one go."""
    metadata, spec = metadata or {}, spec or {}
    return [message for _, fn in checks_for(level) for message in fn(metadata, spec)]


# ---- objects and namespaces ----------------------------------------------------------------

# (API group, kind) -> path to the pod template, as upstream's DefaultPodSpecExtractor reads them.
_TEMPLATE_PATHS = {
    ("", "PodTemplate"): ("template",),
    ("", "ReplicationController"): ("spec", "template"),
    ("apps", "Deployment"): ("spec", "template"),
    ("apps", "StatefulSet"): ("spec", "template"),
    ("apps", "DaemonSet"): ("spec", "template"),
    ("apps", "ReplicaSet"): ("spec", "template"),
    ("batch", "Job"): ("spec", "template"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
}


def pod_template(obj: dict) -> tuple[dict, dict] | None:
    """(metadata, spec) of the pod an object is or creates, None for other objects, because the
    admission plugin judges workloads by their pod template (``admission/admission.go``). The
    apiVersion's group must match when given, so a custom resource named "Deployment" is not
    mistaken for one."""
    if not isinstance(obj, dict):
        return None
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else None
    if kind == "Pod" and group in (None, ""):
        return obj.get("metadata") or {}, obj.get("spec") or {}
    path = next((p for (g, k), p in _TEMPLATE_PATHS.items() if k == kind and group in (None, g)), None)
    template = _dig(obj, *path) if path else None
    if not isinstance(template, dict):
        return None
    return template.get("metadata") or {}, template.get("spec") or {}


def namespace_level(namespace_obj: dict) -> str:
    """The level enforced on a namespace's pods: its ``pod-security.kubernetes.io/enforce`` label,
    "privileged" when unlabelled (the default AdmissionConfiguration's enforce level), and
    "restricted" for a value that is not a level, because upstream's ParseLevel fails closed."""
    value = _dig(namespace_obj, "metadata", "labels", ENFORCE_LABEL)
    if value is None:
        return "privileged"
    return value if value in LEVELS else "restricted"
