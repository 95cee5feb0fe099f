#!/usr/bin/env bash
# Render the demo's report.html in headless Chromium (Debian's package) and save a screenshot, to look
# at what an on-call engineer sees. Usage: scripts/report_screenshot.sh [report.html] [out.png]
set -euo pipefail
report=${1:-demo-output/3-rewind/report.html}
out=${2:-demo-output/3-rewind/report.png}
command -v chromium-headless-shell >/dev/null || make -s browser  # Debian's headless Chromium (needs root)
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium-headless-shell --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --window-size=1280,1400 --screenshot="$out" "file://$(realpath "$report")" 2>/dev/null
echo "$out"
