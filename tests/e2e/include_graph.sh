#!/bin/sh
# The modules of src/ depend one way: the graph of `#include "../X/..."`
# lines between src/*/ directories has no cycle, and the executor
# (src/exec/) includes only ir, util and fusion (the plan) — nothing that
# knows YAML specs, shipped files, presets or language models.
set -u
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# One "FROM TO" line per module edge, e.g. "lm exec".
edges=$(for f in src/*/*.c src/*/*.h; do
  from=$(basename "$(dirname "$f")")
  sed -n 's|^#include "\.\./\([a-z_]*\)/.*|\1|p' "$f" |
    while read -r to; do echo "$from $to"; done
done | sort -u)

if [ -z "$edges" ]; then
  fail "no module includes found under src/"
fi
# tsort reports a loop on stderr (and still prints an order).
loop=$(echo "$edges" | tsort 2>&1 >/dev/null)
[ -z "$loop" ] || fail "the include graph of src/ has a cycle: $loop"

exec_deps=$(echo "$edges" | awk '$1 == "exec" { print $2 }' | tr '\n' ' ')
for dep in $exec_deps; do
  case $dep in
  ir | util | fusion) ;;
  *) fail "src/exec/ includes src/$dep/ (only ir, util and fusion allowed)" ;;
  esac
done
# A self-test of the check: a cycle must be caught.
if printf 'a b\nb a\n' | tsort >/dev/null 2>&1; then
  fail "tsort does not report a cycle"
fi

echo "include graph: $(echo "$edges" | wc -l) module edges; exec -> $exec_deps"
if [ "$fails" -ne 0 ]; then
  echo "include graph: $fails failures"
  exit 1
fi
echo "include graph: 0 failures"
