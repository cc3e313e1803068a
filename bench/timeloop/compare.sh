#!/bin/sh
# The per-level, per-tensor accesses of `mambalaya eval` against Timeloop
# v3.0.3's for the same mapping (bench/timeloop/README.md). Runs when
# timeloop-model is on PATH; says so and succeeds otherwise.
#
#   sh bench/timeloop/compare.sh [BUILD]
set -eu
BUILD=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v timeloop-model >/dev/null 2>&1; then
  echo "timeloop-model is not on PATH: the Timeloop comparison is skipped"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BUILD/mambalaya" eval "$here/gemm.yaml" --arch "$here/three.yaml" \
  --design unfused --json >"$tmp/ours.json"
(cd "$tmp" && timeloop-model "$here/gemm.tl.yaml" >timeloop.log 2>&1) || {
  cat "$tmp/timeloop.log"
  exit 1
}
python3 "$here/compare.py" "$tmp/ours.json" \
  "$tmp/timeloop-model.stats.txt" 2
