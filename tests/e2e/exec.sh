#!/bin/sh
# The exec command end to end: every shipped spec under every strategy and
# every stitcher runs, --check finds it within 1e-5 of the interpreter,
# and the bytes it counted equal the model's tensor by tensor; inputs from
# files, --keep, --plan, the KV cache's next state across passes, and bad
# input (exit 2, FILE: error or FILE:LINE:COL).
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3   # with NumPy (python3-numpy), as tests/e2e/oracle.sh

# Small sizes, so that every plan runs in moments (a 4 KiB buffer still
# makes the fused executor tile).
. "$ROOT/tests/e2e/lib/sizes.sh"

n=0
mkdir "$tmp/all"
# Every strategy and stitcher (the tool's own lists: the interpreter and
# best are not plans of a strategy).
strategies=$(choices exec --strategy mamba1 | sed 's/^interpreter //; s/ best$//')
stitchers=$(choices exec --stitch mamba1)
[ "$(echo "$strategies" | wc -w)" -ge 5 ] || fail "strategies: '$strategies'"
[ "$(echo "$stitchers" | wc -w)" -ge 3 ] || fail "stitchers: '$stitchers'"
for spec in specs/*.yaml; do
  [ -n "$(sizes "$spec")" ] || fail "$spec has no small sizes in tests/e2e/lib/sizes.sh"
  for st in $strategies; do
    for how in $stitchers; do
      n=$((n + 1))
      # shellcheck disable=SC2046
      if ! "$MAMBALAYA" exec "$spec" $(sets "$spec") --random 1 \
           --strategy "$st" --stitch "$how" --buffer 4KiB --threads 2 \
           --check --json >"$tmp/all/$n.json" 2>"$tmp/err"; then
        fail "exec $spec --strategy $st --stitch $how: $(cat "$tmp/err")"
        rm -f "$tmp/all/$n.json"
      fi
      echo "$n $spec $st $how" >>"$tmp/all/index"
    done
  done
done
$PY - "$tmp/all" <<'PYEOF' || fail "exec JSON"
import json, os, sys
bad = 0
for line in open(os.path.join(sys.argv[1], "index")):
    n, spec, st, how = line.split()
    path = os.path.join(sys.argv[1], n + ".json")
    if not os.path.exists(path):
        continue
    try:
        d = json.load(open(path))
        assert d["executor"] == "fused" and d["plan"]["strategy"] == st
        assert d["check"], "nothing checked"
        for c in d["check"]:
            assert c["max_rel_diff"] != "inf" and c["max_rel_diff"] <= 1e-5, c
        tr = d["traffic"]
        inter = 0
        for t in tr["tensors"]:
            assert t["read_bytes"] == t["model_read_bytes"], t
            assert t["write_bytes"] == t["model_write_bytes"], t
            if t["intermediate"]:
                inter += t["read_bytes"] + t["write_bytes"]
        assert inter == tr["offchip_intermediate_bytes"], (inter, tr)
        assert tr["read_bytes"] > 0
    except Exception as ex:
        print("FAIL:", spec, st, how, repr(ex))
        bad += 1
sys.exit(1 if bad else 0)
PYEOF
[ "$n" -ge 150 ] || fail "only $n plans checked"

# The interpreter writes the outputs; the same inputs from a file give the
# same outputs; --keep writes inputs and intermediates too.
M1="$(sets specs/mamba1.yaml)"
# shellcheck disable=SC2086
"$MAMBALAYA" exec mamba1 $M1 --random 7 --out "$tmp/m1.st" >"$tmp/out" ||
  fail "exec mamba1 --out exited $?"
grep -q "EY \[2, 9, 16\] -> $tmp/m1.st" "$tmp/out" || fail "mamba1: $(cat "$tmp/out")"
"$MAMBALAYA" tensors "$tmp/m1.st" --json >"$tmp/t.json" || fail "tensors"
# shellcheck disable=SC2086
"$MAMBALAYA" exec mamba1 $M1 --random 7 --out "$tmp/in.st" \
  --keep "$($PY -c 'print(",".join(["PEY","PLEX","WEX","WTTX","WRX","WConv","BTX","WTTDelta","WB","WC","WTDelta","BDelta","A","D","WEY","H0","CS"]))')" \
  >/dev/null || fail "exec --keep inputs exited $?"
# shellcheck disable=SC2086
"$MAMBALAYA" exec mamba1 $M1 --inputs "$tmp/in.st" --strategy full \
  --check --out "$tmp/m1f.st" >/dev/null 2>"$tmp/err" ||
  fail "exec --inputs exited $?: $(cat "$tmp/err")"
$PY - "$tmp/m1.st" "$tmp/m1f.st" <<'PYEOF' || fail "--inputs: not the same outputs"
import sys
sys.path.insert(0, "tests/oracle")
import numpy as np, safetensors_io as st
a, _, _ = st.load(sys.argv[1])
b, meta, _ = st.load(sys.argv[2])
assert sorted(a) == ["EY", "LEX"], sorted(a)
for k in a:
    assert np.abs(a[k] - b[k]).max() <= 1e-5 * np.abs(a[k]).max(), k
PYEOF

# A plan written by fuse runs as written.
"$MAMBALAYA" fuse mamba2_chunked --strategy ri+rsb+rsp --stitch global \
  $(sets specs/mamba2_chunked.yaml) --json >"$tmp/p.json" || fail "fuse"
# shellcheck disable=SC2046
"$MAMBALAYA" exec mamba2_chunked $(sets specs/mamba2_chunked.yaml) \
  --plan "$tmp/p.json" --random 3 --check --json >"$tmp/pe.json" \
  2>"$tmp/err" || fail "exec --plan exited $?: $(cat "$tmp/err")"
$PY - "$tmp/p.json" "$tmp/pe.json" <<'PYEOF' || fail "exec --plan: not the plan"
import json, sys
p = json.load(open(sys.argv[1]))
e = json.load(open(sys.argv[2]))
assert e["plan"]["groups"] == p["groups"]
assert e["traffic"]["offchip_intermediate_bytes"] == 4 * p["offchip_elements"]
PYEOF

# A KV cache across passes: a prompt of 6 tokens run whole
# (prenorm_block), then 4 of them as a cache and the last 2 decoded
# (prenorm_decode): the same outputs, and the next cache is the prompt's
# keys and values, 6 tokens long.
PB="--set B=2 --set d_model=8 --set H=2"
# shellcheck disable=SC2086
"$MAMBALAYA" exec prenorm_block $PB --set M=6 --random 5 --out "$tmp/pb.st" \
  --keep X,G1,BE1,WQ,WK,WV,BQ,BK,BV,WO,BO,G2,BE2,W1,B1,W2,B2,K,V,Y \
  >/dev/null || fail "prenorm_block exited $?"
$PY - "$tmp/pb.st" "$tmp/dec.st" <<'PYEOF' || fail "KV cache inputs"
import sys
sys.path.insert(0, "tests/oracle")
import safetensors_io as st
t, _, _ = st.load(sys.argv[1])
out = {k: v for k, v in t.items() if k not in ("K", "V", "Y", "X")}
out["X"] = t["X"][:, 4:, :]
out["KC"] = t["K"][:, :, :4, :]
out["VC"] = t["V"][:, :, :4, :]
st.save(sys.argv[2], out)
PYEOF
for st in interpreter full; do
  chk=""
  [ "$st" = full ] && chk=--check
  # shellcheck disable=SC2086
  "$MAMBALAYA" exec prenorm_decode $PB --set T=4 --set M=2 --inputs \
    "$tmp/dec.st" --strategy "$st" $chk --out "$tmp/dy.st" \
    --next "$tmp/next.st" >/dev/null 2>"$tmp/err" ||
    fail "prenorm_decode $st exited $?: $(cat "$tmp/err")"
  $PY - "$tmp/pb.st" "$tmp/dy.st" "$tmp/next.st" <<'PYEOF' || fail "KV cache ($st)"
import sys
sys.path.insert(0, "tests/oracle")
import numpy as np, safetensors_io as st
full, _, _ = st.load(sys.argv[1])
y, _, _ = st.load(sys.argv[2])
nx, _, _ = st.load(sys.argv[3])
assert sorted(nx) == ["KC", "VC"], sorted(nx)
assert nx["KC"].shape == (2, 2, 6, 4), nx["KC"].shape
np.testing.assert_allclose(y["Y"], full["Y"][:, 4:, :], rtol=0, atol=1e-5)
np.testing.assert_allclose(nx["KC"], full["K"], rtol=0, atol=1e-6)
np.testing.assert_allclose(nx["VC"], full["V"], rtol=0, atol=1e-6)
PYEOF
done

# Decode a Mamba-1 step: the sequence rank set to 1, the state written.
# shellcheck disable=SC2086
"$MAMBALAYA" exec mamba1 $(echo "$M1" | sed 's/--set I=9//') --phase decode \
  --random 2 --strategy ri --check --next "$tmp/m1n.st" >"$tmp/out" \
  2>"$tmp/err" || fail "mamba1 decode exited $?: $(cat "$tmp/err")"
grep -q "I=1" "$tmp/out" || fail "decode: $(cat "$tmp/out")"
"$MAMBALAYA" tensors "$tmp/m1n.st" | grep -q "H0 *F32 *\[2, 32, 4\]" ||
  fail "decode: no H0 in the next state"

# --range: every value of A inside [-2, -1].
# shellcheck disable=SC2086
"$MAMBALAYA" exec mamba1 $M1 --random 4 --range A=-2:-1 --range 0:1 \
  --out "$tmp/r.st" --keep A,D >/dev/null || fail "--range exited $?"
$PY - "$tmp/r.st" <<'PYEOF' || fail "--range: values outside"
import sys
sys.path.insert(0, "tests/oracle")
import safetensors_io as st
t, _, _ = st.load(sys.argv[1])
assert t["A"].min() >= -2 and t["A"].max() <= -1, (t["A"].min(), t["A"].max())
assert t["D"].min() >= 0 and t["D"].max() <= 1
PYEOF

# Bad input: exit 2 and a message naming the problem.
expect2() {
  what=$1
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  st=$?
  [ "$st" -eq 2 ] || fail "$what: exit $st, expected 2 ($(cat "$tmp/err"))"
  [ -s "$tmp/out" ] && fail "$what: printed on stdout"
}
# shellcheck disable=SC2086
expect2 "no inputs" "$MAMBALAYA" exec mamba1 $M1
grep -q "^specs/mamba1.yaml:[0-9]*:[0-9]*: error: no value for the input PEY" \
  "$tmp/err" || fail "no inputs: $(cat "$tmp/err")"
# shellcheck disable=SC2086
expect2 "wrong shape" "$MAMBALAYA" exec mamba1 $M1 --set B=3 --inputs "$tmp/in.st"
grep -q "^$tmp/in.st: error: .* has shape \[2, 9, 16\]" "$tmp/err" ||
  fail "wrong shape: $(cat "$tmp/err")"
expect2 "not an input" "$MAMBALAYA" exec fusemax_3pass --inputs "$tmp/in.st"
grep -q "^$tmp/in.st: error: .* is not an input of" "$tmp/err" ||
  fail "not an input: $(cat "$tmp/err")"
printf 'not a safetensors file' >"$tmp/junk.st"
expect2 "malformed file" "$MAMBALAYA" exec mamba1 --inputs "$tmp/junk.st"
grep -q "^$tmp/junk.st: error:" "$tmp/err" || fail "junk: $(cat "$tmp/err")"
expect2 "--check alone" "$MAMBALAYA" exec mamba1 --random 1 --check
expect2 "--keep unknown" "$MAMBALAYA" exec fusemax_3pass --set M=4 --random 1 \
  --out "$tmp/x.st" --keep NOPE
grep -q "NOPE" "$tmp/err" || fail "--keep NOPE: $(cat "$tmp/err")"
expect2 "--range bad" "$MAMBALAYA" exec mamba1 --random 1 --range A=2:1
expect2 "--range unknown" "$MAMBALAYA" exec fusemax_3pass --random 1 --range QQ=0:1
expect2 "bad plan" "$MAMBALAYA" exec mamba1 --random 1 --plan "$tmp/p.json"
grep -q "^$tmp/p.json: error:" "$tmp/err" || fail "bad plan: $(cat "$tmp/err")"
expect2 "decode without a sequence" "$MAMBALAYA" exec cnn_layer --phase decode --random 1
"$MAMBALAYA" exec --help | grep -q "^examples:" || fail "exec --help has no example"
[ ! -e "$tmp/x.st" ] || fail "a failed run left $tmp/x.st"

echo "exec: $n plans, $fails failures"
[ "$fails" -eq 0 ]
