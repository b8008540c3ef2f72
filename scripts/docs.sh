#!/usr/bin/env bash
# Builds kiln's API reference from the `///` comments in include/kiln with Doxygen, into
# OUTDIR/html (OUTDIR defaults to build/docs), with the guide pages (docs/*.md, README.md)
# beside it, and fails when a public declaration has no documentation or a header comment has
# a Doxygen error, listing each one.
#   bash scripts/docs.sh [OUTDIR]
# The main page is docs/index.md (README.md where there is none). The configuration is
# docs/Doxyfile; Doxygen comes from Debian's `doxygen` package (scripts/install-deps.sh).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/docs}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$root"

if ! command -v doxygen >/dev/null; then
  echo "docs.sh: doxygen is not installed (bash scripts/install-deps.sh installs it)" >&2
  exit 1
fi

version="$(sed -n 's/^project(kiln VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
mainpage=README.md
if [[ -f docs/index.md ]]; then
  mainpage=docs/index.md
fi

rm -rf "$out/html" "$out/warnings.log"
# Doxygen reads the configuration from stdin ("-"): docs/Doxyfile plus the main page.
{
  cat docs/Doxyfile
  echo "USE_MDFILE_AS_MAINPAGE = $mainpage"
} | KILN_DOCS_OUT="$out" KILN_VERSION="$version" doxygen - >"$out/doxygen.out" 2>&1 || {
  cat "$out/doxygen.out" >&2
  echo "docs.sh: doxygen failed" >&2
  exit 1
}

# Doxygen writes its warnings one per "file:line: warning: ..." line (some run on over
# several lines); those in the headers fail the check, those in the guide pages are shown.
log="$out/warnings.log"
header_warnings="$(grep -E "^$root/include/kiln/[^:]*:[0-9]+: warning:" "$log" | sed "s|^$root/||" || true)"
other_warnings="$(grep -E ": warning:" "$log" | grep -vE "^$root/include/kiln/" | sed "s|^$root/||" || true)"
if [[ -n "$other_warnings" ]]; then
  echo "docs.sh: warnings outside the headers (not failing the check):" >&2
  echo "$other_warnings" >&2
fi
if [[ -n "$header_warnings" ]]; then
  echo "$header_warnings" >&2
  echo "docs.sh: $(echo "$header_warnings" | wc -l) warning(s) in include/kiln (see above): every public declaration needs a /// comment" >&2
  exit 1
fi
if [[ ! -f "$out/html/index.html" ]]; then
  echo "docs.sh: doxygen wrote no $out/html/index.html" >&2
  exit 1
fi
echo "docs.sh: API reference in $out/html/index.html (kiln $version, main page $mainpage)"
