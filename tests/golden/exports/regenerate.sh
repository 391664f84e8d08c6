#!/usr/bin/env bash
# Rewrites tests/golden/exports/*/model.pt2 from each case's `synth:` line, or only the
# named cases' (a new case: regenerate it alone, leaving the reviewed archives as they are).
# Usage: tests/golden/exports/regenerate.sh build/tools/graft [CASE...]
set -euo pipefail
graft=$(realpath "${1:?usage: regenerate.sh PATH/TO/graft [CASE...]}")
shift
cd "$(dirname "$0")"
if [ $# -eq 0 ]; then
  set -- */
fi
for case in "$@"; do
  case=${case%/}
  [ -f "$case/case.txt" ] || { echo "regenerate.sh: no case $case" >&2; exit 1; }
  args=$(sed -n 's/^synth: *//p' "$case/case.txt")
  [ -n "$args" ] || continue
  # shellcheck disable=SC2086
  "$graft" synth llama $args -o "$case/model.pt2" --quiet
  echo "regenerated $case/model.pt2"
done
