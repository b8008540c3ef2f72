#!/usr/bin/env bash
# Renders a training plot (the self-contained HTML page that plots::AttachToLoop writes, e.g.
# build/release/main-job/training.html) to a PNG with headless Chromium, for reports and CI logs,
# and checks that the page drew its charts.
#
#   scripts/render-plot.sh [PLOT.html[#step=N]] [OUT.png] [WIDTHxHEIGHT]
#
# Defaults: the main job's plot, the same name with .png, 1200x800. "#step=N" shows the charts'
# tooltips (the values) at step N, as hovering there would. Needs Chromium
# (Debian: apt-get install chromium); the page loads nothing from the network.
#
# The page's script marks <html data-rendered="charts=C series=S points=P"> once every chart is
# built, or data-render-error="..." when it fails. This script reads the marker from the DOM
# Chromium dumps and prints "render-plot: rendered charts=C series=S points=P" (and, with
# "#step=N", "render-plot: tooltip TEXT" with the first chart's tooltip); it exits 1 when
# the page reports an error, sets no marker, or no screenshot comes out, and 2 on bad arguments or
# no Chromium.
set -euo pipefail
page=${1:-build/release/main-job/training.html}
html=${page%%#*}
fragment=${page#"$html"}
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

url="file://$(realpath "$html")$fragment"
abs_out=$(realpath -m "$out")
# A throw-away profile, so a running browser or a root user does not get in the way.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# The virtual time budget lets the page's scripts finish before the dump or the screenshot (a
# page still training reloads itself only after several seconds, past the budget).
flags=(--headless --disable-gpu --hide-scrollbars --user-data-dir="$profile" --no-first-run
       --window-size="${size/x/,}" --virtual-time-budget=5000)
if [ "$(id -u)" = 0 ]; then flags+=(--no-sandbox); fi
# A browser that hangs (no display server, a broken profile) fails after two minutes.
browse() { timeout 120 "$browser" "${flags[@]}" "$@"; }

dom=$(browse --dump-dom "$url" 2>"$profile/dump.log") || {
  echo "render-plot: $browser --dump-dom failed on $html:" >&2
  tail -5 "$profile/dump.log" >&2
  exit 1
}
html_tag=$(grep -o -m1 '<html[^>]*>' <<<"$dom" || true)
if [[ "$html_tag" =~ data-render-error=\"([^\"]*)\" ]]; then
  echo "render-plot: the page failed to draw its charts: ${BASH_REMATCH[1]}" >&2
  exit 1
fi
if [[ ! "$html_tag" =~ data-rendered=\"([^\"]*)\" ]]; then
  echo "render-plot: the page set no data-rendered marker (its script did not finish):" \
    "${html_tag:-no <html> tag in the DOM}" >&2
  exit 1
fi
rendered=${BASH_REMATCH[1]}
tooltip=""
if [[ "$html_tag" =~ data-tooltip=\"([^\"]*)\" ]]; then tooltip=${BASH_REMATCH[1]}; fi

rm -f "$abs_out"
browse --screenshot="$abs_out" "$url" >"$profile/shot.log" 2>&1 || true
if [ ! -s "$abs_out" ]; then
  echo "render-plot: $browser wrote no screenshot to $abs_out:" >&2
  tail -5 "$profile/shot.log" >&2
  exit 1
fi
echo "render-plot: rendered $rendered"
if [ -n "$tooltip" ]; then echo "render-plot: tooltip $tooltip"; fi
echo "render-plot: wrote $out ($size)"
