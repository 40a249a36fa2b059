#!/usr/bin/env bash
# Debian's Chromium and ChromeDriver for the report's browser test (headless, offline).
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  echo "chromium: $(chromium --version 2>/dev/null | head -1)"
  exit 0
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1 || {
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
}
echo "chromium: $(chromium --version 2>/dev/null | head -1)"
