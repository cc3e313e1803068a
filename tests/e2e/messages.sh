#!/bin/sh
# Messages a newcomer meets (issue 17): an unknown name lists the shipped
# specs, architectures and studies, with "did you mean" for close ones
# (for a spec, --arch and a study); a sum over a variable that only one
# factor of a product reads is warned about at its line and column, and
# ':: sum(w)' silences it; no shipped spec, good test spec or peer's file
# draws that warning; `exec --keep` of a tensor the plan keeps on chip
# writes it, equal to the interpreter's.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3

LIST="shipped specs: cnn_layer, fusemax_1pass, fusemax_3pass, gated_deltanet, mamba1, mamba2, mamba2_chunked, mamba2_ssd, prenorm_block, prenorm_decode, transformer; shipped architectures: a100, eyeriss, h100-sxm, h100, mambalaya; shipped studies: arch-neighbourhood, eyeriss-scratchpad, model-comparison"

# ---- unknown names ----
cd "$tmp" || exit 1
refused "^rwkv6: error: no such file, and no shipped spec of that name; $LIST$" \
  "$M" eval rwkv6
refused "^mamba3: error: no such file, and no shipped spec of that name (did you mean mamba1, mamba2?); $LIST$" \
  "$M" classify mamba3
refused "^h10: error: no such file, and no shipped architecture of that name (did you mean h100?); $LIST$" \
  "$M" eval mamba1 --arch h10
refused "^model-comparisn: error: no such file, and no shipped study of that name (did you mean model-comparison?); $LIST$" \
  "$M" sweep model-comparisn
# "Did you mean" for every closed set of names (issue 36): options,
# choices, models, an architecture's keys, roles, op classes and units;
# nothing suggested for a name near none.
refused "unknown option '--desing' (did you mean '--design'? see mambalaya eval --help)$" \
  "$M" eval mamba1 --desing full
refused "unknown design 'fulll' (did you mean 'full'? expected unfused, " \
  "$M" eval mamba1 --design fulll
refused "unknown design 'ri+rbs' (did you mean 'ri+rsb'? expected " \
  "$M" eval mamba1 --strategy ri+rbs
refused "unknown design 'xyz' (expected unfused, " "$M" eval mamba1 --design xyz
refused "unknown model 'mamba-37m' (did you mean 'mamba-370m'? expected one of " \
  "$M" eval mamba1 --model mamba-37m
A=$ROOT/archs/mambalaya.yaml
sed '26s/capacity:/capacty:/' "$A" >near1.yaml
refused "^near1.yaml:26:7: error: unknown key 'capacty' in a memory level (did you mean 'capacity'? expected name, " \
  "$M" eval mamba1 --arch near1.yaml
sed '72s/role: vector/role: vectr/' "$A" >near2.yaml
refused "^near2.yaml:72:13: error: unknown role 'vectr' (did you mean 'vector'? expected matrix, vector or feeder)$" \
  "$M" eval mamba1 --arch near2.yaml
sed '70s/exp: 1/exq: 1/' "$A" >near3.yaml
refused "unknown operation class 'exq' in unit 'array2d' (did you mean 'exp'? expected macc, " \
  "$M" eval mamba1 --arch near3.yaml
sed '73s/mode_of: array2d/mode_of: aray2d/' "$A" >near4.yaml
refused "mode_of names unknown unit 'aray2d' (did you mean 'array2d'? units: " \
  "$M" eval mamba1 --arch near4.yaml
# A name written as a path is a file, and its error the file's.
refused "^rwkv6.yaml: error: cannot read: No such file or directory$" \
  "$M" eval rwkv6.yaml
cd "$ROOT" || exit 1

# ---- a sum over one factor ----
cat >"$tmp/og.yaml" <<'YAML'
shape: {B: 1, I: 4, H: 2, V: 3}
einsum:
  declaration:
    ON: [B, I, H, V]
    GA: [B, I, H, V]
    OG: [B, I, H, V]
  expressions:
    - OG[b,i,h,v] = ON[b,i,h,v] * silu(GA[b,i,h,w])
YAML
"$M" classify "$tmp/og.yaml" >/dev/null 2>"$tmp/err" ||
  fail "the one-factor sum is refused: $(cat "$tmp/err")"
[ "$(cat "$tmp/err")" = "$tmp/og.yaml:8:49: warning: 'w' is summed but only one factor of the product reads it: the sum scales the other factors by a sum over w; write ':: sum(w)' if that is meant, else check the index" ] ||
  fail "the one-factor sum: $(cat "$tmp/err")"
sed -i 's/^    - OG\(.*\)$/    - "OG\1 :: sum(w)"/' "$tmp/og.yaml"
"$M" classify "$tmp/og.yaml" >/dev/null 2>"$tmp/err" || fail "':: sum(w)' refused"
[ -s "$tmp/err" ] && fail "':: sum(w)' does not silence it: $(cat "$tmp/err")"

n=0
for f in specs/*.yaml specs/peers/*.yaml tests/specs/good/*.yaml \
         $(find tests/specs/peers -name '*.yaml' ! -name '_*'); do
  "$M" classify "$f" >/dev/null 2>"$tmp/err" || fail "$f: $(cat "$tmp/err")"
  grep -q "only one factor" "$tmp/err" && fail "$f draws: $(cat "$tmp/err")"
  n=$((n + 1))
done
[ "$n" -ge 30 ] || fail "only $n specs checked"

# ---- exec --keep of an on-chip intermediate ----
G="--set B=2 --set I=5 --set D=8 --set H=2 --set E=3 --set F=4"
# shellcheck disable=SC2086
"$M" fuse gated_deltanet $G --strategy full --json >"$tmp/plan.json" || fail "fuse"
$PY -c 'import json,sys; p=json.load(open(sys.argv[1]))
g=p["plans"][0] if "plans" in p else p
assert g["offchip"] == ["Y"], g["offchip"]' "$tmp/plan.json" 2>"$tmp/err" ||
  fail "S is not on chip under full: $(cat "$tmp/err")"
for st in interpreter full; do
  # shellcheck disable=SC2086
  "$M" exec gated_deltanet $G --random 2 --strategy $st --buffer 4KiB \
    --keep S,Y --out "$tmp/$st.st" >"$tmp/out" 2>"$tmp/err" ||
    fail "--keep S under $st: $(cat "$tmp/err")"
done
$PY - "$tmp/interpreter.st" "$tmp/full.st" <<'PYEOF' || fail "--keep S differs"
import json, struct, sys
import numpy as np
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                             dtype=np.float32).reshape(v["shape"])
            for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert sorted(a) == sorted(b) == ["S", "Y"], (sorted(a), sorted(b))
assert a["S"].shape == (2, 5, 2, 3, 4), a["S"].shape
for k in a:
    assert np.array_equal(a[k], b[k]), (k, np.abs(a[k] - b[k]).max())
PYEOF
finish messages
