#!/usr/bin/env bash
# Build the current stacks' Kubernetes (the minor of the default VKr, Pulumi.yaml `tkr`) and
# etcd 3.5 from source, through the Go module proxy, into the cache, for the API-server and
# real-node tests of the current stacks (the paper's stacks keep Kubernetes 1.20:
# scripts/build_kube_apiserver.sh).
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl
#            <- module k8s.io/kubernetes (scripts/kube_current/kubernetes/go.mod, go.sum)
#   etcd     <- module go.etcd.io/etcd/server/v3 (scripts/kube_current/etcd/go.mod, go.sum)
#
# How k8s.io/kubernetes builds as a dependency: its own go.mod requires every staging module
# (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0 and points them at ./staging/src/k8s.io/*,
# a replace that Go ignores outside the main module. The build module here replaces each of
# them by the module the release publishes from that folder, k8s.io/<name> v0.<minor>.<patch>
# (the same source: Kubernetes' publishing bot pushes staging/src/k8s.io/<name> of tag
# v1.x.y to k8s.io/<name> as v0.x.y). Its go.mod names the binaries as `tool`s, so go.sum
# holds exactly what they need. Before building, the script checks that the module graph is
# upstream's own: every module the release's go.mod requires resolves to the version it
# names, and every staging folder it replaces is replaced here.
#
# Pinned: the versions in the two go.mod files, every module's hash in go.sum (checked by the
# go command against the checksum database when first downloaded), the Go toolchain
# (GOTOOLCHAIN=local: the machine's Go, /usr/local/go, 1.26 here; Kubernetes 1.33 asks for
# Go >= 1.24 and keeps its own `godebug default=go1.24`). Built with CGO_ENABLED=0 (static,
# as upstream builds its server binaries), -trimpath, the version stamped as upstream's
# hack/lib/version.sh does.
#
# Output (outside the repository; reused while the pins, the build steps and Go are unchanged):
#   $CACHE/kube-current/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kube-proxy,kubectl,etcd}
#   $CACHE/kube-current/stamp      (versions built and the recipe's hash)
# where CACHE is ${DASK_TKG__CACHE:-$HOME/.cache/dask-tkg}. The module and build caches are
# kept under $CACHE/kube-current/ while a build runs and removed after a successful one
# (KUBE_BUILD_KEEP_WORK=1 keeps them; a failed build keeps them for a fast retry).
#
# Usage:
#   scripts/build_kube_current.sh [--force]       build (a cached run only checks the stamp)
#   scripts/build_kube_current.sh --pin KUBE ETCD  rewrite the two go.mod/go.sum for Kubernetes
#                                                 KUBE (v1.33.13) and etcd ETCD (v3.5.36), then build
set -euo pipefail

START_SECONDS=$SECONDS
report_elapsed() {
    local rc=$?
    local elapsed=$((SECONDS - START_SECONDS))
    if [[ $rc -eq 0 ]]; then
        echo "build_kube_current: ${RESULT:-done} in ${elapsed} s"
    else
        echo "build_kube_current: FAILED (exit ${rc}) after ${elapsed} s" >&2
    fi
}
trap report_elapsed EXIT

log() { echo "build_kube_current: $*"; }
die() { echo "build_kube_current: error: $*" >&2; exit 1; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PINS=$HERE/kube_current
KUBE_MODULE_DIR=$PINS/kubernetes
ETCD_MODULE_DIR=$PINS/etcd
KUBE_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

FORCE=0
PIN_KUBE= PIN_ETCD=
while [[ $# -gt 0 ]]; do
    case "$1" in
        --force) FORCE=1 ;;
        --pin) [[ $# -ge 3 ]] || die "--pin needs KUBE and ETCD versions"; PIN_KUBE=$2; PIN_ETCD=$3; shift 2 ;;
        -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
        *) die "unknown argument: $1" ;;
    esac
    shift
done

GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || GO=$(command -v go) || die "no Go toolchain (expected /usr/local/go/bin/go)"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0 GOWORK=off
export GOPROXY=${GOPROXY:-https://proxy.golang.org}
go_version=$("$GO" env GOVERSION)

CACHE_ROOT=${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}
OUT_DIR=$CACHE_ROOT/kube-current
BIN_DIR=$OUT_DIR/bin
STAMP=$OUT_DIR/stamp
export GOMODCACHE=$OUT_DIR/gomod GOCACHE=$OUT_DIR/gocache GOTMPDIR=
mkdir -p "$OUT_DIR"

module_version() {  # the version a go.mod requires of a module
    awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' "$1"
}

# --- --pin: the two build modules, regenerated from upstream's go.mod --------------------
pin() {
    local kube=$1 etcd=$2 staging=v0.${1#v1.}
    log "pinning Kubernetes $kube (staging modules $staging) and etcd $etcd"
    local upstream
    upstream=$(cd "$KUBE_MODULE_DIR" && "$GO" mod download -json "k8s.io/kubernetes@$kube" \
        | awk -F'"' '/"GoMod":/ {print $4}')
    [[ -f $upstream ]] || die "could not download k8s.io/kubernetes@$kube's go.mod"
    {
        echo "module dask-tkg.local/kube-current"
        echo
        echo "go $(awk '$1 == "go" {print $2; exit}' "$upstream")"
        echo
        awk '$1 == "godebug" {print; print ""}' "$upstream"
        echo "require k8s.io/kubernetes $kube"
        echo
        echo "replace ("
        awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print "\t" $1 " => " $1 " '"$staging"'"}' "$upstream"
        echo ")"
        echo
        echo "tool ("
        printf '\tk8s.io/kubernetes/cmd/%s\n' "${KUBE_BINARIES[@]}"
        echo ")"
    } > "$KUBE_MODULE_DIR/go.mod"
    rm -f "$KUBE_MODULE_DIR/go.sum"
    (cd "$KUBE_MODULE_DIR" && GOFLAGS=-mod=mod "$GO" mod tidy)
    local etcd_upstream
    etcd_upstream=$(cd "$ETCD_MODULE_DIR" && "$GO" mod download -json "go.etcd.io/etcd/server/v3@$etcd" \
        | awk -F'"' '/"GoMod":/ {print $4}')
    [[ -f $etcd_upstream ]] || die "could not download go.etcd.io/etcd/server/v3@$etcd's go.mod"
    printf 'module dask-tkg.local/etcd-current\n\ngo %s\n\nrequire go.etcd.io/etcd/server/v3 %s\n\ntool go.etcd.io/etcd/server/v3\n' \
        "$(awk '$1 == "go" {print $2; exit}' "$etcd_upstream")" "$etcd" > "$ETCD_MODULE_DIR/go.mod"
    rm -f "$ETCD_MODULE_DIR/go.sum"
    (cd "$ETCD_MODULE_DIR" && GOFLAGS=-mod=mod "$GO" mod tidy)
}
if [[ -n $PIN_KUBE ]]; then
    pin "$PIN_KUBE" "$PIN_ETCD"
    FORCE=1
fi

KUBE_VERSION=$(module_version "$KUBE_MODULE_DIR/go.mod" k8s.io/kubernetes)
ETCD_VERSION=$(module_version "$ETCD_MODULE_DIR/go.mod" go.etcd.io/etcd/server/v3)
[[ $KUBE_VERSION =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || die "no k8s.io/kubernetes v1.x.y in $KUBE_MODULE_DIR/go.mod"
KUBE_MINOR=${BASH_REMATCH[1]}
[[ -n $ETCD_VERSION ]] || die "no go.etcd.io/etcd/server/v3 in $ETCD_MODULE_DIR/go.mod"
# What the cached binaries were built from: the pins, the toolchain and the steps below (bump
# STEPS when a change to them must invalidate cached binaries; a comment needs no rebuild).
STEPS=1
RECIPE=$(cat "$KUBE_MODULE_DIR"/go.{mod,sum} "$ETCD_MODULE_DIR"/go.{mod,sum} <(echo "$go_version steps=$STEPS") \
    | sha256sum | cut -c1-16)

cache_complete() {
    [[ -f $STAMP ]] && grep -qx "recipe=$RECIPE" "$STAMP" || return 1
    local bin
    for bin in "${KUBE_BINARIES[@]}" etcd; do [[ -x $BIN_DIR/$bin ]] || return 1; done
}

exec 9>"$OUT_DIR/.lock"  # one build at a time: test sessions may ask in parallel
flock 9
if [[ $FORCE -eq 0 ]] && cache_complete; then
    RESULT="cached (kubernetes $KUBE_VERSION, etcd $ETCD_VERSION, $BIN_DIR)"
    exit 0
fi
log "building Kubernetes $KUBE_VERSION and etcd $ETCD_VERSION with $go_version ($GO)"

# --- 1. the modules, and the check that the graph is upstream's ---------------------------
phase_started=$SECONDS
(cd "$KUBE_MODULE_DIR" && "$GO" mod download)
(cd "$ETCD_MODULE_DIR" && "$GO" mod download)
log "modules downloaded in $((SECONDS - phase_started)) s ($(du -sh "$GOMODCACHE" | cut -f1))"
upstream_mod=$GOMODCACHE/cache/download/k8s.io/kubernetes/@v/$KUBE_VERSION.mod
[[ -f $upstream_mod ]] || die "k8s.io/kubernetes $KUBE_VERSION's go.mod is not in the module cache"
staging=v0.$KUBE_MINOR.${KUBE_VERSION##*.}
missing_replaces=
for m in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$upstream_mod"); do
    grep -qE "^\s+$m => $m $staging\$" "$KUBE_MODULE_DIR/go.mod" || missing_replaces+=" $m"
done
[[ -z $missing_replaces ]] || die "staging modules not replaced by $staging in go.mod: $missing_replaces"
build_list=$(cd "$KUBE_MODULE_DIR" && "$GO" list -m -f '{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' all)
drift=$(awk 'NR == FNR {v[$1] = $2; next}
             $1 ~ /^[a-z]/ && $2 ~ /^v/ && $2 != "v0.0.0" && ($1 in v) && v[$1] != $2 {print $1 " " $2 " -> " v[$1]}
             $1 == "require" && $3 ~ /^v/ && $3 != "v0.0.0" && ($2 in v) && v[$2] != $3 {print $2 " " $3 " -> " v[$2]}' \
        <(echo "$build_list") "$upstream_mod")
[[ -z $drift ]] || die "the build list differs from k8s.io/kubernetes $KUBE_VERSION's own pins:
$drift"
log "module graph: upstream's pins ($(wc -l <<<"$build_list") modules), staging modules at $staging"

# --- 2. the binaries ------------------------------------------------------------------------
rm -rf "$OUT_DIR/out"
mkdir -p "$OUT_DIR/out"
phase_started=$SECONDS
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags="-s -w -buildid="
for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$KUBE_MINOR"
    ldflags+=" -X $pkg.gitTreeState=archive -X $pkg.buildDate=$built"
done
(cd "$KUBE_MODULE_DIR" && "$GO" build -trimpath -ldflags "$ldflags" -o "$OUT_DIR/out/" \
    $(printf 'k8s.io/kubernetes/cmd/%s ' "${KUBE_BINARIES[@]}"))
log "Kubernetes built in $((SECONDS - phase_started)) s"
phase_started=$SECONDS
etcd_ldflags="-s -w -buildid= -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$ETCD_VERSION"
(cd "$ETCD_MODULE_DIR" && "$GO" build -trimpath -ldflags "$etcd_ldflags" -o "$OUT_DIR/out/etcd" \
    go.etcd.io/etcd/server/v3)
log "etcd built in $((SECONDS - phase_started)) s"
reported=$("$OUT_DIR/out/kube-apiserver" --version)
[[ $reported == "Kubernetes $KUBE_VERSION" ]] || die "kube-apiserver reports '$reported', not $KUBE_VERSION"
"$OUT_DIR/out/etcd" --version | grep -qx "etcd Version: ${ETCD_VERSION#v}" || die "etcd reports another version"

# --- install into the cache -------------------------------------------------------------------
rm -rf "$BIN_DIR"
mv "$OUT_DIR/out" "$BIN_DIR"
cat > "$STAMP" <<EOF
recipe=$RECIPE
kubernetes=$KUBE_VERSION
etcd=$ETCD_VERSION
go=$go_version
binaries=${KUBE_BINARIES[*]} etcd
built=$built
EOF
if [[ ${KUBE_BUILD_KEEP_WORK:-0} != 1 ]]; then
    "$GO" clean -modcache
    rm -rf "$GOMODCACHE" "$GOCACHE"
fi
RESULT="built kubernetes $KUBE_VERSION + etcd $ETCD_VERSION into $BIN_DIR"
