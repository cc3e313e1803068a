#!/usr/bin/env bash
# The search's time on every shipped cascade on every shipped
# architecture, prefill and decode (latency, default options), one run
# each: the whole command's wall and CPU time (the search runs on one
# core), the space's size, the share of it priced and the group prices
# (each priced group once per spill variant). Ends with the
# slowest run and Mamba-1's worst (targets, issue 35: Mamba-1 <= 0.1 s
# of CPU, a chain of 160 <= 10 s).
#   bash bench/search.sh [BUILD]
set -euo pipefail
BUILD=${1:-build}
out=$(mktemp)
timing=$(mktemp)
trap 'rm -f "$out" "$timing"' EXIT
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %-10s %-8s %7s %7s %6s %10s %7s %7s %8s %6s %7s\n' spec arch \
  phase wall_s cpu_s nodes partitions groups priced variants named gap
worst=0 worst_at='' mamba1=0
for spec in specs/*.yaml; do
  for arch in archs/*.yaml; do
    for phase in prefill decode; do
      if ! /usr/bin/time -f '%e %U' -o "$timing" "$BUILD/mambalaya" search \
        "$spec" --arch "$arch" --phase "$phase" --json >"$out" 2>/dev/null; then
        why="FAILED"
        [ "$phase" = decode ] && why="not run: no sequence rank, no decode"
        printf '%-16s %-10s %-8s (%s)\n' "$(basename "$spec" .yaml)" \
          "$(basename "$arch" .yaml)" "$phase" "$why"
        continue
      fi
      read -r wall cpu <"$timing"
      python3 - "$spec" "$arch" "$phase" "$wall" "$cpu" "$out" <<'PY'
import json, os, sys
spec, arch, phase, wall, cpu, path = sys.argv[1:]
d = json.load(open(path))
sp = d["space"]
name = lambda p: os.path.splitext(os.path.basename(p))[0]
cand = sp.get("candidate_groups") or 0
priced = sp.get("groups_priced", 0)
print("%-16s %-10s %-8s %7.3f %7.3f %6d %10.4g %7d %6.0f%% %8d %7d %7.3f" % (
    name(spec), name(arch), phase, float(wall), float(cpu),
    sp["nodes"], sp["partitions"], cand,
    100.0 * priced / cand if cand else 0,
    sp.get("spill_variants_priced", priced), sp.get("named_plans_priced", 0),
    d["gap"]))
PY
      if awk -v a="$wall" -v b="$worst" 'BEGIN { exit !(a > b) }'; then
        worst=$wall worst_at="$spec $arch $phase"
      fi
      if [ "$(basename "$spec")" = mamba1.yaml ] &&
        awk -v a="$cpu" -v b="$mamba1" 'BEGIN { exit !(a > b) }'; then
        mamba1=$cpu
      fi
    done
  done
done
echo "slowest: ${worst} s of wall time ($worst_at); mamba1 at most ${mamba1} s of CPU (target <= 0.1 s)"

# A bounded search on long synthetic chains of matrix products (as
# tests/e2e/bounded.sh makes them): `--budget 1` bounds the whole search
# (issue 35: about 1 s on 2000 Einsums; docs/search.md, "A budget").
chain=$(mktemp)
for n in 600 2000; do
  python3 "$(dirname "$0")/../tests/e2e/lib/chain.py" "$n" 1024 "$chain"
  /usr/bin/time -f '%e %U' -o "$timing" "$BUILD/mambalaya" search "$chain" \
    --budget 1 --json >"$out" 2>/dev/null
  read -r wall cpu <"$timing"
  python3 - "$n" "$wall" "$cpu" "$out" <<'PY'
import json, sys
n, wall, cpu, path = sys.argv[1:]
sp = json.load(open(path))["space"]
print("chain of %s, --budget 1: %s s wall, %s s cpu (target <= 1 s); "
      "not priced: %d candidate groups, %d named-design plans"
      % (n, wall, cpu, sp["groups_skipped"], sp["named_plans_skipped"]))
PY
done

# The growth on chains and DAGs (issue 35: at most cubic in the number
# of Einsums): the whole search, unbounded, on chains of 20 to 320
# products, then on DAGs as long (every second Einsum a residual sum of
# the two before: chain.py's `dag`), CPU time and the exponent from the
# row before (log2 of the ratio: each row doubles the cascade). A row
# past LIMIT s (default 120) of wall time is cut there and says so; the
# rows after it are not run. SEARCH_GROWTH_SIZES (default "20 40 80 160
# 320") sets the lengths.
limit=${SEARCH_GROWTH_LIMIT:-120}
for kind in chain dag; do
  prev=''
  for n in ${SEARCH_GROWTH_SIZES:-20 40 80 160 320}; do
    python3 "$(dirname "$0")/../tests/e2e/lib/chain.py" "$n" 1024 "$chain" "$kind"
    # The short rows run REPS times and report one run's mean: a single
    # run of 40 takes a few of the timer's 10 ms ticks.
    reps=$((n <= 40 ? 20 : n <= 80 ? 5 : 1))
    if ! /usr/bin/time -f '%e %U' -o "$timing" timeout "$limit" sh -c \
      'for i in $(seq "$1"); do "$2" search "$3" --json >"$4" 2>/dev/null || exit 1; done' \
      sh "$reps" "$BUILD/mambalaya" "$chain" "$out"; then
      echo "$kind of $n: past ${limit} s (SEARCH_GROWTH_LIMIT), not finished"
      break
    fi
    read -r wall cpu <"$timing"
    wall=$(awk -v x="$wall" -v r="$reps" 'BEGIN { printf "%.3f", x / r }')
    cpu=$(awk -v x="$cpu" -v r="$reps" 'BEGIN { printf "%.3f", x / r }')
    awk -v k="$kind" -v n="$n" -v w="$wall" -v c="$cpu" -v p="$prev" 'BEGIN {
      g = (p != "" && p > 0 && c > 0) ? sprintf("n^%.1f", log(c / p) / log(2)) : "-"
      printf "%s of %d, unbounded: %s s wall, %s s cpu, growth %s\n", k, n, w, c, g }'
    prev=$cpu
  done
done
rm -f "$chain"
