#!/usr/bin/env bash
# Build a real Kubernetes 1.20 control plane and node (and unpack etcd) for the
# `apiserver` and real-cluster tests, offline, from Debian bookworm's own packages.
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#   kube-proxy, kubectl
#                   <- Debian source package `kubernetes` 1.20.5+really1.20.2
#                      (all Go dependencies vendored), built with Debian's
#                      golang-go 1.19 in GOPATH mode, CGO_ENABLED=0.
#   etcd            <- Debian binary package `etcd-server` 3.4, unpacked with
#                      `apt-get download` + `dpkg-deb -x` (no service installed).
#
# Output (outside the repository, reused by later runs on the same machine):
#   ${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}/kube/bin/{kube-apiserver,kube-controller-manager,
#       kube-scheduler,kubelet,kube-proxy,kubectl}
#   ${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}/kube/bin/etcd
#   ${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}/kube/stamp   (versions built)
#
# Steps of a clean build:
#   1. install the Debian build dependencies that are missing (root,
#      non-interactive): golang-go, golang-github-modern-go-reflect2-dev,
#      dpkg-dev, xz-utils, openssl (the tests generate keys with it);
#   2. `apt-get source --download-only kubernetes` through a private deb-src
#      list and private list/cache directories, so /etc/apt and the system's
#      package lists are left as they are;
#   3. generate pkg/generated/openapi with the vendored openapi-gen (the one
#      generated file the source package does not carry);
#   4. replace the vendored github.com/modern-go/reflect2 1.0.1 with Debian's
#      1.0.2 (1.0.1 makes the API server crash on custom resources under
#      Go >= 1.18);
#   5. the CRD type validator fix of kubernetes/kube-openapi#230 (upstream
#      issue kubernetes/kubernetes#99804): since Go 1.16 `reflect.Zero` returns a
#      shared zero value, so the vendored validator's
#      `reflect.DeepEqual(reflect.Zero(T), reflect.ValueOf(data))` holds for every
#      run-time "" / 0 / false and rejects them as "null"; a real 1.20 (built with
#      Go 1.15) accepts them. Patched the way upstream fixed it: `data == nil` only;
#   6. `go build` of each binary in GOPATH mode;
#   7. `apt-get download etcd-server` and take /usr/bin/etcd out of it.
#
# A cached run only checks the stamp.
#
# Usage: scripts/build_kube_apiserver.sh [--force]
#   --force   rebuild even when the cache is complete
# Environment:
#   DASK_TKG__CACHE       cache root (default $HOME/.cache/dask-tkg; DASK_TKG_CACHE: deprecated)
#   KUBE_BUILD_KEEP_WORK  1 = keep the work directory and the Go build cache
#                         (both are kept anyway after a failure, for a fast retry)
set -euo pipefail

START_SECONDS=$SECONDS
report_elapsed() {
    local rc=$?
    local elapsed=$((SECONDS - START_SECONDS))
    if [[ $rc -eq 0 ]]; then
        echo "build_kube_apiserver: ${RESULT:-done} in ${elapsed} s"
    else
        echo "build_kube_apiserver: FAILED (exit ${rc}) after ${elapsed} s" >&2
    fi
}
trap report_elapsed EXIT

log() { echo "build_kube_apiserver: $*"; }
die() { echo "build_kube_apiserver: error: $*" >&2; exit 1; }

FORCE=0
for arg in "$@"; do
    case "$arg" in
        --force) FORCE=1 ;;
        -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
        *) die "unknown argument: $arg" ;;
    esac
done

# Upstream version of Debian's source package; any Debian revision of it is
# accepted (bookworm carries 1.20.5+really1.20.2-1.1+deb12u1).
SRC_PACKAGE=kubernetes
SRC_UPSTREAM=1.20.5+really1.20.2
KUBE_GIT_VERSION=v1.20.2
# Bump when this recipe changes in a way that must invalidate cached binaries.
RECIPE=2

CACHE_ROOT=${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}
KUBE_DIR=$CACHE_ROOT/kube
BIN_DIR=$KUBE_DIR/bin
# The control plane and the node the real-cluster tests run.
KUBE_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
STAMP=$KUBE_DIR/stamp
WORK=$KUBE_DIR/work

mkdir -p "$KUBE_DIR"

cache_complete() {
    [[ -x $BIN_DIR/etcd && -f $STAMP ]] || return 1
    local bin
    for bin in "${KUBE_BINARIES[@]}"; do [[ -x $BIN_DIR/$bin ]] || return 1; done
    grep -qx "recipe=$RECIPE" "$STAMP" || return 1
    grep -q "^kubernetes-source=${SRC_UPSTREAM}-" "$STAMP" || return 1
}

# One build at a time (parallel test processes may all ask for it).
exec 9>"$KUBE_DIR/.lock"
flock 9

if [[ $FORCE -eq 0 ]] && cache_complete; then
    RESULT="cached ($(grep '^kubernetes-source=' "$STAMP" | cut -d= -f2), $BIN_DIR)"
    exit 0
fi

[[ $(id -u) -eq 0 ]] || die "run as root: the build installs Debian packages"
export DEBIAN_FRONTEND=noninteractive

# --- 1. Debian build dependencies -------------------------------------------
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PYTHON" "$(dirname "$0")/install_system_packages.py" --for scripts/build_kube_apiserver.sh
APT_UPDATED=0

export PATH=/usr/lib/go/bin:$PATH
go_version=$(go env GOVERSION)
log "using $go_version ($(command -v go))"

REFLECT2_SRC=/usr/share/gocode/src/github.com/modern-go/reflect2
[[ -f $REFLECT2_SRC/reflect2.go ]] || die "Debian's reflect2 is not at $REFLECT2_SRC"

rm -rf "$WORK"
mkdir -p "$WORK"
chmod 755 "$WORK"

# --- 2. the source package, through a private deb-src list ------------------
APT_PRIV=$WORK/apt
mkdir -p "$APT_PRIV/sources.list.d" "$APT_PRIV/lists/partial" "$APT_PRIV/cache/archives/partial"
cat > "$APT_PRIV/sources.list.d/debian-bookworm-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
APT_OPTS=(
    -o "Dir::Etc::SourceList=/dev/null"
    -o "Dir::Etc::SourceParts=$APT_PRIV/sources.list.d"
    -o "Dir::State::Lists=$APT_PRIV/lists"
    -o "Dir::Cache=$APT_PRIV/cache"
    -o "APT::Sandbox::User=root"
)
log "fetching the deb-src index (private list)"
apt-get "${APT_OPTS[@]}" update -q
src_version=$(apt-cache "${APT_OPTS[@]}" showsrc "$SRC_PACKAGE" \
    | awk '/^Version:/ {print $2}' | grep "^${SRC_UPSTREAM}-" | sort -V | tail -n1 || true)
[[ -n $src_version ]] || die "no ${SRC_PACKAGE} ${SRC_UPSTREAM}-* source in Debian bookworm"
log "downloading source ${SRC_PACKAGE} ${src_version}"
mkdir -p "$WORK/dl"
(cd "$WORK/dl" && apt-get "${APT_OPTS[@]}" source --download-only -q "${SRC_PACKAGE}=${src_version}")
dsc=$(ls "$WORK"/dl/*.dsc)
# The archive's Release file was verified by apt; the .dsc signature check would
# need debian-keyring, so it is skipped here.
dpkg-source --no-check -x "$dsc" "$WORK/src" >/dev/null

# GOPATH layout: <gopath>/src/k8s.io/kubernetes -> the unpacked source
GOPATH_DIR=$WORK/gopath
mkdir -p "$GOPATH_DIR/src/k8s.io"
ln -s "$WORK/src" "$GOPATH_DIR/src/k8s.io/kubernetes"
export GOPATH=$GOPATH_DIR GO111MODULE=off GOFLAGS= GOPROXY=off CGO_ENABLED=0
# The Go build cache lives beside the work directory (not in it), so a build
# that failed late is redone from the cache; removed on success.
export GOCACHE=$KUBE_DIR/gocache GOTMPDIR=
cd "$GOPATH_DIR/src/k8s.io/kubernetes"

# --- 3. pkg/generated/openapi with the vendored openapi-gen -----------------
log "building openapi-gen"
go build -o "$WORK/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
# Same input set as upstream's Makefile.generated_files (KUBE target): every
# directory of the tree (staging/src seen as vendor/, the rest of vendor/
# skipped) whose Go files carry a +k8s:openapi-gen= tag, except
# code-generator and sample-apiserver.
openapi_dirs=$(find -H . \( -path './_*' -o -path './.*' -o -path ./vendor \) -prune \
        -o -type f -name '*.go' -print \
    | xargs grep -l '+k8s:openapi-gen=' \
    | sed -e 's|/[^/]*$||' -e 's|^\./||' -e 's|^staging/src/|vendor/|' \
    | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' \
    | LC_ALL=C sort -u)
openapi_inputs=$(sed 's|^|k8s.io/kubernetes/|' <<<"$openapi_dirs" | paste -sd, -)
log "generating pkg/generated/openapi from $(wc -l <<<"$openapi_dirs") packages"
"$WORK/openapi-gen" --logtostderr \
    -i "$openapi_inputs" \
    -p k8s.io/kubernetes/pkg/generated/openapi \
    -O zz_generated.openapi \
    -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt \
    -r "$WORK/openapi-violations.report" 2>"$WORK/openapi-gen.log" \
    || { tail -n 30 "$WORK/openapi-gen.log" >&2; die "openapi-gen failed"; }
[[ -s pkg/generated/openapi/zz_generated.openapi.go ]] || die "openapi-gen wrote nothing"
if ! diff -q "$WORK/openapi-violations.report" api/api-rules/violation_exceptions.list >/dev/null; then
    log "warning: openapi-gen's API-rule report differs from upstream's known list"
fi

# --- 4. reflect2 1.0.1 -> Debian's 1.0.2 -------------------------------------
log "replacing vendored modern-go/reflect2 with Debian's $(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)"
rm -rf vendor/github.com/modern-go/reflect2
mkdir -p vendor/github.com/modern-go/reflect2
cp "$REFLECT2_SRC"/*.go vendor/github.com/modern-go/reflect2/
rm -f vendor/github.com/modern-go/reflect2/*_test.go
[[ -f $REFLECT2_SRC/go_above_118.go ]] || log "warning: Debian's reflect2 has no go_above_118.go"

# --- 5. CRD type validation of "" / 0 / false (kube-openapi#230) --------------
zero_check='if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {'
patched=0
for f in vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go vendor/github.com/go-openapi/validate/type.go; do
    [[ -f $f ]] || continue
    if grep -qF "$zero_check" "$f"; then
        "$PYTHON" - "$f" "$zero_check" <<'PY'
import sys
path, old = sys.argv[1], sys.argv[2]
text = open(path).read()
open(path, "w").write(text.replace(old, "if data == nil {"))
PY
        grep -qF "$zero_check" "$f" && die "could not patch $f"
        log "patched the zero-value type check in $f (kube-openapi#230)"
        patched=$((patched + 1))
    fi
done
[[ $patched -gt 0 ]] || die "the zero-value type check of kube-openapi#230 was not found in the vendored validators"

# --- 6. the binaries -------------------------------------------------------------
ldflags="-s -w -buildid="
for pkg in k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version k8s.io/kubernetes/vendor/k8s.io/component-base/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_GIT_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=20"
    ldflags+=" -X $pkg.gitTreeState=archive -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done
mkdir -p "$WORK/out"
for bin in "${KUBE_BINARIES[@]}"; do
    log "building $bin"
    go build -trimpath -ldflags "$ldflags" -o "$WORK/out/$bin" "./cmd/$bin"
done
"$WORK/out/kube-apiserver" --version

# --- 7. etcd from Debian's etcd-server ----------------------------------------
mkdir -p "$WORK/etcd"
cd "$WORK/etcd"
if ! apt-get download -q -o APT::Sandbox::User=root etcd-server 2>"$WORK/etcd-download.log"; then
    if [[ $APT_UPDATED -eq 0 ]]; then
        log "apt-get download failed; refreshing the package lists once"
        apt-get update -q
        apt-get download -q -o APT::Sandbox::User=root etcd-server
    else
        cat "$WORK/etcd-download.log" >&2
        die "apt-get download etcd-server failed"
    fi
fi
etcd_deb=$(ls "$WORK"/etcd/etcd-server_*.deb)
etcd_version=$(dpkg-deb -f "$etcd_deb" Version)
dpkg-deb -x "$etcd_deb" "$WORK/etcd/root"
[[ -x $WORK/etcd/root/usr/bin/etcd ]] || die "no usr/bin/etcd in $etcd_deb"
cp "$WORK/etcd/root/usr/bin/etcd" "$WORK/out/etcd"
"$WORK/out/etcd" --version > "$WORK/etcd-version.txt"
sed -n 1p "$WORK/etcd-version.txt"  # (not `| head`: SIGPIPE + pipefail)
cd "$KUBE_DIR"

# --- install into the cache ----------------------------------------------------
rm -rf "$BIN_DIR.new"
mkdir -p "$BIN_DIR.new"
mv "$WORK/out"/* "$BIN_DIR.new/"
rm -rf "$BIN_DIR"
mv "$BIN_DIR.new" "$BIN_DIR"
cat > "$STAMP" <<EOF
recipe=$RECIPE
kubernetes-source=$src_version
kubernetes-binaries=${KUBE_BINARIES[*]} $KUBE_GIT_VERSION
kube-openapi-230=patched
etcd-server=$etcd_version
go=$go_version
reflect2=$(dpkg-query -W -f='${Version}' golang-github-modern-go-reflect2-dev)
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EOF
if [[ ${KUBE_BUILD_KEEP_WORK:-0} != 1 ]]; then
    rm -rf "$WORK" "$GOCACHE"
fi
RESULT="built kubernetes-source ${src_version} + etcd-server ${etcd_version} into $BIN_DIR"
