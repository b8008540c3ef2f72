#!/usr/bin/env bash
# Runs a doc example and checks its output (the ctest doc.NAME of cmake/KilnDocExamples.cmake):
#   run_example.sh EXPECT_FILE PROGRAM [ARGS...]
# EXPECT_FILE holds extended regexes, one per line (from the example's `// doc-test: expect`
# lines; empty when it has none): each must match some line of the output, and the program must
# exit with 0.
set -u
expect_file=$1
shift
regexes=()
while IFS= read -r line; do regexes+=("$line"); done <"$expect_file"
exec "$(dirname "$0")/../check_output.sh" "$@" -- "${regexes[@]}"
