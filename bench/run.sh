#!/usr/bin/env bash
# Run the benchmarks against the binaries in BUILD and print their figures.
# Results are recorded in bench/RESULTS.md with the machine they ran on.
set -euo pipefail
BUILD=${1:-build}
"$BUILD/bench/bench_fusion" specs/mamba1.yaml
"$BUILD/bench/bench_fusion" specs/mamba2.yaml
"$BUILD/bench/bench_fusion" --chains
"$BUILD/bench/bench_model"
"$BUILD/bench/bench_sweep"   # design points per second (target >= 5000 on 2 cores)
"$BUILD/bench/bench_exec"    # mamba-130m in F16 and F32: prefill, decode, memory (--full: more)
"$BUILD/bench/bench_kernels"
"$BUILD/bench/bench_diff"    # diff of two 1 000 000-record results (target < 5 s)
out=$(mktemp -d)
TIMEFORMAT="mambalaya reproduce --out DIR (the whole command, every figure as SVG, PDF and PNG): %R s"
time "$BUILD/mambalaya" reproduce --out "$out" >/dev/null
TIMEFORMAT="mambalaya reproduce --format svg --out DIR (SVG only): %R s"
time "$BUILD/mambalaya" reproduce --format svg --out "$out/svg" >/dev/null
rm -rf "$out"
bash bench/search.sh "$BUILD"
bash bench/python.sh "$BUILD"   # eval from Python vs C (ratio <= 2), sweep points/s from Python
