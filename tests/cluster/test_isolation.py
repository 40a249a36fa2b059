"""Nothing of the cluster talks to anything but loopback, its bridge and its veth link.

Two views: every socket open in the cluster's network namespace (all components live
there) has a peer inside the allowed ranges, and the namespace's guard chain has dropped
nothing, neither the cloud metadata address kubelet 1.20 probes without
``AWS_EC2_METADATA_DISABLED=true`` nor anything else (pods' traffic crosses it too).
"""
from __future__ import annotations

import pytest

from tests.cluster.network import ClusterNetwork


def peers(ss_output: str) -> list[tuple[str, str, str]]:
    """(peer address, local address, process) of each socket in ``ss -H -tuanp`` output."""
    found = []
    for line in ss_output.splitlines():
        columns = line.split()
        if len(columns) < 6:
            continue
        local, peer = columns[4], columns[5]
        address = peer.rsplit(":", 1)[0].strip("[]")
        found.append((address, local, " ".join(columns[6:])))
    return found


def outside(net: ClusterNetwork, sockets: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [s for s in sockets if s[0] != "*" and not net.allows(s[0])]


def test_the_peer_check_catches_an_outside_address():
    net = ClusterNetwork(3)
    sample = ("tcp   ESTAB 0 0 10.244.3.1:41234 10.244.3.7:8786 users:((\"dask\",pid=1,fd=3))\n"
              "tcp   LISTEN 0 4096 *:6443 *:* users:((\"kube-apiserver\",pid=2,fd=7))\n"
              "tcp   SYN-SENT 0 1 10.244.3.1:40000 169.254.169.254:80 users:((\"kubelet\",pid=3,fd=9))\n"
              "udp   UNCONN 0 0 [::ffff:127.0.0.1]:53 0.0.0.0:* users:((\"x\",pid=4,fd=1))\n")
    assert [s[0] for s in outside(net, peers(sample))] == ["169.254.169.254"]


def test_no_component_connects_outside_loopback_and_the_bridge(kube_cluster):
    net = kube_cluster.net
    sockets = peers(net.ns("ss", "-H", "-tuanp").stdout)
    assert sockets, "ss saw no sockets in the cluster's namespace"
    assert any("kubelet" in s[2] for s in sockets) and any("kube-apiserver" in s[2] for s in sockets)
    assert outside(net, sockets) == []
    counted = net.guard_drops()
    print(f"guard counters: {counted}")
    drops = {k: counted[k] for k in ("cloud-metadata", "outside")}
    assert drops == {"cloud-metadata": 0, "outside": 0}, (
        f"the cluster's guard chain dropped packets bound outside: {drops}")


@pytest.mark.parametrize("component", ["kubelet"])
def test_kubelet_runs_with_cloud_metadata_disabled(kube_cluster, component):
    pid = kube_cluster.pids()[component]
    environ = dict(entry.split("=", 1) for entry in
                   open(f"/proc/{pid}/environ", "rb").read().decode().split("\0") if "=" in entry)
    assert environ.get("AWS_EC2_METADATA_DISABLED") == "true"
