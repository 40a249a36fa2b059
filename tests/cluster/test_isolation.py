"""Nothing of the current stacks' cluster talks to anything but loopback, its bridge and its veth
link (tests/cluster/node_checks.py).

Two views: every socket open in the cluster's network namespace (all components live there) has
a peer inside the allowed ranges, and the namespace's guard chain has dropped nothing, neither
the cloud metadata address nor anything else (pods' traffic crosses it too).
"""
from __future__ import annotations

from tests.cluster.network import ClusterNetwork
from tests.cluster.node_checks import check_nothing_connects_outside, outside, peers


def test_the_peer_check_catches_an_outside_address():
    net = ClusterNetwork(3)
    sample = ("tcp   ESTAB 0 0 10.244.3.1:41234 10.244.3.7:8786 users:((\"dask\",pid=1,fd=3))\n"
              "tcp   LISTEN 0 4096 *:6443 *:* users:((\"kube-apiserver\",pid=2,fd=7))\n"
              "tcp   SYN-SENT 0 1 10.244.3.1:40000 169.254.169.254:80 users:((\"kubelet\",pid=3,fd=9))\n"
              "udp   UNCONN 0 0 [::ffff:127.0.0.1]:53 0.0.0.0:* users:((\"x\",pid=4,fd=1))\n")
    assert [s[0] for s in outside(net, peers(sample))] == ["169.254.169.254"]


def test_no_component_connects_outside_loopback_and_the_bridge(kube_cluster):
    check_nothing_connects_outside(kube_cluster)
