#!/bin/sh
# The per-level, per-tensor accesses of `mambalaya eval` against Timeloop
# v3.0.3's for the same loop nests: `mambalaya export timeloop` writes the
# architecture, each Einsum's problem and the model's mapping, and
# timeloop-model runs them as written, with no hand edit
# (bench/timeloop/README.md). Runs when timeloop-model is on PATH; says so
# and succeeds otherwise.
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
# compare NAME.yaml on ARCH.yaml [WINDOW]: every Einsum's counts; WINDOW
# names a tensor read through a sliding window (README.md, "By design").
compare() {
  d=$tmp/$1-$2
  mkdir "$d"
  "$BUILD/mambalaya" eval "$here/$1.yaml" --arch "$here/$2.yaml" \
    --design unfused --json >"$d/ours.json"
  "$BUILD/mambalaya" export timeloop "$here/$1.yaml" --arch "$here/$2.yaml" \
    --design unfused --out "$d/tl"
  i=0
  for p in "$d"/tl/*.problem.yaml; do
    e=$(basename "$p" .problem.yaml)
    echo "== $1 on $2: $e"
    if ! (cd "$d/tl" && timeloop-model arch.yaml "$e.problem.yaml" \
      "$e.mapping.yaml" >"$e.log" 2>&1) ||
      grep -q "WARNING\|ERROR" "$d/tl/$e.log"; then
      cat "$d/tl/$e.log"
      status=1
    else
      python3 "$here/compare.py" "$d/ours.json" \
        "$d/tl/timeloop-model.stats.txt" 2 "$i" ${3:-} || status=1
    fi
    i=$((i + 1))
  done
}
compare gemm three
compare conv three Inputs
compare gemm_odd three
compare conv_stride three Inputs
compare depthwise three Inputs
compare gemm four
compare reduce2 three
compare gemm staged
compare gemm_odd staged
# The buffer itself tiled from DRAM: the levels inside nest in its tiles.
compare gemm48 small
compare gemm_odd small
compare conv_stride small Inputs
compare reduce2 small
exit $status
