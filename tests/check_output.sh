#!/usr/bin/env bash
# Runs a program and checks that each expected extended regex matches some line of its output.
#   check_output.sh PROGRAM [ARGS...] -- REGEX...
set -u
cmd=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmd+=("$1"); shift; done
shift
out=$("${cmd[@]}" 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ]; then echo "check_output: ${cmd[0]} exited with $rc"; exit 1; fi
fail=0
for re in "$@"; do
  if ! grep -qE -- "$re" <<<"$out"; then echo "check_output: no line matches: $re"; fail=1; fi
done
exit $fail
