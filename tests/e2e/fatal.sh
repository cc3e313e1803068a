#!/bin/sh
# Memory running out is a failure of the run (exit 1, one line saying
# so, nothing on stdout, no output file or temporary left), never an
# abort: issue 34's reproducer, whose arrays (4e15 bytes) no machine
# gives, with the executor's pool started (docs/io.md, "Writing").
set -u
. "$(dirname "$0")/lib/harness.sh"

"$M" exec mamba1 --random 1 --threads 4 --set B=1000000 --set I=1000000 \
  --max-memory 1e20GiB --out res.safetensors >out 2>err
st=$?
[ "$st" -eq 1 ] || fail "exec out of memory exited $st, expected 1: $(cat err)"
[ -s out ] && fail "exec out of memory printed on stdout: $(cat out)"
[ "$(cat err)" = "mambalaya: out of memory (allocating 4096000000000000 bytes)" ] ||
  fail "exec out of memory said: $(cat err)"
left=$(ls -A | grep -v -e '^out$' -e '^err$')
[ -z "$left" ] || fail "exec out of memory left: $left"
finish fatal.sh
