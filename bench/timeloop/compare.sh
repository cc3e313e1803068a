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
status=0
# compare NAME [WINDOW]: NAME.yaml priced on three.yaml against NAME.tl.yaml.
compare() {
  mkdir "$tmp/$1"
  "$BUILD/mambalaya" eval "$here/$1.yaml" --arch "$here/three.yaml" \
    --design unfused --json >"$tmp/$1/ours.json"
  (cd "$tmp/$1" && timeloop-model "$here/$1.tl.yaml" >timeloop.log 2>&1) ||
    { cat "$tmp/$1/timeloop.log"; status=1; return; }
  echo "== $1"
  python3 "$here/compare.py" "$tmp/$1/ours.json" \
    "$tmp/$1/timeloop-model.stats.txt" 2 ${2:-} || status=1
}
compare gemm
compare conv Inputs
exit $status
