"""A real Kubernetes control plane and node of one build (:mod:`tests.kube.binaries`: the current
stacks' 1.33, or the paper's 1.20), run inside the cluster network's namespace.

What runs, all inside :mod:`tests.cluster.network`'s namespace (its 127.0.0.1, its bridge):
etcd (3.5 with 1.33, 3.4 with 1.20), kube-apiserver (RBAC + Node authorization; admission
``NodeRestriction`` plus, on 1.33, the default-on ``PodSecurity``, which judges pods by their
namespace's ``pod-security.kubernetes.io`` labels, and on 1.20 ``PodSecurityPolicy``, as TKG
1.20 runs it), kube-controller-manager, kube-scheduler, containerd 1.6 with runc and the CNI
bridge plugin, kubelet and kube-proxy (iptables mode). The host reaches the API server at
the namespace's veth address. containerd and kubelet also share a private mount namespace
with bind mounts over ``/var/lib``, ``/var/log`` and ``/run`` (kubelet hard-codes
``/var/lib/kubelet/device-plugins``, ``/var/log/pods``, ...), so the host's directories are
never written and every mount the runtime makes dies with that namespace.

Flags that mattered (from a spike on a machine of this kind; see each flag's comment):
kubelet ``--cgroup-driver=cgroupfs``, ``--fail-swap-on=false``, ``--read-only-port=0``,
``--volume-plugin-dir``; controller-manager ``--flex-volume-plugin-dir``; on 1.20 only (removed
since): kubelet ``--container-runtime=remote`` (1.27), ``AWS_EC2_METADATA_DISABLED=true`` (the
in-tree AWS provider, gone in 1.27), the controllers' ``--port=0`` (the insecure port, 1.24) and
``--logtostderr`` (1.26).
"""
from __future__ import annotations

import contextlib
import json
import os
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import kubernetes.client
import yaml

from tests.cluster import images
from tests.cluster.network import ClusterNetwork, run
from tests.cluster.pki import ClusterPKI, make_cluster_pki
from tests.kube.apiserver import klog_to_stderr
from tests.kube.binaries import KubeRelease
from tests.kube.processes import Process, wait_http
from tests.kube.rest import api_client, api_request

NODE_NAME = "dtkg-node-0"
API_PORT = 6443
CNI_BIN_DIR = "/usr/lib/cni"
START_TIMEOUT_S = 120.0
# kubelet sets these host-wide sysctls on start (pkg/kubelet/cm/container_manager_linux.go,
# setupKernelTunables); they are put back on stop.
KUBELET_SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
                   "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")
REAL_NODE_TAINT = {"key": "dask-tkg.test/real-node", "value": "true", "effect": "NoSchedule"}
REAL_NODE_TOLERATION = {"key": REAL_NODE_TAINT["key"], "operator": "Equal", "value": "true", "effect": "NoSchedule"}
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_NAMES = ("kubepods",)


def _kubeconfig(path: Path, server: str, ca: Path, token: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }, sort_keys=False))
    path.chmod(0o600)
    return path


def _containerd_config(w: Path, pause_ref: str) -> Path:
    """containerd's own instance: own root, state, socket, runc root; CRI with the local pause image."""
    cni = w / "cni"
    (cni / "net.d").mkdir(parents=True, exist_ok=True)
    text = f'''version = 2
root = "{w}/containerd/root"
state = "{w}/containerd/state"
# plugins that would reach outside the runtime's own directories are not wanted here
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
                    "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{w}/containerd/containerd.sock"
[ttrpc]
  address = "{w}/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause_ref}"
  netns_mounts_under_state_dir = true
  enable_selinux = false
  # this machine's processes lack CAP_SYS_RESOURCE: runc cannot lower oom_score_adj (the
  # sandbox's -998, Guaranteed pods' -997: "failed to update /proc/self/oom_score_adj:
  # Permission denied"), so containerd clamps it to its own, as for rootless runs
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{w}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{cni}/net.d"
'''
    path = w / "containerd.toml"
    path.write_text(text)
    return path


def _cni_config(w: Path, net: ClusterNetwork) -> None:
    """The CNI bridge plugin on the pre-made bridge, host-local addresses, no masquerade."""
    conflist = {"cniVersion": "0.4.0", "name": "dtkg", "plugins": [
        {"type": "bridge", "bridge": net.bridge, "isGateway": True, "ipMasq": False, "hairpinMode": True,
         "ipam": {"type": "host-local", "dataDir": str(w / "cni" / "ipam"),
                  "ranges": [[{"subnet": net.pod_cidr, "gateway": net.bridge_ip}]],
                  "routes": [{"dst": "0.0.0.0/0"}]}},
        {"type": "portmap", "capabilities": {"portMappings": True}},
    ]}
    (w / "cni" / "net.d" / "10-dtkg.conflist").write_text(json.dumps(conflist, indent=1))


def _read_sysctls() -> dict[str, str]:
    values = {}
    for name in KUBELET_SYSCTLS:
        with contextlib.suppress(OSError):
            values[name] = (Path("/proc/sys") / name).read_text().strip()
    return values


def _restore_sysctls(values: dict[str, str]) -> None:
    for name, value in values.items():
        with contextlib.suppress(OSError):
            (Path("/proc/sys") / name).write_text(value)


def _cgroup_dirs() -> list[Path]:
    """The cgroups kubelet creates (``kubepods`` in each v1 hierarchy), deepest first."""
    found = []
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else ():
        for name in CGROUP_NAMES:
            top = hierarchy / name
            if top.is_dir():
                found += [*sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)), top]
    return found


def _kill_pids(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def _cgroup_pids() -> set[int]:
    pids = set()
    for d in _cgroup_dirs():
        with contextlib.suppress(OSError):
            pids |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
    return pids


def _shim_pids(socket: Path) -> set[int]:
    """containerd-shim processes of this containerd (they detach from it: found by their -address)."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"containerd-shim-runc-v2") and str(socket).encode() in cmdline:
            pids.add(int(proc.name))
    return pids


@dataclass
class KubeCluster:
    """A running control plane + node. ``api_client`` is the admin's, from the host."""

    net: ClusterNetwork
    workdir: Path
    pki: ClusterPKI
    url: str
    api_client: kubernetes.client.ApiClient
    kubeconfig: Path
    node_name: str
    pause_ref: str
    containerd_socket: Path
    release: KubeRelease | None = None
    version: dict = field(default_factory=dict)  # the API server's /version
    images: dict[str, str] = field(default_factory=dict)
    start_s: float = 0.0
    _processes: list[Process] = field(default_factory=list, repr=False)
    _sysctls: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def ca_file(self) -> Path:
        return self.pki.path("ca.crt")

    def process(self, name: str) -> Process:
        return next(p for p in self._processes if p.name == name)

    def pids(self) -> dict[str, int]:
        return {p.name: p.proc.pid for p in self._processes}

    def new_api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        return api_client(self.url, self.ca_file, token or self.pki.tokens["admin"])

    def logs(self, lines: int = 30) -> str:
        return "\n".join(f"--- {p.name} ({p.log}) ---\n{p.tail(lines)}" for p in self._processes)

    def ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run("ctr", "--address", str(self.containerd_socket), "-n", "k8s.io", *args, check=check)

    def stop(self) -> list[str]:
        """Stop everything started, in reverse; return what could not be removed (empty when clean)."""
        with contextlib.suppress(Exception):
            self.api_client.close()
        return stop_processes(self._processes, self.containerd_socket, self._sysctls)


def stop_processes(procs: list[Process], containerd_socket: Path, sysctls: dict[str, str]) -> list[str]:
    by_name = {p.name: p for p in procs}
    for name in ("kube-proxy", "kubelet", "kube-scheduler", "kube-controller-manager"):
        if name in by_name:
            by_name[name].stop(grace_s=5.0)
    # the pods: their processes are in kubelet's cgroups, their shims detached from containerd
    for _ in range(3):
        pids = _cgroup_pids() | _shim_pids(containerd_socket)
        if not pids:
            break
        _kill_pids(pids)
        time.sleep(0.5)
    for p in reversed(procs):
        p.stop(grace_s=5.0)
    procs.clear()
    _restore_sysctls(sysctls)
    problems = []
    for d in _cgroup_dirs():
        try:
            d.rmdir()
        except OSError as exc:
            problems.append(f"cgroup {d}: {exc}")
    leftover = _shim_pids(containerd_socket)
    if leftover:
        problems.append(f"containerd shims still running: {sorted(leftover)}")
    return problems


class _Starter:
    """Starts the components one by one into ``procs`` (so a failure stops what was started)."""

    def __init__(self, release: KubeRelease, net: ClusterNetwork, w: Path, procs: list[Process]):
        self.release, self.net, self.w, self.procs = release, net, w, procs
        self.deadline = time.monotonic() + START_TIMEOUT_S

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None,
              holder: Process | None = None) -> Process:
        if holder is not None:  # the shared mount namespace (and network namespace) of the runtime
            argv = ["nsenter", "-t", str(holder.proc.pid), "-m", "-n", "--", *args]
        else:
            argv = self.net.in_netns(*args)
        previous = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        try:
            proc = Process(name, argv, self.w / f"{name}.log", self.w)
        finally:
            for k, v in previous.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.procs.append(proc)
        return proc

    def wait_file(self, path: Path, what: str) -> None:
        while not path.exists():
            dead = [p for p in self.procs if not p.alive()]
            if dead:
                raise RuntimeError(f"{dead[0].name} exited ({dead[0].proc.returncode}) before {what}:\n"
                                   f"{dead[0].tail()}")
            if time.monotonic() > self.deadline:
                raise TimeoutError(f"{what}: {path} did not appear in {START_TIMEOUT_S:.0f} s")
            time.sleep(0.1)


def _mount_holder(s: _Starter) -> Process:
    """A process that owns the cluster's private mount namespace, with /var/lib, /var/log, /run
    and /etc/resolv.conf bound over; every component runs in it (and in the network namespace)."""
    root = s.w / "root"
    binds = []
    for d in ("var/lib", "var/log", "run"):
        (root / d).mkdir(parents=True, exist_ok=True)
        binds.append(f'mount --bind "{root / d}" "/{d}"')
    # name lookups of the runtime (an image pull of a name that is not imported) go to the
    # bridge, where nothing answers, instead of the host's resolver
    (s.w / "resolv.conf").write_text(f"nameserver {s.net.bridge_ip}\noptions ndots:5\n")
    binds.append(f'mount --bind "{s.w / "resolv.conf"}" /etc/resolv.conf')
    ready = s.w / "mounts.ready"
    script = "set -e; " + "; ".join(binds) + f'; touch "{ready}"; exec sleep 2147483647'
    holder = s.start("mount-namespace", ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script])
    s.wait_file(ready, "the runtime's mount namespace")
    return holder


def _start_containerd(s: _Starter, holder: Process, pause_ref: str) -> Path:
    config = _containerd_config(s.w, pause_ref)
    _cni_config(s.w, s.net)
    socket = s.w / "containerd" / "containerd.sock"
    s.start("containerd", ["containerd", "--config", str(config), "--log-level", "warn"], holder=holder)
    s.wait_file(socket, "containerd's socket")
    return socket


def paper_only(release: KubeRelease, *flags: str) -> list[str]:
    """Flags the paper's 1.20 build needs and later ones removed (each call site says when)."""
    return list(flags) if release.minor < 24 else []


def admission_plugins(release: KubeRelease) -> str:
    """NodeRestriction, and PodSecurityPolicy where TKG enforced it (up to 1.24; removed in 1.25).
    From 1.23 the PodSecurity plugin is on by default and reads the namespaces' labels."""
    return "NodeRestriction,PodSecurityPolicy" if release.minor < 25 else "NodeRestriction"


def _start_control_plane(s: _Starter, pki: ClusterPKI, holder: Process) -> None:
    etcd_url = "http://127.0.0.1:2379"
    r = s.release
    s.start("etcd", [str(r.binary("etcd")), "--name=dtkg", f"--data-dir={s.w / 'etcd-data'}",
                     f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
                     "--listen-peer-urls=http://127.0.0.1:2380", "--log-level=warn", "--logger=zap"], holder=holder)
    p = pki.path
    s.start("kube-apiserver", [
        str(r.binary("kube-apiserver")), f"--etcd-servers={etcd_url}",
        # 0.0.0.0 of the namespace: its loopback, the bridge (pods, via the kubernetes
        # Service) and the veth (the host); nothing else exists there
        "--bind-address=0.0.0.0", f"--advertise-address={s.net.bridge_ip}", f"--secure-port={API_PORT}",
        f"--tls-cert-file={p('apiserver.crt')}", f"--tls-private-key-file={p('apiserver.key')}",
        f"--client-ca-file={p('ca.crt')}", f"--token-auth-file={p('tokens.csv')}",
        f"--kubelet-client-certificate={p('apiserver-kubelet-client.crt')}",
        f"--kubelet-client-key={p('apiserver-kubelet-client.key')}",
        "--authorization-mode=Node,RBAC", f"--enable-admission-plugins={admission_plugins(r)}",
        f"--service-account-key-file={p('sa.pub')}", f"--service-account-signing-key-file={p('sa.key')}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--api-audiences=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={s.net.service_cidr}", "--allow-privileged=true",
        # reach kubelets by their address, never by a name looked up in a resolver
        "--kubelet-preferred-address-types=InternalIP",
        f"--cert-dir={s.w / 'apiserver-certs'}", "--profiling=false", *klog_to_stderr(r), "--v=0"], holder=holder)
    ctx = ssl.create_default_context(cafile=str(p("ca.crt")))
    wait_http(f"https://{s.net.node_link_ip}:{API_PORT}/readyz", lambda st, b: st == 200, s.deadline, s.procs,
              "kube-apiserver /readyz", context=ctx, headers={"Authorization": f"Bearer {pki.tokens['admin']}"},
              timeout_s=START_TIMEOUT_S)
    local = f"https://127.0.0.1:{API_PORT}"
    cm_kubeconfig = _kubeconfig(s.w / "controller-manager.kubeconfig", local, p("ca.crt"),
                                pki.tokens["controller-manager"])
    s.start("kube-controller-manager", [
        str(r.binary("kube-controller-manager")), f"--kubeconfig={cm_kubeconfig}",
        f"--authentication-kubeconfig={cm_kubeconfig}", f"--authorization-kubeconfig={cm_kubeconfig}",
        "--use-service-account-credentials=true", f"--service-account-private-key-file={p('sa.key')}",
        f"--root-ca-file={p('ca.crt')}", f"--service-cluster-ip-range={s.net.service_cidr}",
        # nodelifecycle would taint the kubelet-less, VM-class-shaped Nodes unreachable
        "--controllers=*,-nodelifecycle,-nodeipam", "--leader-elect=false",
        "--bind-address=127.0.0.1", *paper_only(r, "--port=0"),  # the insecure port, removed in 1.24
        # without it the controller-manager creates /usr/libexec/kubernetes/... on the host
        f"--flex-volume-plugin-dir={s.w / 'flexvolume'}", *klog_to_stderr(r), "--v=0"], holder=holder)
    sched_kubeconfig = _kubeconfig(s.w / "scheduler.kubeconfig", local, p("ca.crt"), pki.tokens["scheduler"])
    s.start("kube-scheduler", [
        str(r.binary("kube-scheduler")), f"--kubeconfig={sched_kubeconfig}",
        f"--authentication-kubeconfig={sched_kubeconfig}", f"--authorization-kubeconfig={sched_kubeconfig}",
        "--leader-elect=false", "--bind-address=127.0.0.1", *paper_only(r, "--port=0"), *klog_to_stderr(r),
        "--v=0"], holder=holder)


def _start_node(s: _Starter, pki: ClusterPKI, holder: Process, socket: Path, pause_ref: str,
                node_labels: dict[str, str]) -> None:
    p, r = pki.path, s.release
    local = f"https://127.0.0.1:{API_PORT}"
    kubelet_kubeconfig = _kubeconfig(s.w / "kubelet.kubeconfig", local, p("ca.crt"), pki.tokens["kubelet"])
    s.start("kubelet", [
        str(r.binary("kubelet")), f"--kubeconfig={kubelet_kubeconfig}", f"--hostname-override={NODE_NAME}",
        # the only runtime kind from 1.24 (dockershim gone); the flag itself was removed in 1.27
        *paper_only(r, "--container-runtime=remote"), f"--container-runtime-endpoint=unix://{socket}",
        # from 1.27 the sandbox image is the runtime's alone (containerd's sandbox_image, above)
        "--runtime-request-timeout=5m", *paper_only(r, f"--pod-infra-container-image={pause_ref}"),
        "--cgroup-driver=cgroupfs", "--fail-swap-on=false",
        f"--node-ip={s.net.bridge_ip}", f"--address={s.net.bridge_ip}", "--read-only-port=0",
        "--healthz-bind-address=127.0.0.1", "--anonymous-auth=false", f"--client-ca-file={p('ca.crt')}",
        # only holders of a certificate of this cluster's CA (the API server) get past authentication
        "--authorization-mode=AlwaysAllow",
        f"--volume-plugin-dir={s.w / 'kubelet-plugins'}", f"--cert-dir={s.w / 'kubelet-pki'}",
        f"--resolv-conf={s.w / 'resolv.conf'}", "--cluster-domain=cluster.local",
        # this machine's disk and memory are shared: no evictions, no image garbage collection
        "--eviction-hard=memory.available<1Mi,nodefs.available<1%,imagefs.available<1%",
        "--image-gc-high-threshold=100", "--image-gc-low-threshold=99", "--max-pods=60",
        "--node-labels=" + ",".join(f"{k}={v}" for k, v in node_labels.items()),
        # only pods that say so run here: the program's pods (real images, GPU requests) must
        # never land on this node by accident and try to pull
        f"--register-with-taints={REAL_NODE_TAINT['key']}={REAL_NODE_TAINT['value']}:{REAL_NODE_TAINT['effect']}",
        *klog_to_stderr(r), "--v=0"],
        # kubelet 1.20's in-tree AWS credential provider calls 169.254.169.254 on start otherwise
        env={"AWS_EC2_METADATA_DISABLED": "true"} if r.minor < 27 else {}, holder=holder)
    proxy_kubeconfig = _kubeconfig(s.w / "kube-proxy.kubeconfig", local, p("ca.crt"), pki.tokens["kube-proxy"])
    s.start("kube-proxy", [
        str(r.binary("kube-proxy")), f"--kubeconfig={proxy_kubeconfig}", f"--hostname-override={NODE_NAME}",
        "--proxy-mode=iptables", f"--cluster-cidr={s.net.pod_cidr}", f"--bind-address={s.net.bridge_ip}",
        f"--nodeport-addresses={s.net.bridge_ip}/32,{s.net.node_link_ip}/32",
        "--healthz-bind-address=127.0.0.1:10256", "--metrics-bind-address=127.0.0.1:10249",
        # leave the host-wide conntrack table size and timeouts as they are
        "--conntrack-max-per-core=0", "--conntrack-min=0",
        "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
        # a pod reaching a Service backed by a pod on the same bridge gets its answer back
        "--masquerade-all", *klog_to_stderr(r), "--v=0"], holder=holder)


def wait_node_ready(api: kubernetes.client.ApiClient, s: _Starter, name: str) -> dict:
    last = "not registered"
    while True:
        for proc in s.procs:
            if not proc.alive():
                raise RuntimeError(f"{proc.name} exited ({proc.proc.returncode}) before node {name} was Ready:\n"
                                   f"{proc.tail()}")
        try:
            node = api_request(api, "GET", f"/api/v1/nodes/{name}")
            conditions = {c["type"]: c for c in node.get("status", {}).get("conditions", [])}
            ready = conditions.get("Ready", {})
            if ready.get("status") == "True":
                return node
            last = f"Ready={ready.get('status')} ({ready.get('message')})"
        except Exception as exc:
            last = str(exc)[:300]
        if time.monotonic() > s.deadline:
            raise TimeoutError(f"node {name} not Ready after {START_TIMEOUT_S:.0f} s: {last}\n"
                               + "\n".join(f"--- {p.name} ---\n{p.tail(15)}" for p in s.procs))
        time.sleep(0.5)


def untaint_ready_node(api: kubernetes.client.ApiClient, node: dict) -> None:
    """Remove ``node.kubernetes.io/not-ready`` from a node whose kubelet reports Ready.

    Every new Node gets it from the TaintNodesByCondition admission plugin; lifting it is the
    node lifecycle controller's job, but that is disabled here (it would mark the
    kubelet-less, VM-class-shaped Nodes unreachable), so the fixture does that one step."""
    taints = [t for t in node["spec"].get("taints", []) if t["key"] != "node.kubernetes.io/not-ready"]
    api_request(api, "PATCH", f"/api/v1/nodes/{node['metadata']['name']}", body={"spec": {"taints": taints}},
                content_type="application/merge-patch+json")


def start_cluster(release: KubeRelease, workdir: Path, net: ClusterNetwork, node_labels: dict[str, str]) -> KubeCluster:
    """Start ``release``'s control plane and node; return once the node is Ready."""
    workdir.mkdir(parents=True, exist_ok=True)
    built = images.ensure_images()
    pki = make_cluster_pki(workdir / "pki", NODE_NAME, [net.node_link_ip, net.bridge_ip,
                                                        net.kubernetes_service_ip, "127.0.0.1"])
    procs: list[Process] = []
    sysctls = _read_sysctls()
    s = _Starter(release, net, workdir, procs)
    socket = workdir / "containerd" / "containerd.sock"
    try:
        holder = _mount_holder(s)
        socket = _start_containerd(s, holder, built["pause"].ref)
        for image in built.values():
            run("ctr", "--address", str(socket), "-n", "k8s.io", "images", "import", str(image.archive))
        _start_control_plane(s, pki, holder)
        _start_node(s, pki, holder, socket, built["pause"].ref, node_labels)
        url = f"https://{net.node_link_ip}:{API_PORT}"
        api = api_client(url, pki.path("ca.crt"), pki.tokens["admin"])
        node = wait_node_ready(api, s, NODE_NAME)
        untaint_ready_node(api, node)
        version = api_request(api, "GET", "/version")
    except BaseException:
        stop_processes(procs, socket, sysctls)
        raise
    kubeconfig = _kubeconfig(workdir / "admin.kubeconfig", url, pki.path("ca.crt"), pki.tokens["admin"])
    return KubeCluster(net=net, workdir=workdir, pki=pki, url=url, api_client=api, kubeconfig=kubeconfig,
                       node_name=NODE_NAME, pause_ref=built["pause"].ref, containerd_socket=socket,
                       release=release, version=version, images={n: i.ref for n, i in built.items()}, _processes=procs,
                       _sysctls=sysctls)
