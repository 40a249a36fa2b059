#!/usr/bin/env bash
# Build govmomi's vCenter simulator offline, from Debian packages, into a cache
# outside the repository:
#   ${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}/vcsim/{bin/<recipe stamp>/vcsim,cert.pem,key.pem}
#
# The binary is our own small main package (scripts/vcsim/*.go) built in
# GOPATH mode against golang-github-vmware-govmomi-dev (bookworm: 0.24.2), which
# ships the simulator library but no vcsim program. The cached binary is reused
# while its sources, this script, the govmomi package and the Go toolchain are unchanged.
# The certificate is a 2048-bit self-signed one for 127.0.0.1 (the simulator's
# built-in one is 1024-bit, which OpenSSL 3 refuses).
#
# Usage: scripts/build_vcsim.sh [--force]
# Prints the path of the binary as its last line.
set -euo pipefail

started=$(date +%s.%N)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
main_go="$here/vcsim/main.go"
sources=("$here"/vcsim/*.go)
cache="${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}/vcsim"
gocode=/usr/share/gocode
force=0
[[ "${1:-}" == "--force" ]] && force=1

log() { echo "build_vcsim: $*" >&2; }
elapsed() { awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# golang-go, govmomi, openssl: scripts/system-packages.toml (what is missing, as root)
"${PYTHON:-$(command -v python3.11 || command -v python3)}" "$here/install_system_packages.py" \
    --for scripts/build_vcsim.sh >&2

mkdir -p "$cache"
# One build at a time: test sessions may start in parallel.
exec 9>"$cache/.lock"
flock 9

# Certificate: 2048-bit, IP SAN 127.0.0.1, valid for at least another day.
if [[ ! -s "$cache/cert.pem" || ! -s "$cache/key.pem" ]] \
    || ! openssl x509 -in "$cache/cert.pem" -noout -checkend 86400 >/dev/null 2>&1; then
    log "generating a self-signed certificate for 127.0.0.1"
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 825 \
        -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$cache/key.pem.tmp" -out "$cache/cert.pem.tmp" 2>/dev/null
    mv "$cache/key.pem.tmp" "$cache/key.pem"
    mv "$cache/cert.pem.tmp" "$cache/cert.pem"
fi

# Rebuild when main.go, this script (build flags), govmomi or Go change.
stamp=$( {
    sha256sum "${sources[@]}" "${BASH_SOURCE[0]}" | cut -d' ' -f1
    dpkg-query -W -f='${Version}\n' golang-github-vmware-govmomi-dev 2>/dev/null || echo unknown
    go version
} | sha256sum | cut -d' ' -f1)

# One binary per recipe (bin/<stamp>/vcsim): checkouts with different main.go
# share the cache without rebuilding each other's binary in turn.
binary="$cache/bin/$stamp/vcsim"
if [[ $force -eq 0 && -x "$binary" ]]; then
    log "cached binary is up to date ($(elapsed) s)"
    echo "$binary"
    exit 0
fi

log "building vcsim from $main_go"
export GO111MODULE=off GOFLAGS='' GOPROXY=off CGO_ENABLED=0  # pure Go: no C toolchain needed
export GOPATH="$cache/gopath:$gocode"
export GOCACHE="${GOCACHE:-$cache/go-build}"
mkdir -p "$cache/gopath"
mkdir -p "$(dirname "$binary")"
go build -o "$binary.tmp" "${sources[@]}"
mv "$binary.tmp" "$binary"
log "built in $(elapsed) s"
echo "$binary"
