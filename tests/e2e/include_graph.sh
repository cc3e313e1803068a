#!/bin/sh
# The modules of src/ depend one way: the graph of `#include "../X/..."`
# lines between src/*/ directories has no cycle, and the executor
# (src/exec/) includes only ir, util and fusion (the plan) — nothing that
# knows YAML specs, shipped files, presets or language models.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"

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

# Inside a folder, files call one another one way too: from the objects
# of BUILD, an edge "dir/a dir/b" where a.o uses a symbol b.o defines
# (each object's symbols listed once: "D file sym" and "U file sym").
build=${BUILD:-build}
calls=$(for dir in "$build"/src/*/; do
  mod=$(basename "$dir")
  for o in "$dir"*.o; do
    f=$(basename "$o" .o)
    nm --defined-only -g "$o" | awk -v f="$f" '{ print "D", f, $3 }'
    nm -u "$o" | awk -v f="$f" '{ print "U", f, $2 }'
  done | awk -v mod="$mod" '
    $1 == "D" { def[$3] = def[$3] " " $2 }
    $1 == "U" { nu++; ufile[nu] = $2; usym[nu] = $3 }
    END {
      for (i = 1; i <= nu; i++) {
        n = split(def[usym[i]], by, " ")
        for (k = 1; k <= n; k++) {
          e = mod "/" ufile[i] " " mod "/" by[k]
          if (by[k] != ufile[i] && !(e in seen)) { seen[e] = 1; print e }
        }
      }
    }'
done)
[ -n "$calls" ] || fail "no calls between files found under $build/src/"
floop=$(echo "$calls" | tsort 2>&1 >/dev/null)
[ -z "$floop" ] || fail "files of one folder call each other in a circle: $floop"

# ir.h is the data model alone: no YAML document, no model presets.
for h in ydoc preset; do
  grep -q "#include \"\.\./$h/" src/ir/ir.h &&
    fail "src/ir/ir.h includes src/$h/ (the IR holds the cascade only)"
done

echo "include graph: $(echo "$edges" | wc -l) module edges, $(echo "$calls" | wc -l) file edges; exec -> $exec_deps"
if [ "$fails" -ne 0 ]; then
  echo "include graph: $fails failures"
  exit 1
fi
echo "include graph: 0 failures"
