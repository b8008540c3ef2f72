#!/bin/bash
# Checks that docs/gomlx-names.md has a row for every GoMLX graph function listed in
# tests/docs/gomlx_graph_functions.txt, and that every row names kiln's function or a reason.
set -euo pipefail
src="${1:?usage: gomlx_names_check.sh SOURCE_DIR}"
doc="$src/docs/gomlx-names.md"
list="$src/tests/docs/gomlx_graph_functions.txt"
status=0
while read -r name; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if ! grep -q "^| \`$name\` | " "$doc"; then
    echo "gomlx-names.md: no row for $name"
    status=1
  fi
done <"$list"
# Rows without a kiln name need a reason.
if grep -E '^\| `[A-Za-z0-9]+` \| — \| *\|$' "$doc"; then
  echo "gomlx-names.md: the rows above say neither kiln's name nor why there is none"
  status=1
fi
rows=$(grep -c '^| `' "$doc")
echo "gomlx-names.md: $rows rows, $(grep -c '^[A-Z]' "$list") GoMLX functions listed"
exit $status
