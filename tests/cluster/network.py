"""The cluster's own network: a network namespace holding a bridge, joined to the host by one veth pair.

Everything of the test cluster (etcd, the control plane, containerd, kubelet, kube-proxy
and the pods behind the bridge) runs inside the namespace, so its iptables rules, its
``ip_forward`` and its sockets are its own and vanish with it. The host gets one veth end
and routes for the pod and service ranges onto it (the runner and the tests reach pods and
Services from outside, as a user's machine would), nothing else.

Nothing can leave: the namespace has no route out except the veth's own /30, the host
does not forward (its ``ip_forward`` is left as it is), and a guard chain in the
namespace's ``mangle POSTROUTING`` (which every packet leaving any interface of the
namespace crosses, locally sent or forwarded, after routing) drops, with a counter,
anything not for loopback, the bridge's pod range, the service range or the veth link,
and drops the cloud metadata address 169.254.169.254 first under a counter of its own.
Kubernetes 1.20's kubelet reaches for that address on start unless
``AWS_EC2_METADATA_DISABLED=true`` (its in-tree AWS credential provider); a default
route onto the bridge makes such a packet reach the guard (and be counted) instead of
failing unseen at routing.
"""
from __future__ import annotations

import ipaddress
import re
import subprocess
from pathlib import Path

GUARD_CHAIN = "DTKG-GUARD"
METADATA_ADDRESS = "169.254.169.254"
LINK_LOCAL_MULTICAST = "224.0.0.0/24"
NETNS_DIR = Path("/run/netns")
SLOTS = range(16)  # cluster networks this machine can hold at once


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(list(args), check=False, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed (exit {result.returncode}): {result.stderr.strip()}")
    return result


class ClusterNetwork:
    """Names and address ranges of one cluster network (slot ``slot`` of this machine)."""

    def __init__(self, slot: int):
        self.slot = slot
        self.netns, self.bridge = f"dtkg-{slot}", f"dtkgbr{slot}"
        self.netns_path = NETNS_DIR / self.netns
        self.veth_host, self.veth_node = f"dtkgv{slot}", f"dtkgv{slot}n"  # the host's end, the namespace's end
        # each range with its addresses: the bridge's is the node's (the pods' gateway, kubelet's
        # --node-ip); the namespace's end of the veth is where the host reaches the API server
        self.pod_cidr, self.bridge_ip = f"10.244.{slot}.0/24", f"10.244.{slot}.1"
        self.service_cidr, self.kubernetes_service_ip = f"10.97.{slot}.0/24", f"10.97.{slot}.1"
        self.link_cidr, self.host_ip, self.node_link_ip = f"10.245.{slot}.0/30", f"10.245.{slot}.1", f"10.245.{slot}.2"

    def __repr__(self) -> str:
        return f"ClusterNetwork({self.slot})"

    @property
    def allowed_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        return [ipaddress.ip_network(n) for n in ("127.0.0.0/8", self.pod_cidr, self.service_cidr, self.link_cidr)]

    def allows(self, address: str) -> bool:
        ip = ipaddress.ip_address(address.split("%")[0])
        if ip.version == 6 and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        if ip.is_unspecified or ip.is_loopback:
            return True
        return ip.version == 4 and any(ip in n for n in self.allowed_networks)

    def in_netns(self, *args: str) -> list[str]:
        """A command line that runs ``args`` inside the namespace (and nothing else of it changed)."""
        return ["nsenter", f"--net={self.netns_path}", "--", *args]

    def ns(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(*self.in_netns(*args), check=check)

    # ---------------------------------------------------------------------- lifecycle

    def in_use(self) -> bool:
        return self.netns_path.exists() or Path(f"/sys/class/net/{self.veth_host}").exists()

    def create(self) -> None:
        """Create the namespace, bridge, veth pair, routes and guard; undo all of it on failure."""
        run("ip", "netns", "add", self.netns)
        try:
            self._links()
            self._guard()
        except BaseException:
            self.destroy()
            raise

    def _links(self) -> None:
        for key, value in (("net.ipv4.ip_forward", "1"), ("net.ipv6.conf.all.disable_ipv6", "1"),
                           ("net.ipv6.conf.default.disable_ipv6", "1"),
                           # kube-proxy's --masquerade-all covers the hairpin; bridged pod
                           # traffic must still cross iptables for Service replies
                           ("net.bridge.bridge-nf-call-iptables", "1")):
            self.ns("sysctl", "-q", "-w", f"{key}={value}", check=not key.startswith("net.bridge"))
        self.ns("ip", "link", "set", "lo", "up")
        self.ns("ip", "link", "add", self.bridge, "type", "bridge")
        self.ns("ip", "addr", "add", f"{self.bridge_ip}/24", "dev", self.bridge)
        self.ns("ip", "link", "set", self.bridge, "up")
        run("ip", "link", "add", self.veth_host, "type", "veth", "peer", "name", self.veth_node)
        run("ip", "link", "set", self.veth_node, "netns", self.netns)
        run("ip", "addr", "add", f"{self.host_ip}/30", "dev", self.veth_host)
        run("ip", "link", "set", self.veth_host, "up")
        self.ns("ip", "addr", "add", f"{self.node_link_ip}/30", "dev", self.veth_node)
        self.ns("ip", "link", "set", self.veth_node, "up")
        # off-link destinations go to the bridge (and so past the guard), never to the veth
        self.ns("ip", "route", "add", "default", "dev", self.bridge)
        for cidr in (self.pod_cidr, self.service_cidr):
            run("ip", "route", "add", cidr, "via", self.node_link_ip, "dev", self.veth_host)

    def _guard(self) -> None:
        ipt = ("iptables", "-w", "5", "-t", "mangle")
        self.ns(*ipt, "-N", GUARD_CHAIN)
        self.ns(*ipt, "-A", GUARD_CHAIN, "-d", f"{METADATA_ADDRESS}/32", "-m", "comment", "--comment",
                "cloud-metadata", "-j", "DROP")
        self.ns(*ipt, "-A", GUARD_CHAIN, "-o", "lo", "-j", "RETURN")
        for network in self.allowed_networks:
            self.ns(*ipt, "-A", GUARD_CHAIN, "-d", str(network), "-j", "RETURN")
        # the local network control block (IGMP reports to 224.0.0.22 when a pod's veth joins
        # the bridge): never forwarded beyond the link (RFC 5771); counted, so it shows
        self.ns(*ipt, "-A", GUARD_CHAIN, "-d", LINK_LOCAL_MULTICAST, "-m", "comment", "--comment",
                "link-local-multicast", "-j", "RETURN")
        self.ns(*ipt, "-A", GUARD_CHAIN, "-m", "comment", "--comment", "outside", "-j", "DROP")
        self.ns(*ipt, "-I", "POSTROUTING", "1", "-j", GUARD_CHAIN)

    def guard_drops(self) -> dict[str, int]:
        """Packets the guard counted so far: dropped ("cloud-metadata", "outside") and the
        link-local multicast it lets pass ("link-local-multicast")."""
        listing = self.ns("iptables", "-w", "5", "-t", "mangle", "-L", GUARD_CHAIN, "-v", "-n", "-x").stdout
        drops = {}
        for line in listing.splitlines():
            match = re.match(r"\s*(\d+)\s+\d+\s+(DROP|RETURN)\b.*/\*\s*(\S+)\s*\*/", line)
            if match:
                drops[match.group(3)] = int(match.group(1))
        if set(drops) != {"cloud-metadata", "outside", "link-local-multicast"}:
            raise RuntimeError(f"guard chain {GUARD_CHAIN} is not as created:\n{listing}")
        return drops

    def destroy(self) -> None:
        """Remove the namespace (its bridge, veths, iptables rules and sockets go with it) and the host veth."""
        if self.netns_path.exists():
            run("ip", "netns", "del", self.netns, check=False)
        if Path(f"/sys/class/net/{self.veth_host}").exists():
            run("ip", "link", "del", self.veth_host, check=False)

    def leftovers(self) -> list[str]:
        found = []
        if self.netns_path.exists():
            found.append(f"network namespace {self.netns}")
        for link in (self.veth_host, self.bridge):
            if Path(f"/sys/class/net/{link}").exists():
                found.append(f"host link {link}")
        routes = run("ip", "route", "show", check=False).stdout
        found += [f"host route {line}" for line in routes.splitlines() if self.veth_host in line]
        return found


def allocate() -> ClusterNetwork:
    for slot in SLOTS:
        net = ClusterNetwork(slot)
        if not net.in_use():
            net.create()
            return net
    raise RuntimeError(f"all {len(SLOTS)} cluster network slots are in use (ip netns list: "
                       f"{run('ip', 'netns', 'list', check=False).stdout.strip()})")
