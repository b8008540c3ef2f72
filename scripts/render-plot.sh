#!/usr/bin/env bash
# Renders a training plot (the self-contained HTML page that plots::AttachToLoop writes, e.g.
# build/release/main-job/training.html) to a PNG with headless Chromium, for reports and CI logs.
#
#   scripts/render-plot.sh [PLOT.html] [OUT.png] [WIDTHxHEIGHT]
#
# Defaults: the main job's plot, the same name with .png, 1200x800. Needs Chromium
# (Debian: apt-get install chromium); the page loads nothing from the network.
set -euo pipefail
html=${1:-build/release/main-job/training.html}
out=${2:-${html%.html}.png}
size=${3:-1200x800}

browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
if [ -z "$browser" ]; then
  echo "render-plot: no Chromium found; on Debian: apt-get install chromium" >&2
  exit 2
fi
if [ ! -f "$html" ]; then
  echo "render-plot: no plot at $html (run the main job first: scripts/run-main.sh)" >&2
  exit 2
fi
if [[ ! "$size" =~ ^[0-9]+x[0-9]+$ ]]; then
  echo "render-plot: size must be WIDTHxHEIGHT, got $size" >&2
  exit 2
fi

abs_html=$(realpath "$html")
abs_out=$(realpath -m "$out")
# A throw-away profile, so a running browser or a root user does not get in the way.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --disable-gpu --hide-scrollbars --user-data-dir="$profile"
       --screenshot="$abs_out" --window-size="${size/x/,}")
if [ "$(id -u)" = 0 ]; then flags+=(--no-sandbox); fi
"$browser" "${flags[@]}" "file://$abs_html" >/dev/null 2>&1
if [ ! -s "$abs_out" ]; then
  echo "render-plot: $browser wrote no screenshot to $abs_out" >&2
  exit 1
fi
echo "render-plot: wrote $out ($size)"
