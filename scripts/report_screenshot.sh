#!/usr/bin/env bash
# Render the demo's report.html in headless Chromium (Debian's package) and save a screenshot, to look
# at what an on-call engineer sees. Usage: scripts/report_screenshot.sh [report.html] [out.png]
set -euo pipefail
report=${1:-demo-output/report.html}
out=${2:-demo-output/report.png}
if ! command -v chromium >/dev/null; then
  echo "installing Debian's chromium (needs root)" >&2
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --window-size=1200,900 --screenshot="$out" "file://$(realpath "$report")" 2>/dev/null
echo "$out"
