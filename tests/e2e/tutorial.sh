#!/bin/sh
# docs/tutorial.md cannot rot: every ```console block in it is run (from
# a copy of docs/tutorial/, with the binary as `mambalaya` and the NumPy
# python3 first on PATH) and its output compared with the block, figure
# for figure (tests/e2e/tutorial_check.py; times aside). After a change
# that moves a figure, rewrite the outputs with
#   tests/e2e/tutorial_check.py docs/tutorial.md --update
# (run as this script runs it) and read the prose around them again.
set -u
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3   # with NumPy (python3-numpy), as tests/e2e/oracle.sh

mkdir -p docs bin
cp -R "$ROOT/docs/tutorial" docs/
ln -s "$M" bin/mambalaya
ln -s "$PY" bin/python3
PATH="$tmp/bin:$PATH" $PY "$ROOT/tests/e2e/tutorial_check.py" \
  "$ROOT/docs/tutorial.md" >"$tmp/said" 2>&1 || fail "$(cat "$tmp/said")"
grep -qx "tutorial: 14 commands run, 0 differ" "$tmp/said" ||
  fail "not the 14 commands: $(tail -n 1 "$tmp/said")"
# The files the tutorial's commands write, where it says they are.
[ -s out/tutorial/pareto.svg ] || fail "the study wrote no out/tutorial/pareto.svg"
[ -s glr.safetensors ] || fail "exec wrote no glr.safetensors"
# The cascade is the tutorial's own, not a shipped one.
for s in "$ROOT"/specs/*.yaml; do
  cmp -s "$s" docs/tutorial/glr.yaml && fail "glr.yaml is $s"
done
finish tutorial
