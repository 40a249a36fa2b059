#!/usr/bin/env bash
# Build Prometheus' promtool from source, through the Go module proxy, into the cache, for the
# recording-rule tests (tests/monitoring/: `promtool check rules`, `promtool test rules`,
# `promtool check config` over components/addons/gpu_metrics/).
#
#   promtool <- github.com/prometheus/prometheus/cmd/promtool (scripts/promtool/go.mod, go.sum)
#
# Prometheus 3.x publishes its Go module as v0.3xx.y (v0.316.0 is Prometheus 3.16.0); the build
# module's go.mod names promtool as a `tool`, so go.sum holds exactly what it needs. Pinned: the
# version in go.mod, every module's hash in go.sum (checked by the go command against the checksum
# database when first downloaded), the Go toolchain (GOTOOLCHAIN=local: the machine's Go,
# /usr/local/go, 1.26 here). Built with CGO_ENABLED=0, -trimpath, the version stamped as
# Prometheus' own builds stamp it (github.com/prometheus/common/version).
#
# Output (outside the repository; reused while the pins, the build steps and Go are unchanged):
#   $CACHE/promtool/bin/promtool
#   $CACHE/promtool/stamp      (the version built and the recipe's hash)
# where CACHE is ${DASK_TKG__CACHE:-$HOME/.cache/dask-tkg}. The module and build caches are kept
# under $CACHE/promtool/ while a build runs and removed after a successful one
# (PROMTOOL_BUILD_KEEP_WORK=1 keeps them; a failed build keeps them for a fast retry).
#
# Usage:
#   scripts/build_promtool.sh [--force]     build (a cached run only checks the stamp)
#   scripts/build_promtool.sh --pin VERSION rewrite go.mod/go.sum for module version VERSION
#                                           (v0.316.0), then build
set -euo pipefail

START_SECONDS=$SECONDS
report_elapsed() {
    local rc=$?
    local elapsed=$((SECONDS - START_SECONDS))
    if [[ $rc -eq 0 ]]; then
        echo "build_promtool: ${RESULT:-done} in ${elapsed} s"
    else
        echo "build_promtool: FAILED (exit ${rc}) after ${elapsed} s" >&2
    fi
}
trap report_elapsed EXIT

log() { echo "build_promtool: $*"; }
die() { echo "build_promtool: error: $*" >&2; exit 1; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODULE_DIR=$HERE/promtool
MODULE=github.com/prometheus/prometheus

FORCE=0
PIN=
while [[ $# -gt 0 ]]; do
    case "$1" in
        --force) FORCE=1 ;;
        --pin) [[ $# -ge 2 ]] || die "--pin needs a module version"; PIN=$2; shift ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
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
OUT_DIR=$CACHE_ROOT/promtool
BIN_DIR=$OUT_DIR/bin
STAMP=$OUT_DIR/stamp
export GOMODCACHE=$OUT_DIR/gomod GOCACHE=$OUT_DIR/gocache GOTMPDIR=
mkdir -p "$OUT_DIR"

pin() {  # the build module, regenerated for one module version of Prometheus
    local version=$1 upstream
    [[ $version =~ ^v0\.3[0-9]{2}\.[0-9]+$ ]] || die "--pin wants a Prometheus 3 module version (v0.3xx.y), not $version"
    upstream=$(cd "$MODULE_DIR" && "$GO" mod download -json "$MODULE@$version" | awk -F'"' '/"GoMod":/ {print $4}')
    [[ -f $upstream ]] || die "could not download $MODULE@$version's go.mod"
    printf 'module dask-tkg.local/promtool\n\ngo %s\n\nrequire %s %s\n\ntool %s/cmd/promtool\n' \
        "$(awk '$1 == "go" {print $2; exit}' "$upstream")" "$MODULE" "$version" "$MODULE" > "$MODULE_DIR/go.mod"
    rm -f "$MODULE_DIR/go.sum"
    (cd "$MODULE_DIR" && GOFLAGS=-mod=mod "$GO" mod tidy)
}
if [[ -n $PIN ]]; then
    log "pinning $MODULE $PIN"
    pin "$PIN"
    FORCE=1
fi

VERSION=$(awk -v m="$MODULE" '$1 == m && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' \
    "$MODULE_DIR/go.mod")
[[ $VERSION =~ ^v0\.3([0-9]{2})\.([0-9]+)$ ]] || die "no $MODULE v0.3xx.y in $MODULE_DIR/go.mod"
PROMETHEUS_VERSION=3.$((10#${BASH_REMATCH[1]})).${BASH_REMATCH[2]}
# What the cached binary was built from: the pins, the toolchain and the steps below (bump STEPS
# when a change to them must invalidate the cached binary; a comment needs no rebuild).
STEPS=1
RECIPE=$(cat "$MODULE_DIR"/go.{mod,sum} <(echo "$go_version steps=$STEPS") | sha256sum | cut -c1-16)

exec 9>"$OUT_DIR/.lock"  # one build at a time: test sessions may ask in parallel
flock 9
if [[ $FORCE -eq 0 && -x $BIN_DIR/promtool ]] && grep -qx "recipe=$RECIPE" "$STAMP" 2>/dev/null; then
    RESULT="cached (promtool $PROMETHEUS_VERSION, $BIN_DIR/promtool)"
    exit 0
fi
log "building promtool $PROMETHEUS_VERSION ($MODULE $VERSION) with $go_version ($GO)"

phase_started=$SECONDS
(cd "$MODULE_DIR" && "$GO" mod download "$MODULE")
log "modules downloaded in $((SECONDS - phase_started)) s"
rm -rf "$OUT_DIR/out"
mkdir -p "$OUT_DIR/out"
phase_started=$SECONDS
built=$(date -u +%Y%m%d-%H:%M:%S)
v=github.com/prometheus/common/version
ldflags="-s -w -buildid= -X $v.Version=$PROMETHEUS_VERSION -X $v.Revision=module-$VERSION -X $v.Branch=module"
ldflags+=" -X $v.BuildUser=dask-tkg -X $v.BuildDate=$built"
(cd "$MODULE_DIR" && "$GO" build -trimpath -ldflags "$ldflags" -o "$OUT_DIR/out/promtool" "$MODULE/cmd/promtool")
log "promtool built in $((SECONDS - phase_started)) s ($(du -h "$OUT_DIR/out/promtool" | cut -f1))"
"$OUT_DIR/out/promtool" --version 2>&1 | grep -q "version $PROMETHEUS_VERSION " \
    || die "promtool reports another version: $("$OUT_DIR/out/promtool" --version 2>&1 | head -1)"

rm -rf "$BIN_DIR"
mv "$OUT_DIR/out" "$BIN_DIR"
cat > "$STAMP" <<STAMP_EOF
recipe=$RECIPE
prometheus=$PROMETHEUS_VERSION
module=$MODULE $VERSION
go=$go_version
built=$built
STAMP_EOF
if [[ ${PROMTOOL_BUILD_KEEP_WORK:-0} != 1 ]]; then
    "$GO" clean -modcache
    rm -rf "$GOMODCACHE" "$GOCACHE"
fi
RESULT="built promtool $PROMETHEUS_VERSION into $BIN_DIR"
