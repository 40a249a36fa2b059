#!/usr/bin/env bash
# What the real-cluster tests (tests/cluster) need besides the Kubernetes binaries of
# scripts/build_kube_apiserver.sh: Debian's container runtime and CNI plugins, and the
# images built here (no registry is reachable).
#
#   containerd 1.6, runc, containernetworking-plugins (bridge, host-local, loopback,
#   portmap under /usr/lib/cni), iptables (nft backend), conntrack, iproute2,
#   util-linux (nsenter/unshare), gcc + libc6-dev (the static pause binary)
#                   <- Debian bookworm packages (root, non-interactive). containerd's
#                      own service is not started: the tests run their own instance,
#                      with its own root, state and socket.
#   images          <- scripts/build_images.py (OCI archives under $DASK_TKG__CACHE/images,
#                      keyed by the hash of their inputs).
#
# Cold: about 30 s of package installs + 1 s for the pause image. Cached: about 1 s.
set -euo pipefail
START_SECONDS=$SECONDS
log() { echo "build_kube_node: $*"; }
PACKAGES=(containerd runc containernetworking-plugins iptables conntrack iproute2 util-linux gcc libc6-dev)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    [[ $(id -u) -eq 0 ]] || { echo "build_kube_node: run as root to install ${missing[*]}" >&2; exit 1; }
    export DEBIAN_FRONTEND=noninteractive
    log "installing ${missing[*]}"
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
        apt-get update -q >/dev/null
        apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
    }
fi
# Debian's package starts containerd's service where an init system runs; the tests
# need no system instance (they start their own), so leave whatever is there alone.
python3 "$(dirname "$0")/build_images.py"
log "containerd $(containerd --version | awk '{print $3}'), $(runc --version | head -n1), done in $((SECONDS - START_SECONDS)) s"
