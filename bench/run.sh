#!/bin/sh
# Run the benchmarks against the binaries in BUILD and print their figures.
# Results recorded by hand in bench/RESULTS.md, with the machine.
set -eu
BUILD=${1:-build}
"$BUILD/bench/bench_fusion" specs/mamba1.yaml
"$BUILD/bench/bench_fusion" specs/mamba2.yaml
