#!/usr/bin/env bash
# The search's time on every shipped cascade (prefill, the mambalaya
# architecture, latency), one run each: the whole command, the space's
# size and the share of it priced (each candidate group once).
set -euo pipefail
BUILD=${1:-build}
printf '%-28s %8s %8s %14s %8s %8s\n' spec seconds nodes partitions groups gap
for spec in specs/*.yaml; do
  start=$(date +%s.%N)
  "$BUILD/mambalaya" search "$spec" --json >/tmp/bench_search.$$ 2>/dev/null ||
    continue
  end=$(date +%s.%N)
  python3 - "$spec" "$start" "$end" /tmp/bench_search.$$ <<'PY'
import json, sys
spec, start, end, path = sys.argv[1:]
d = json.load(open(path))
sp = d["space"]
print("%-28s %8.3f %8d %14.6g %8d %8.3f" % (spec, float(end) - float(start),
      sp["merged_einsums"], sp["partitions"], sp["groups_priced"], d["gap"]))
PY
done
rm -f /tmp/bench_search.$$
