#!/usr/bin/env bash
# Rewrites tests/golden/exports/*/model.pt2 from each case's `synth:` line.
# Usage: tests/golden/exports/regenerate.sh build/tools/graft
set -euo pipefail
graft=$(realpath "${1:?usage: regenerate.sh PATH/TO/graft}")
cd "$(dirname "$0")"
for case in */; do
  case=${case%/}
  args=$(sed -n 's/^synth: *//p' "$case/case.txt")
  [ -n "$args" ] || continue
  # shellcheck disable=SC2086
  "$graft" synth llama $args -o "$case/model.pt2" --quiet
  echo "regenerated $case/model.pt2"
done
