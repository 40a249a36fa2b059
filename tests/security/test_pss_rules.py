"""The Pod Security Standards checker (``tests/security/pss.py``) judges pods as Kubernetes'
pod-security-admission v0.36.2 does at version "latest": the cases are re-expressed from the
upstream ``policy/*_test.go`` files as small PodSpec dicts (JSON casing), each test citing its
file, and each asserts which check ids fire and which containers, volumes or fields they name."""
from __future__ import annotations

import copy

import pytest

from tests.security import pss


def ids(messages: list[str]) -> list[str]:
    """The check ids of violation messages, in order."""
    return [message.split(":", 1)[0] for message in messages]


def named(messages: list[str], check_id: str) -> list[str]:
    """The messages of one check."""
    return [message for message in messages if message.startswith(check_id + ": ")]


def restricted_pod() -> tuple[dict, dict]:
    """A pod that meets every restricted requirement: pod-level runAsNonRoot and seccomp, every
    container (init, regular, ephemeral) dropping ALL and refusing privilege escalation, only the
    allowed volume types, only safe sysctls."""
    container_sc = {"allowPrivilegeEscalation": False, "runAsUser": 1000,
                    "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}
    spec = {
        "securityContext": {
            "runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"},
            "sysctls": [{"name": name, "value": "1"} for name in sorted(pss.SAFE_SYSCTLS)],
            "seLinuxOptions": {"type": "container_t"}, "appArmorProfile": {"type": "RuntimeDefault"},
        },
        "initContainers": [{"name": "init", "image": "busybox", "securityContext": copy.deepcopy(container_sc)}],
        "containers": [{"name": "worker", "image": "busybox", "securityContext": copy.deepcopy(container_sc),
                        "ports": [{"containerPort": 8080}],
                        "livenessProbe": {"httpGet": {"path": "/", "port": 8080}}}],
        "ephemeralContainers": [{"name": "debug", "image": "busybox", "securityContext": copy.deepcopy(container_sc)}],
        "volumes": [
            {"name": "cm", "configMap": {"name": "x"}}, {"name": "tmp", "emptyDir": {}},
            {"name": "sec", "secret": {"secretName": "x"}}, {"name": "proj", "projected": {"sources": []}},
            {"name": "pvc", "persistentVolumeClaim": {"claimName": "x"}}, {"name": "csi", "csi": {"driver": "d"}},
            {"name": "down", "downwardAPI": {"items": []}}, {"name": "eph", "ephemeral": {}},
            {"name": "img", "image": {"reference": "x"}},
        ],
    }
    return {"name": "p",
            "annotations": {"container.apparmor.security.beta.kubernetes.io/worker": "runtime/default"}}, spec


def _worker(spec: dict) -> dict:
    return spec["containers"][0]


def _worker_sc(spec: dict) -> dict:
    return _worker(spec)["securityContext"]


def test_a_fully_restricted_pod_passes_every_level():
    """Upstream policy/check_*_test.go (v0.36.2): each check's allowed values together, e.g. the
    allowed volumes of check_restrictedVolumes_test.go and the sysctls of check_sysctls_test.go."""
    metadata, spec = restricted_pod()
    for level in pss.LEVELS:
        assert pss.check_pod(metadata, spec, level) == [], level


# Each mutation removes one restricted requirement from restricted_pod(); the pod stays baseline.
RESTRICTED_REMOVALS = {
    "allowPrivilegeEscalation unset": (lambda m, s: _worker_sc(s).pop("allowPrivilegeEscalation"),
                                       "allowPrivilegeEscalation", "container 'worker'"),
    "allowPrivilegeEscalation true": (lambda m, s: _worker_sc(s).update(allowPrivilegeEscalation=True),
                                      "allowPrivilegeEscalation", "container 'worker'"),
    "init container may escalate":
        (lambda m, s: s["initContainers"][0]["securityContext"].pop("allowPrivilegeEscalation"),
         "allowPrivilegeEscalation", "initContainer 'init'"),
    "drop ALL missing": (lambda m, s: _worker_sc(s)["capabilities"].pop("drop"),
                         "capabilities_restricted", "container 'worker'"),
    "drop lists others only": (lambda m, s: _worker_sc(s)["capabilities"].update(drop=["NET_RAW"]),
                               "capabilities_restricted", "container 'worker'"),
    "adds CHOWN": (lambda m, s: _worker_sc(s)["capabilities"].update(add=["CHOWN"]),
                   "capabilities_restricted", "'CHOWN'"),
    "ephemeral container keeps capabilities":
        (lambda m, s: s["ephemeralContainers"][0]["securityContext"].pop("capabilities"),
         "capabilities_restricted", "ephemeralContainer 'debug'"),
    "no seccomp anywhere": (lambda m, s: s["securityContext"].pop("seccompProfile"),
                            "seccompProfile_restricted", "container 'worker'"),
    "runAsNonRoot unset": (lambda m, s: s["securityContext"].pop("runAsNonRoot"),
                           "runAsNonRoot", "container 'worker' does not set runAsNonRoot=true (nor does the pod)"),
    "container runAsNonRoot false": (lambda m, s: _worker_sc(s).update(runAsNonRoot=False),
                                     "runAsNonRoot", "container 'worker' sets securityContext.runAsNonRoot=false"),
    "container runAsUser 0": (lambda m, s: _worker_sc(s).update(runAsUser=0),
                              "runAsUser", "container 'worker' sets runAsUser=0"),
    "pod runAsUser 0": (lambda m, s: s["securityContext"].update(runAsUser=0), "runAsUser", "pod sets runAsUser=0"),
    "nfs volume": (lambda m, s: s["volumes"].append({"name": "share", "nfs": {"server": "x", "path": "/"}}),
                   "restrictedVolumes", "volume 'share' uses restricted volume type 'nfs'"),
    "gitRepo volume": (lambda m, s: s["volumes"].append({"name": "src", "gitRepo": {"repository": "x"}}),
                       "restrictedVolumes", "volume 'src' uses restricted volume type 'gitRepo'"),
    "unmasked /proc in a user namespace":
        (lambda m, s: (s.update(hostUsers=False), _worker_sc(s).update(procMount="Unmasked")),
         "procMount_restricted", "container 'worker' sets securityContext.procMount 'Unmasked'"),
}


@pytest.mark.parametrize("case", sorted(RESTRICTED_REMOVALS))
def test_removing_one_restricted_requirement_fails_restricted_only(case):
    """Upstream policy/check_allowPrivilegeEscalation_test.go, check_capabilities_restricted_test.go,
    check_seccompProfile_restricted_test.go, check_runAsNonRoot_test.go, check_runAsUser_test.go,
    check_restrictedVolumes_test.go, check_procMount_restricted_test.go (v0.36.2): one missing
    requirement fails restricted with exactly that check, naming the offender; baseline still passes."""
    mutate, check_id, offender = RESTRICTED_REMOVALS[case]
    metadata, spec = restricted_pod()
    mutate(metadata, spec)
    violations = pss.check_pod(metadata, spec, "restricted")
    assert set(ids(violations)) == {check_id}, violations
    assert any(offender in message for message in violations), violations
    assert pss.check_pod(metadata, spec, "baseline") == []


# Each mutation breaks one baseline rule: (mutation, baseline ids, restricted ids, offender).
BASELINE_BREAKS = {
    "privileged container": (lambda m, s: _worker_sc(s).update(privileged=True),
                             {"privileged"}, {"privileged"}, "container 'worker' sets securityContext.privileged=true"),
    "hostPath volume": (lambda m, s: s["volumes"].append({"name": "root", "hostPath": {"path": "/"}}),
                        {"hostPathVolumes"}, {"restrictedVolumes"}, "volume 'root'"),
    "hostNetwork": (lambda m, s: s.update(hostNetwork=True), {"hostNamespaces"}, {"hostNamespaces"},
                    "hostNetwork=true"),
    "hostPID": (lambda m, s: s.update(hostPID=True), {"hostNamespaces"}, {"hostNamespaces"}, "hostPID=true"),
    "hostIPC": (lambda m, s: s.update(hostIPC=True), {"hostNamespaces"}, {"hostNamespaces"}, "hostIPC=true"),
    "hostPort": (lambda m, s: _worker(s)["ports"].append({"containerPort": 80, "hostPort": 80}),
                 {"hostPorts"}, {"hostPorts"}, "container 'worker' uses hostPort 80"),
    "adds SYS_ADMIN": (lambda m, s: _worker_sc(s)["capabilities"].update(add=["SYS_ADMIN"]),
                       {"capabilities_baseline"}, {"capabilities_restricted"}, "'SYS_ADMIN'"),
    "unsafe sysctl": (lambda m, s: s["securityContext"]["sysctls"].append({"name": "kernel.msgmax", "value": "1"}),
                      {"sysctls"}, {"sysctls"}, "'kernel.msgmax'"),
    "seccomp Unconfined on a container": (lambda m, s: _worker_sc(s).update(seccompProfile={"type": "Unconfined"}),
                                          {"seccompProfile_baseline"}, {"seccompProfile_restricted"},
                                          "container 'worker' sets seccompProfile.type 'Unconfined'"),
    "seccomp Unconfined on the pod": (lambda m, s: s["securityContext"].update(seccompProfile={"type": "Unconfined"}),
                                      {"seccompProfile_baseline"}, {"seccompProfile_restricted"},
                                      "pod sets seccompProfile.type 'Unconfined'"),
    "AppArmor Unconfined": (lambda m, s: _worker_sc(s).update(appArmorProfile={"type": "Unconfined"}),
                            {"appArmorProfile"}, {"appArmorProfile"},
                            "container 'worker' sets appArmorProfile.type 'Unconfined'"),
    "AppArmor annotation unconfined":
        (lambda m, s: m["annotations"].update({pss.APPARMOR_ANNOTATION_PREFIX + "worker": "unconfined"}),
         {"appArmorProfile"}, {"appArmorProfile"}, "worker='unconfined'"),
    "SELinux type spc_t": (lambda m, s: s["securityContext"].update(seLinuxOptions={"type": "spc_t"}),
                           {"seLinuxOptions"}, {"seLinuxOptions"}, "pod sets forbidden seLinuxOptions: type 'spc_t'"),
    "SELinux user": (lambda m, s: _worker_sc(s).update(seLinuxOptions={"user": "root"}),
                     {"seLinuxOptions"}, {"seLinuxOptions"},
                     "container 'worker' sets forbidden seLinuxOptions: user may not be set"),
    "unmasked /proc": (lambda m, s: _worker_sc(s).update(procMount="Unmasked"),
                       {"procMount"}, {"procMount_restricted"},
                       "container 'worker' sets securityContext.procMount 'Unmasked'"),
    "Windows hostProcess": (lambda m, s: _worker_sc(s).update(windowsOptions={"hostProcess": True}),
                            {"windowsHostProcess"}, {"windowsHostProcess"},
                            "container 'worker' sets securityContext.windowsOptions.hostProcess=true"),
    "probe host": (lambda m, s: _worker(s)["livenessProbe"]["httpGet"].update(host="127.0.0.1"),
                   {"hostProbesAndHostLifecycle"}, {"hostProbesAndHostLifecycle"},
                   "livenessProbe.httpGet.host '127.0.0.1'"),
    "lifecycle host":
        (lambda m, s: _worker(s).update(lifecycle={"preStop": {"tcpSocket": {"host": "10.0.0.1", "port": 1}}}),
         {"hostProbesAndHostLifecycle"}, {"hostProbesAndHostLifecycle"}, "lifecycle.preStop.tcpSocket.host '10.0.0.1'"),
}


@pytest.mark.parametrize("case", sorted(BASELINE_BREAKS))
def test_breaking_one_baseline_rule_fails_baseline_and_restricted(case):
    """Upstream policy/check_privileged_test.go, check_hostPathVolumes_test.go, check_hostNamespaces_test.go,
    check_hostPorts_test.go, check_capabilities_baseline_test.go, check_sysctls_test.go,
    check_seccompProfile_baseline_test.go, check_appArmorProfile_test.go, check_seLinuxOptions_test.go,
    check_procMount_baseline_test.go, check_windowsHostProcess_test.go,
    check_hostProbesAndhostLifecycle_test.go (v0.36.2): the rule fails baseline, and restricted
    through the same check or the restricted one that overrides it; privileged still admits."""
    mutate, baseline_ids, restricted_ids, offender = BASELINE_BREAKS[case]
    metadata, spec = restricted_pod()
    mutate(metadata, spec)
    for level, expected in (("baseline", baseline_ids), ("restricted", restricted_ids)):
        violations = pss.check_pod(metadata, spec, level)
        assert set(ids(violations)) == expected, (level, violations)
        assert any(offender in message for message in violations), (level, violations)
    assert pss.check_pod(metadata, spec, "privileged") == []


def root_pod() -> tuple[dict, dict]:
    """A plain root pod: no securityContext at all, runs as UID 0."""
    return {}, {"securityContext": {"runAsUser": 0},
                "containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}],
                "volumes": [{"name": "data", "emptyDir": {}}]}


def test_a_baseline_root_pod_passes_baseline_but_fails_restricted():
    """Upstream policy/check_runAsUser_test.go and check_runAsNonRoot_test.go (v0.36.2): runAsUser=0
    and a missing runAsNonRoot are restricted-only rules, so baseline admits a root pod."""
    metadata, spec = root_pod()
    assert pss.check_pod(metadata, spec, "baseline") == []
    violations = pss.check_pod(metadata, spec, "restricted")
    assert ids(violations) == ["allowPrivilegeEscalation", "capabilities_restricted", "runAsNonRoot",
                               "runAsUser", "seccompProfile_restricted"], violations
    assert "runAsUser: pod sets runAsUser=0" in violations
    assert "runAsNonRoot: container 'app' does not set runAsNonRoot=true (nor does the pod)" in violations


def worst_pod() -> tuple[dict, dict]:
    """A pod breaking nearly every rule at once."""
    return ({"annotations": {pss.APPARMOR_ANNOTATION_PREFIX + "x": "unconfined"}},
            {"hostNetwork": True, "hostPID": True, "hostIPC": True,
             "securityContext": {"runAsUser": 0, "sysctls": [{"name": "kernel.core_pattern", "value": "|x"}],
                                 "seccompProfile": {"type": "Unconfined"}},
             "containers": [{"name": "x", "ports": [{"hostPort": 22}],
                             "securityContext": {"privileged": True, "procMount": "Unmasked",
                                                 "capabilities": {"add": ["SYS_ADMIN", "NET_RAW"]},
                                                 "seLinuxOptions": {"type": "spc_t", "role": "r"}}}],
             "volumes": [{"name": "root", "hostPath": {"path": "/"}}]})


def test_privileged_level_accepts_anything():
    """Upstream policy/registry.go (v0.36.2): the privileged level runs no checks at all, though
    the same pod fails ten baseline checks, reported in upstream's order (sorted ids)."""
    metadata, spec = worst_pod()
    assert pss.check_pod(metadata, spec, "privileged") == []
    assert list(dict.fromkeys(ids(pss.check_pod(metadata, spec, "baseline")))) == [
        "appArmorProfile", "capabilities_baseline", "hostNamespaces", "hostPathVolumes", "hostPorts",
        "privileged", "procMount", "seLinuxOptions", "seccompProfile_baseline", "sysctls"]


def test_restricted_replaces_the_baseline_checks_it_overrides():
    """Upstream policy/registry.go and registry_test.go (v0.36.2): a restricted check's
    OverrideCheckIDs removes those baseline checks from the restricted level; the others stay,
    baseline ones first."""
    baseline = [check_id for check_id, _ in pss.checks_for("baseline")]
    restricted = [check_id for check_id, _ in pss.checks_for("restricted")]
    assert baseline == sorted(baseline) and len(baseline) == 12
    assert set(baseline) - set(restricted) == {"capabilities_baseline", "hostPathVolumes", "procMount",
                                               "seccompProfile_baseline"}
    assert restricted[len(baseline) - 4:] == ["allowPrivilegeEscalation", "capabilities_restricted",
                                              "procMount_restricted", "restrictedVolumes", "runAsNonRoot",
                                              "runAsUser", "seccompProfile_restricted"]
    assert pss.checks_for("privileged") == []
    with pytest.raises(ValueError):
        pss.check_pod({}, {}, "strict")


def test_every_check_cites_its_upstream_file():
    """Upstream policy/ (v0.36.2) registers these 19 check ids; each function here names its file."""
    assert pss.UPSTREAM == "k8s.io/pod-security-admission v0.36.2"
    assert pss.LEVELS == ("privileged", "baseline", "restricted")
    assert sorted(check_id for check_id, *_ in pss.CHECKS) == sorted([
        "allowPrivilegeEscalation", "appArmorProfile", "capabilities_baseline", "capabilities_restricted",
        "hostNamespaces", "hostPathVolumes", "hostPorts", "hostProbesAndHostLifecycle", "privileged",
        "procMount", "procMount_restricted", "restrictedVolumes", "runAsNonRoot", "runAsUser",
        "seLinuxOptions", "seccompProfile_baseline", "seccompProfile_restricted", "sysctls", "windowsHostProcess"])
    for check_id, _, fn, _ in pss.CHECKS:
        doc = fn.__doc__ or ""
        assert "policy/check_" in doc and "v0.36.2" in doc, check_id


# ---- cases re-expressed from the upstream _test.go files ------------------------------------

def test_allow_privilege_escalation_cases():
    """Upstream policy/check_allowPrivilegeEscalation_test.go (v0.36.2): unset, nil and true fail,
    false passes; a Windows pod is exempt, a Linux one is not."""
    spec = {"containers": [{"name": "a"}, {"name": "b", "securityContext": {"allowPrivilegeEscalation": None}},
                           {"name": "c", "securityContext": {"allowPrivilegeEscalation": True}},
                           {"name": "d", "securityContext": {"allowPrivilegeEscalation": False}}]}
    found = pss.check_allow_privilege_escalation({}, spec)
    assert [m.split("'")[1] for m in found] == ["a", "b", "c"]
    assert pss.check_allow_privilege_escalation({}, {"os": {"name": "windows"}, "containers": [{"name": "a"}]}) == []
    assert len(pss.check_allow_privilege_escalation({}, {"os": {"name": "linux"}, "containers": [{"name": "a"}]})) == 1


def test_app_armor_cases():
    """Upstream policy/check_appArmorProfile_test.go (v0.36.2): RuntimeDefault/Localhost and the
    runtime/default, localhost/*, empty annotations pass; Unconfined on pod, container or init
    container and other annotation values fail."""
    allowed = [
        ({"annotations": {pss.APPARMOR_ANNOTATION_PREFIX + "test": "runtime/default", "env": "prod"}}, {}),
        ({"annotations": {pss.APPARMOR_ANNOTATION_PREFIX + "test": "localhost/sec-profile01"}}, {}),
        ({}, {"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}),
        ({}, {"containers": [{"name": "foo", "securityContext": {"appArmorProfile": {"type": "Localhost"}}}]}),
    ]
    for metadata, spec in allowed:
        assert pss.check_app_armor_profile(metadata, spec) == [], (metadata, spec)
    assert pss.check_app_armor_profile({}, {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}) == [
        "appArmorProfile: pod sets appArmorProfile.type 'Unconfined'"]
    init = {"containers": [{"name": "foo"}],
            "initContainers": [{"name": "bar", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}
    assert pss.check_app_armor_profile({}, init) == [
        "appArmorProfile: initContainer 'bar' sets appArmorProfile.type 'Unconfined'"]
    annotations = {pss.APPARMOR_ANNOTATION_PREFIX + k: v for k, v in
                   {"": "bogus", "a": "", "b": "runtime/default", "c": "localhost/", "d": "localhost/foo",
                    "e": "unconfined", "f": "unknown"}.items()}
    found = pss.check_app_armor_profile({"annotations": annotations}, {})
    assert [m.split("=")[0].rsplit("/", 1)[1] for m in found] == ["", "e", "f"], found


def test_capabilities_cases():
    """Upstream policy/check_capabilities_baseline_test.go and check_capabilities_restricted_test.go
    (v0.36.2): baseline names the non-default additions; restricted also wants drop ALL and allows
    only NET_BIND_SERVICE, and exempts Windows pods."""
    spec = {"containers": [
        {"name": "a", "securityContext": {"capabilities": {"add": ["FOO", "BAR"]}}},
        {"name": "b", "securityContext": {"capabilities": {"add": ["BAR", "BAZ"]}}},
        {"name": "c",
         "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"]}}}]}
    assert pss.check_capabilities_baseline({}, spec) == [
        "capabilities_baseline: container 'a' adds non-default capabilities 'BAR', 'FOO'",
        "capabilities_baseline: container 'b' adds non-default capabilities 'BAR', 'BAZ'"]
    restricted = pss.check_capabilities_restricted({}, spec)
    assert [m for m in restricted if "drop" in m] == [
        "capabilities_restricted: container 'a' does not set securityContext.capabilities.drop=['ALL']",
        "capabilities_restricted: container 'b' does not set securityContext.capabilities.drop=['ALL']"]
    assert "capabilities_restricted: container 'c' adds 'CHOWN' (only 'NET_BIND_SERVICE' may be added)" in restricted
    assert pss.check_capabilities_restricted({}, {"os": {"name": "windows"}, "containers": [{"name": "a"}]}) == []
    assert len(pss.check_capabilities_restricted({}, {"os": {"name": "linux"}, "containers": [{"name": "a"}]})) == 1


def test_host_namespaces_and_host_path_cases():
    """Upstream policy/check_hostNamespaces_test.go and check_hostPathVolumes_test.go (v0.36.2)."""
    assert pss.check_host_namespaces({}, {"hostNetwork": True, "hostIPC": True, "hostPID": True}) == [
        "hostNamespaces: pod sets hostNetwork=true", "hostNamespaces: pod sets hostPID=true",
        "hostNamespaces: pod sets hostIPC=true"]
    assert pss.check_host_namespaces({}, {"hostNetwork": False}) == []
    volumes = {"volumes": [{"name": "a", "hostPath": {}}, {"name": "b", "hostPath": {}}, {"name": "c", "emptyDir": {}}]}
    assert pss.check_host_path_volumes({}, volumes) == [
        "hostPathVolumes: volume 'a' is a hostPath volume", "hostPathVolumes: volume 'b' is a hostPath volume"]


def test_host_ports_cases():
    """Upstream policy/check_hostPorts_test.go (v0.36.2): hostPort 0 is allowed, any other is named."""
    spec = {"containers": [{"name": "a", "ports": [{"hostPort": 0}]},
                           {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 20}]},
                           {"name": "c", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 30}]}]}
    assert pss.check_host_ports({}, spec) == ["hostPorts: container 'b' uses hostPort 10, 20",
                                              "hostPorts: container 'c' uses hostPort 10, 30"]


def test_host_probes_and_lifecycle_cases():
    """Upstream policy/check_hostProbesAndhostLifecycle_test.go (v0.36.2): handlers without a host
    pass; a host in any probe or lifecycle handler, of any container kind, fails."""
    unset = {"containers": [{"name": "a", "livenessProbe": {"httpGet": {}}, "readinessProbe": {"tcpSocket": {}},
                             "lifecycle": {"postStart": {"httpGet": {"host": ""}}}}]}
    assert pss.check_host_probes_and_host_lifecycle({}, unset) == []
    spec = {"containers": [{"name": "a", "livenessProbe": {"httpGet": {"host": "127.0.0.1"}},
                            "readinessProbe": {"tcpSocket": {"host": "::1"}},
                            "startupProbe": {"httpGet": {"host": "localhost"}},
                            "lifecycle": {"postStart": {"tcpSocket": {"host": "invalid.host"}}}}],
            "initContainers": [{"name": "init", "livenessProbe": {"httpGet": {"host": "invalid.init.host"}}}]}
    assert pss.check_host_probes_and_host_lifecycle({}, spec) == [
        "hostProbesAndHostLifecycle: initContainer 'init' sets livenessProbe.httpGet.host 'invalid.init.host'",
        "hostProbesAndHostLifecycle: container 'a' sets livenessProbe.httpGet.host '127.0.0.1'",
        "hostProbesAndHostLifecycle: container 'a' sets readinessProbe.tcpSocket.host '::1'",
        "hostProbesAndHostLifecycle: container 'a' sets startupProbe.httpGet.host 'localhost'",
        "hostProbesAndHostLifecycle: container 'a' sets lifecycle.postStart.tcpSocket.host 'invalid.host'"]


def test_privileged_cases():
    """Upstream policy/check_privileged_test.go (v0.36.2): only privileged=true fails."""
    spec = {"containers": [{"name": "a"}, {"name": "b", "securityContext": {}},
                           {"name": "c", "securityContext": {"privileged": False}},
                           {"name": "d", "securityContext": {"privileged": True}},
                           {"name": "e", "securityContext": {"privileged": True}}]}
    assert [m.split("'")[1] for m in pss.check_privileged({}, spec)] == ["d", "e"]


def test_proc_mount_cases():
    """Upstream policy/check_procMount_baseline_test.go and check_procMount_restricted_test.go
    (v0.36.2): Unmasked and other values fail; baseline relaxes for hostUsers=false, restricted does not."""
    containers = [{"name": "a"}, {"name": "b", "securityContext": {}},
                  {"name": "c", "securityContext": {"procMount": "Default"}},
                  {"name": "d", "securityContext": {"procMount": "Unmasked"}},
                  {"name": "e", "securityContext": {"procMount": "other"}}]
    host_users = {"containers": containers, "hostUsers": True}
    assert [m.split("'")[1] for m in pss.check_proc_mount({}, host_users)] == ["d", "e"]
    userns = {"containers": containers, "hostUsers": False}
    assert pss.check_proc_mount({}, userns) == []
    for spec in (host_users, userns):
        assert [m.split("'")[1] for m in pss.check_proc_mount_restricted({}, spec)] == ["d", "e"]


def test_restricted_volumes_cases():
    """Upstream policy/check_restrictedVolumes_test.go (v0.36.2): the nine allowed sources pass,
    every other known source and a volume with no source fail."""
    allowed = [{"name": f"a{i}", source: {}} for i, source in enumerate(sorted(pss.RESTRICTED_VOLUME_SOURCES_ALLOWED))]
    restricted = [{"name": f"b{i}", source: {}} for i, source in enumerate(sorted(pss.RESTRICTED_VOLUME_SOURCES_KNOWN))]
    found = pss.check_restricted_volumes({}, {"volumes": allowed + restricted + [{"name": "c1"}]})
    assert len(pss.RESTRICTED_VOLUME_SOURCES_ALLOWED) == 9 and len(pss.RESTRICTED_VOLUME_SOURCES_KNOWN) == 21
    assert [m.split("'")[1] for m in found] == [v["name"] for v in restricted] + ["c1"]
    assert found[-1] == "restrictedVolumes: volume 'c1' uses restricted volume type 'unknown'"


def test_run_as_non_root_cases():
    """Upstream policy/check_runAsNonRoot_test.go (v0.36.2): unset everywhere, pod false and container
    false fail; pod true covers unset containers; hostUsers=false is allowed."""
    assert pss.check_run_as_non_root({}, {"containers": [{"name": "a"}]}) == [
        "runAsNonRoot: container 'a' does not set runAsNonRoot=true (nor does the pod)"]
    assert "runAsNonRoot: pod sets securityContext.runAsNonRoot=false" in pss.check_run_as_non_root(
        {}, {"securityContext": {"runAsNonRoot": False}, "containers": [{"name": "a"}]})
    spec = {"securityContext": {"runAsNonRoot": True},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {}},
                           {"name": "c", "securityContext": {"runAsNonRoot": False}},
                           {"name": "d", "securityContext": {"runAsNonRoot": False}},
                           {"name": "e", "securityContext": {"runAsNonRoot": True}}]}
    assert [m.split("'")[1] for m in pss.check_run_as_non_root({}, spec)] == ["c", "d"]
    spec = {"containers": [{"name": "a"}, {"name": "b", "securityContext": {}},
                           {"name": "d", "securityContext": {"runAsNonRoot": True}}]}
    assert [m.split("'")[1] for m in pss.check_run_as_non_root({}, spec)] == ["a", "b"]
    assert pss.check_run_as_non_root({}, {"hostUsers": False, "containers": [{"name": "a"}]}) == []


def test_run_as_user_cases():
    """Upstream policy/check_runAsUser_test.go (v0.36.2): 0 on pod or container fails, non-zero or
    unset passes, hostUsers=false is allowed."""
    assert pss.check_run_as_user({}, {"securityContext": {"runAsUser": 0}, "containers": [{"name": "a"}]}) == [
        "runAsUser: pod sets runAsUser=0"]
    assert pss.check_run_as_user({}, {"securityContext": {"runAsUser": 1000}, "containers": [{"name": "a"}]}) == []
    spec = {"securityContext": {"runAsUser": 1000},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {}},
                           {"name": "c", "securityContext": {"runAsUser": 0}},
                           {"name": "d", "securityContext": {"runAsUser": 0}},
                           {"name": "e", "securityContext": {"runAsUser": 1}}]}
    assert [m.split("'")[1] for m in pss.check_run_as_user({}, spec)] == ["c", "d"]
    assert pss.check_run_as_user({}, {"hostUsers": False, "securityContext": {"runAsUser": 0}}) == []


def test_seccomp_cases():
    """Upstream policy/check_seccompProfile_baseline_test.go and check_seccompProfile_restricted_test.go
    (v0.36.2): Unconfined fails both; restricted also needs a pod or per-container profile, and
    exempts Windows pods."""
    spec = {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {}},
                           {"name": "c", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
                           {"name": "d", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
                           {"name": "e", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}]}
    assert [m.split("'")[1] for m in pss.check_seccomp_profile_baseline({}, spec)] == ["c", "d"]
    assert [m.split("'")[1] for m in pss.check_seccomp_profile_restricted({}, spec)] == ["c", "d"]
    unconfined_pod = {"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [{"name": "a"}]}
    assert pss.check_seccomp_profile_baseline({}, unconfined_pod) == [
        "seccompProfile_baseline: pod sets seccompProfile.type 'Unconfined'"]
    assert pss.check_seccomp_profile_restricted({}, unconfined_pod) == [
        "seccompProfile_restricted: pod sets seccompProfile.type 'Unconfined'",
        "seccompProfile_restricted: container 'a' does not set seccompProfile.type 'RuntimeDefault' or 'Localhost'"
        " (nor does the pod)"]
    fallthrough = {"containers": [{"name": "a"}, {"name": "b", "securityContext": {}},
                                  {"name": "d", "securityContext": {"seccompProfile": {"type": "Localhost"}}}]}
    assert pss.check_seccomp_profile_baseline({}, fallthrough) == []
    assert [m.split("'")[1] for m in pss.check_seccomp_profile_restricted({}, fallthrough)] == ["a", "b"]
    assert pss.check_seccomp_profile_restricted({}, {"os": {"name": "windows"}, "containers": [{"name": "a"}]}) == []
    assert len(pss.check_seccomp_profile_restricted({}, {"os": {"name": "linux"}, "containers": [{"name": "a"}]})) == 1


def test_se_linux_cases():
    """Upstream policy/check_seLinuxOptions_test.go (v0.36.2, 1.31 rule): container_t, container_init_t,
    container_kvm_t and container_engine_t pass; another type, a user or a role fail."""
    spec = {"containers": [
        {"name": n, "securityContext": {"seLinuxOptions": o}} for n, o in
        (("a", {"type": "container_t"}), ("b", {"type": "container_init_t"}), ("c", {"type": "container_kvm_t"}),
         ("d", {"type": "container_engine_t"}), ("e", {"type": "bar"}), ("f", {"user": "bar"}),
         ("g", {"role": "baz"}))]}
    assert pss.check_se_linux_options({}, spec) == [
        "seLinuxOptions: container 'e' sets forbidden seLinuxOptions: type 'bar'",
        "seLinuxOptions: container 'f' sets forbidden seLinuxOptions: user may not be set",
        "seLinuxOptions: container 'g' sets forbidden seLinuxOptions: role may not be set"]


def test_sysctl_cases():
    """Upstream policy/check_sysctls_test.go (v0.36.2): unknown names fail; the names added in 1.27,
    1.29 and 1.32 pass at the latest version."""
    assert pss.check_sysctls({}, {"securityContext": {"sysctls": [{"name": "a"}, {"name": "b"}]}}) == [
        "sysctls: pod sets unsafe sysctl 'a'", "sysctls: pod sets unsafe sysctl 'b'"]
    newer = ["net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
             "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]
    assert pss.check_sysctls({}, {"securityContext": {"sysctls": [{"name": n, "value": "1"} for n in newer]}}) == []


def test_windows_host_process_cases():
    """Upstream policy/check_windowsHostProcess_test.go (v0.36.2): hostProcess=true on pod and on
    containers e, f fails; unset or false passes."""
    spec = {"securityContext": {"windowsOptions": {"hostProcess": True}},
            "containers": [{"name": "a"}, {"name": "b", "securityContext": {}},
                           {"name": "c", "securityContext": {"windowsOptions": {}}},
                           {"name": "d", "securityContext": {"windowsOptions": {"hostProcess": False}}},
                           {"name": "e", "securityContext": {"windowsOptions": {"hostProcess": True}}},
                           {"name": "f", "securityContext": {"windowsOptions": {"hostProcess": True}}}]}
    assert pss.check_windows_host_process({}, spec) == [
        "windowsHostProcess: pod sets securityContext.windowsOptions.hostProcess=true",
        "windowsHostProcess: container 'e' sets securityContext.windowsOptions.hostProcess=true",
        "windowsHostProcess: container 'f' sets securityContext.windowsOptions.hostProcess=true"]


# ---- objects and namespaces -----------------------------------------------------------------

def pod_template_or_fail(obj: dict):
    """The (metadata, spec) pair, failing the test when there is none."""
    result = pss.pod_template(obj)
    assert result is not None, obj
    return result


TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "x", "image": "x"}]}}


@pytest.mark.parametrize("obj", [
    {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": TEMPLATE}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"template": TEMPLATE}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": {"template": TEMPLATE}},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": {"template": TEMPLATE}},
    {"apiVersion": "v1", "kind": "ReplicationController", "spec": {"template": TEMPLATE}},
    {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": TEMPLATE}},
    {"apiVersion": "batch/v1", "kind": "CronJob",
     "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}}},
    {"apiVersion": "v1", "kind": "Pod", **TEMPLATE},
], ids=lambda obj: obj["kind"])
def test_pod_template_finds_the_pod_of_each_workload(obj):
    """Upstream admission/admission.go (v0.36.2) DefaultPodSpecExtractor: the template of each
    workload kind, spec.jobTemplate.spec.template for a CronJob."""
    assert pod_template_or_fail(obj) == (TEMPLATE["metadata"], TEMPLATE["spec"])


def test_pod_template_is_none_for_other_objects():
    """Upstream admission/admission.go (v0.36.2): only the pod-bearing resources are extracted."""
    assert pss.pod_template({"apiVersion": "v1", "kind": "Service", "spec": {"ports": []}}) is None
    assert pss.pod_template({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}) is None
    assert pss.pod_template({"apiVersion": "example.com/v1", "kind": "Deployment",
                             "spec": {"template": TEMPLATE}}) is None
    assert pss.pod_template({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"template": TEMPLATE}}) is None


def test_a_workload_is_judged_by_its_template():
    """Upstream admission/admission.go (v0.36.2): a Deployment's pod template is what the checks see."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "spec": {"template": {"spec": {"hostNetwork": True, "containers": [{"name": "x"}]}}}}
    metadata, spec = pss.pod_template(deployment)
    assert pss.check_pod(metadata, spec, "baseline") == ["hostNamespaces: pod sets hostNetwork=true"]


def test_namespace_level_with_and_without_the_label():
    """Upstream api/helpers.go PolicyToEvaluate and admission/api/v1/defaults.go (v0.36.2): the enforce
    label's level; privileged without it; restricted for a value that is not a level (fails closed)."""
    def ns(labels):
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "labels": labels}}
    assert pss.namespace_level(ns({pss.ENFORCE_LABEL: "restricted"})) == "restricted"
    assert pss.namespace_level(ns({pss.ENFORCE_LABEL: "baseline",
                                   "pod-security.kubernetes.io/warn": "restricted"})) == "baseline"
    assert pss.namespace_level(ns({"pod-security.kubernetes.io/warn": "restricted"})) == "privileged"
    assert pss.namespace_level({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}) == "privileged"
    assert pss.namespace_level(ns({pss.ENFORCE_LABEL: "strict"})) == "restricted"
