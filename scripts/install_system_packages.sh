#!/usr/bin/env bash
# Debian packages the tests use: headless Chromium + ChromeDriver (the report's browser
# test) and tcmalloc (the runner preloads it into Dask workers when present: the glibc
# allocator with Dask's malloc-trim setting slowed torch down up to 1.7x) and nginx (the
# real HTTP server the data Job's downloader is tested against: Range, ETag, If-Range;
# the tests start their own instance on 127.0.0.1, the package's service is not used).
set -euo pipefail
PACKAGES=(chromium chromium-driver libtcmalloc-minimal4 nginx)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  }
fi
echo "system packages: ${PACKAGES[*]} present ($(chromium --version 2>/dev/null | head -1); $(/usr/sbin/nginx -v 2>&1))"
