#!/bin/sh
# The command line says what it does: a flag takes no value, numbers are
# plain decimals as in specs, --set never silently drops a setting, a
# shipped name is never shadowed by a local file unless written as a
# path, and names from files reach the terminal escaped, on one line.
set -u
. tests/e2e/lib/harness.sh

# Flags take no value.
refused "option --json takes no value" "$M" eval mamba1 --json=no
refused "option --pipelined takes no value" "$M" eval mamba1 --pipelined=false
refused "option --merge takes no value" "$M" classify mamba1 --merge=0
refused "option --mixer-outputs takes no value" \
  "$M" run --model x --tokens 1 --out y --mixer-outputs=no

# Numbers follow the spec's rule: plain decimals.
refused "plain decimal number" "$M" eval mamba1 --set I=0x10
refused "plain decimal number" "$M" eval mamba1 --set I=inf
refused "rank I has size 1e+16: a size must be a positive integer of at most 1e+15" \
  "$M" eval mamba1 --set I=1e16
"$M" eval mamba1 --set I=1e3 --json >e.json || fail "--set I=1e3"
refused "expects 1 to 256" "$M" run --model x --tokens 1 --out y --threads 0x4
refused "expects a size in bytes" \
  "$M" run --model x --tokens 1 --out y --buffer 0x10
sed 's|  eps: 1e-5|  eps: 0/0|' "$ROOT/specs/mamba1.yaml" >nan.yaml
refused "parameter eps is NaN: a parameter must be a finite number" \
  "$M" eval ./nan.yaml

# --phase decode with 64 --set options: still the decode phase (the last
# --set B wins), not a silent prefill.
sets=""
for i in $(seq 1 64); do sets="$sets --set B=$i"; done
# shellcheck disable=SC2086
"$M" eval mamba1 $sets --phase decode --json >many.json ||
  fail "64 --set with --phase decode exited $?"
"$M" eval mamba1 --set B=64 --phase decode --json >one.json ||
  fail "--set B=64 --phase decode exited $?"
python3 -c 'import json,sys
a, b = (json.load(open(f))["totals"] for f in sys.argv[1:])
assert a == b, (a, b)' many.json one.json ||
  fail "64 --set with --phase decode is not the decode phase at B=64"
# shellcheck disable=SC2086
"$M" eval mamba1 $sets --set B=1 >/dev/null ||
  fail "65 --set options (no limit, tests/e2e/peers.sh takes 200)"
# 63 and decode: I = 1.
sets63=""
for i in $(seq 1 63); do sets63="$sets63 --set B=$i"; done
# shellcheck disable=SC2086
"$M" eval mamba1 $sets63 --phase decode --json >d.json 2>err ||
  fail "63 --set with --phase decode: $(cat err)"
"$M" eval mamba1 --set B=63 --phase decode --json >d1.json 2>/dev/null
cmp -s d.json d1.json || fail "63 --set with decode differs from decode"

# Shipped names win over local files unless written as a path.
mkdir mambalaya mamba1
"$M" eval mamba1 --json >plain.json 2>err || fail "eval beside a folder"
[ -s err ] && fail "a folder named like a shipped file warned: $(cat err)"
rmdir mambalaya mamba1
# A local file named h100 (here a copy of mambalaya): the shipped h100
# wins, with a warning (its units are the tensor and CUDA cores); ./h100 is
# the file. A local file named like a default is not the default.
cp "$ROOT/archs/mambalaya.yaml" h100
"$M" eval mamba1 --arch h100 --design unfused --json >h.json 2>err
grep -q "warning: 'h100' is the shipped architecture (archs/h100.yaml); write ./h100" err ||
  fail "no warning for a local h100: $(cat err)"
grep -q '"unit": "cuda"' h.json ||
  fail "the local h100 shadowed the shipped one: $(head -c 300 h.json)"
"$M" eval mamba1 --arch ./h100 --design unfused --json >h2.json 2>err ||
  fail "eval --arch ./h100: $(cat err)"
[ -s err ] && fail "./h100 warned: $(cat err)"
"$M" eval mamba1 --design unfused --json >h3.json 2>/dev/null
# The same figures (the inputs differ: the file's path against the
# shipped name).
same_totals() {
  python3 -c 'import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["totals"] == b["totals"] and a["einsums"] == b["einsums"]' "$1" "$2"
}
same_totals h2.json h3.json || fail "./h100 is not the local file"
cp "$ROOT/archs/h100.yaml" mambalaya
"$M" eval mamba1 --design unfused --json >h4.json 2>err
[ -s err ] && fail "the default architecture warned: $(cat err)"
cmp -s h3.json h4.json || fail "a local file shadowed the default"
rm mambalaya

# Names from a file are escaped on the terminal; errors stay on one line.
python3 - <<'EOF' || fail "making evil.safetensors"
import json, struct
h = {"__metadata__": {"note\x1b]0;pwned\x07": "line1\nline2"},
     "a\x1b[2Jb\nc": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}
b = json.dumps(h).encode()
open("evil.safetensors", "wb").write(struct.pack("<Q", len(b)) + b + b"\0" * 4)
EOF
"$M" tensors evil.safetensors >t.txt 2>err || fail "tensors evil: $(cat err)"
python3 - t.txt <<'EOF' || fail "tensors printed control characters"
import sys
t = open(sys.argv[1], "rb").read()
assert not any(c < 0x20 and c != 0x0a for c in t), t
assert b"a\\x1b[2Jb\\x0ac" in t and b"line1\\x0aline2" in t, t
assert t.count(b"\n") == 5, t
EOF
refused "unexpected argument 'a\\\\x0ab'" "$M" tensors x "$(printf 'a\nb')"
printf 'shape: {I: 4}\neinsum:\n  declaration: {"A\\nB": [I]}\n' >nl.yaml
"$M" classify ./nl.yaml >out 2>err
[ "$(wc -l <err)" -eq 1 ] || fail "a newline in a name split the error"

echo "cli_strict: $fails failures"
[ "$fails" -eq 0 ]
