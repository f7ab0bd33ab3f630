#!/usr/bin/env bash
# chromium.sh — make sure Debian's headless-capable Chromium is installed,
# for the web console's browser test (ui's TestE2EConsoleBrowser, driven
# by chromedp). scripts/test calls it before its end-to-end step.
#
# Usage:   scripts/chromium.sh        # prints the browser's path
#
# Does:    nothing when chromium (or chromium-browser) is on PATH already;
#          otherwise, as root on Debian, `apt-get update && apt-get install
#          -y chromium`. Without root or apt-get it says so and fails; the
#          test then skips on a developer's machine and fails under CI=true.
set -euo pipefail
for b in chromium chromium-browser; do
  if command -v "$b" >/dev/null 2>&1; then
    command -v "$b"
    exit 0
  fi
done
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "chromium.sh: apt-get install chromium" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
  command -v chromium
  exit 0
fi
echo "chromium.sh: chromium is missing and cannot be installed here (needs root and apt-get): apt-get install chromium" >&2
exit 1
