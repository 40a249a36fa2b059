#!/usr/bin/env bash
# What the real-cluster tests (tests/cluster) need besides the Kubernetes binaries of
# scripts/build_kube_apiserver.sh: Debian's container runtime and CNI plugins, and the
# images built here (no registry is reachable).
#
#   containerd 1.6, runc, containernetworking-plugins (bridge, host-local, loopback,
#   portmap under /usr/lib/cni), iptables (nft backend), conntrack, iproute2, procps,
#   util-linux (nsenter/unshare), gcc + libc6-dev (the static pause binary), debootstrap
#   (the Dask runtime image's root filesystem)
#                   <- Debian bookworm packages (scripts/system-packages.toml, installed by
#                      scripts/install_system_packages.py: root, non-interactive). containerd's
#                      own service is not started: the tests run their own instance,
#                      with its own root, state and socket.
#   images          <- scripts/build_images.py (OCI archives under $DASK_TKG__CACHE/images,
#                      keyed by the hash of their inputs).
#
# A cached run installs nothing and only hashes the images' inputs.
set -euo pipefail
START_SECONDS=$SECONDS
log() { echo "build_kube_node: $*"; }
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PYTHON" "$(dirname "$0")/install_system_packages.py" --for scripts/build_kube_node.sh
# Debian's package starts containerd's service where an init system runs; the tests
# need no system instance (they start their own), so leave whatever is there alone.
"$PYTHON" "$(dirname "$0")/build_images.py"
log "containerd $(containerd --version | awk '{print $3}'), $(runc --version | head -n1), done in $((SECONDS - START_SECONDS)) s"
