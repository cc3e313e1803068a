#!/bin/sh
# Whole language models against the NumPy oracle (tests/oracle): the
# oracle writes a model directory (weights, config.json) and its expected
# logits and final states; `mambalaya run` must match them to fp32
# tolerance (rtol 6e-4, atol 2e-3, as upstream) with the interpreter and
# the fused executor's plans, and to 1e-4 of each tensor's own scale.
# Then: prefill + decode steps (`generate`) equal one pass (`run`), F16 and
# BF16 checkpoints, init-weights, and the commands' errors.
#
# MAMBALAYA_SANITIZED=1 (set by `make test` for the ASan build) skips the
# 130m-shaped cases, which are slow under the sanitizers.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
: "${MAMBALAYA_SANITIZED:=0}"
PY=/usr/bin/python3
ORACLE=tests/oracle/mamba_ref.py
CMP=tests/e2e/oracle_compare.py
# The interpreter and every strategy's plan (the tool's own list).
ALL=$(choices run --strategy)
[ "$(echo "$ALL" | wc -w)" -ge 6 ] || fail "strategies: '$ALL'"

if ! $PY -c 'import numpy' 2>/dev/null; then
  skip "oracle: $PY has no NumPy (apt-get install python3-numpy)"
fi

TINY1="--version 1 --d-model 64 --n-layer 2 --vocab 128 --d-state 16"
TINY2="--version 2 --d-model 64 --n-layer 2 --vocab 128 --d-state 16 --headdim 16"
T8=3,1,4,1,5,9,2,6
T8x2="3,1,4,1,5,9,2,6;5,3,5,8,9,7,9,3"
T16=1,5,9,13,17,21,25,29,33,37,41,45,49,53,57,61

# check NAME "ORACLE-ARGS" TOKENS "STRATEGIES": the oracle's model and
# expectations, then mambalaya run with each strategy, compared.
check() {
  name=$1 args=$2 tokens=$3 strategies=$4
  dir=$tmp/$name
  # shellcheck disable=SC2086
  if ! $PY $ORACLE $args --tokens "$tokens" --out "$dir" >"$tmp/oracle.log" 2>&1; then
    fail "$name: the oracle failed: $(cat "$tmp/oracle.log")"
    return
  fi
  for s in $strategies; do
    out=$dir/$s.safetensors
    if ! "$MAMBALAYA" run --model "$dir" --tokens "$tokens" --strategy "$s" \
        --mixer-outputs --out "$out" 2>"$tmp/err"; then
      fail "$name $s: run exited $?: $(cat "$tmp/err")"
      continue
    fi
    $PY $CMP "$dir/expected.safetensors" "$out" --label "$name $s" \
      --keys logits,conv_state,ssm_state,mixer_output --scale-rtol 1e-4 ||
      fail "$name $s: differs from the oracle"
  done
}

check m1-tiny "$TINY1" "$T8" "$ALL"
check m1-tiny-b2-strong "$TINY1 --batch 2 --init strong" "$T8x2" "$ALL"
check m2-tiny "$TINY2" "$T8" "$ALL"
check m2-tiny-b2-strong "$TINY2 --batch 2 --init strong" "$T8x2" "$ALL"
check m1-f16 "$TINY1 --dtype F16" "$T8" "interpreter full"
check m2-bf16 "$TINY2 --dtype BF16 --batch 2" "$T8x2" "interpreter ri+rsb+rsp"
if [ "$MAMBALAYA_SANITIZED" = 1 ]; then
  echo "oracle: 130m-shaped layers skipped (sanitizer build)"
else
  check m1-130m-layer "--version 1 --d-model 768 --n-layer 1 --vocab 256" \
    "$T16" "interpreter ri+rsb+rsp full"
  check m2-130m-layer "--version 2 --d-model 768 --n-layer 1 --vocab 256 \
--d-state 128 --headdim 64" "$T16" "interpreter full"
fi

# ---- prefill + steps == one pass ----
# generate's logits (the prompt's from the prefill, then one per step) and
# final state equal run's over the tokens generate ran.
gen_vs_run() {
  name=$1 dir=$2 prompt=$3 s=$4
  g=$tmp/$name-gen-$s.safetensors r=$tmp/$name-run-$s.safetensors
  if ! "$MAMBALAYA" generate --model "$dir" --tokens "$prompt" --max-new 5 \
      --strategy "$s" --out "$g" >"$tmp/gen.out" 2>"$tmp/err"; then
    fail "$name $s: generate exited $?: $(cat "$tmp/err")"
    return
  fi
  ran=$($PY -c 'import sys; sys.path.insert(0, "tests/oracle")
import safetensors_io as st; print(st.load(sys.argv[1])[2]["tokens"])' "$g")
  # The printed ids are the tokens generate fed back, plus the last one.
  printed=$(tr '\n' ';' <"$tmp/gen.out")
  $PY - "$ran" "$printed" "$prompt" <<'PYEOF' || fail "$name $s: printed ids"
import sys
ran = [r.split(",") for r in sys.argv[1].split(";")]
printed = [r.split(",") for r in sys.argv[2].strip(";").split(";")]
prompt = [r.split(",") for r in sys.argv[3].split(";")]
assert len(printed) == len(ran), (printed, ran)
for r, p, q in zip(ran, printed, prompt):
    assert len(p) == 5 and r[:len(q)] == q and r[len(q):] == p[:-1], (r, p, q)
PYEOF
  if ! "$MAMBALAYA" run --model "$dir" --tokens "$ran" --strategy "$s" \
      --out "$r" 2>"$tmp/err"; then
    fail "$name $s: run exited $?: $(cat "$tmp/err")"
    return
  fi
  $PY $CMP "$r" "$g" --rtol 0 --atol 1e-4 --label "$name generate=run $s" ||
    fail "$name $s: prefill + steps differ from one pass"
}
for s in interpreter full ri best; do
  gen_vs_run m1 "$tmp/m1-tiny-b2-strong" "3,1,4;1,5,9" "$s"
  gen_vs_run m2 "$tmp/m2-tiny-b2-strong" "3,1,4;1,5,9" "$s"
done

# ---- a plan file ----
# The plan `search` writes for the layer's cascade at the run's shapes
# runs under run and generate (--plan), matches the oracle, and each
# command says which plan ran.
"$MAMBALAYA" search mamba1 --set B=1 --set I=8 --set d_model=64 \
  --set d_inner=128 --set d_state=16 --set dt_rank=4 --plan-out "$tmp/p.json" \
  >/dev/null 2>"$tmp/err" || fail "search --plan-out: $(cat "$tmp/err")"
if "$MAMBALAYA" run --model "$tmp/m1-tiny" --tokens "$T8" --plan "$tmp/p.json" \
    --mixer-outputs --out "$tmp/plan.safetensors" 2>"$tmp/err"; then
  grep -q "plan $tmp/p.json" "$tmp/err" || fail "run --plan: $(cat "$tmp/err")"
  $PY $CMP "$tmp/m1-tiny/expected.safetensors" "$tmp/plan.safetensors" \
    --label "m1-tiny --plan" --keys logits,conv_state,ssm_state,mixer_output \
    --scale-rtol 1e-4 || fail "run --plan: differs from the oracle"
else
  fail "run --plan: $(cat "$tmp/err")"
fi
"$MAMBALAYA" generate --model "$tmp/m1-tiny" --tokens 3,1,4 --max-new 3 \
  --strategy best >/dev/null 2>"$tmp/err" ||
  fail "generate --strategy best: $(cat "$tmp/err")"
grep -q "(best (searched on mambalaya))" "$tmp/err" ||
  fail "generate --strategy best: $(cat "$tmp/err")"

# ---- init-weights ----
M=$tmp/init
if "$MAMBALAYA" init-weights --model mamba-130m --set d_model=64 \
    --set n_layer=2 --set vocab=128 --seed 7 --out "$M" >"$tmp/init.out" 2>&1; then
  grep -q "Mamba-1, d_model 64, 2 layers, vocab 128" "$tmp/init.out" ||
    fail "init-weights summary: $(cat "$tmp/init.out")"
  "$MAMBALAYA" init-weights --model mamba-130m --set d_model=64 \
    --set n_layer=2 --set vocab=128 --seed 7 --out "$M.again" >/dev/null
  cmp -s "$M/model.safetensors" "$M.again/model.safetensors" ||
    fail "init-weights is not deterministic"
  "$MAMBALAYA" run --model "$M" --tokens 3,1,4,1,5 --out "$M/out.safetensors" \
    2>/dev/null || fail "run on init-weights' model"
  # The oracle loads the same directory: same logits; and the statistics.
  $PY - "$M" <<'PYEOF' || fail "init-weights: statistics or logits"
import math, os, sys
import numpy as np
sys.path.insert(0, "tests/oracle")
import mamba_ref as mr, safetensors_io as st
d = sys.argv[1]
w, dt, meta = st.load(os.path.join(d, "model.safetensors"))
cfg, params = mr.load_model(d)
assert meta.get("format") == "pt", meta
assert set(w) == set(mr.expected_weight_shapes(cfg)), "keys"
m = "backbone.layers.1.mixer."
assert np.allclose(w[m + "A_log"], np.log(np.arange(1, 17))[None, :])
assert np.all(w[m + "D"] == 1) and np.all(w["backbone.norm_f.weight"] == 1)
dt_ = mr.softplus(w[m + "dt_proj.bias"])
assert dt_.min() >= 1e-4 - 1e-9 and dt_.max() <= 0.1 + 1e-6, (dt_.min(), dt_.max())
e = w["backbone.embeddings.weight"]
assert abs(e.std() - 0.02) < 0.002, e.std()
o = w[m + "out_proj.weight"]
assert abs(o.std() - 0.02 / math.sqrt(4)) < 0.002, o.std()
c = w[m + "conv1d.weight"]
assert np.abs(c).max() <= 0.5 and c.std() > 0.25, c.std()
logits, _ = mr.forward(params, cfg, np.array([[3, 1, 4, 1, 5]]))
ours = st.load(os.path.join(d, "out.safetensors"))[0]["logits"]
err = np.abs(ours - logits).max()
print("init-weights: mambalaya vs oracle on the same checkpoint: max abs err %.2g" % err)
assert err < 1e-5, err
PYEOF
else
  fail "init-weights exited: $(cat "$tmp/init.out")"
fi
"$MAMBALAYA" init-weights --model mamba2-130m --set d_model=64 --set n_layer=1 \
  --set vocab=64 --dtype BF16 --out "$tmp/init2" >/dev/null ||
  fail "init-weights mamba2 BF16"
"$MAMBALAYA" generate --model "$tmp/init2" --tokens 1,2 --max-new 3 \
  >"$tmp/g2" 2>/dev/null || fail "generate on a BF16 Mamba-2 model"
[ "$(tr -cd ',' <"$tmp/g2")" = ",," ] || fail "generate printed: $(cat "$tmp/g2")"

# ---- errors: exit 2, a message, nothing on stdout ----
expect_error() {
  want=$1
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  st=$?
  [ "$st" = 2 ] || fail "$* exited $st, expected 2"
  [ -s "$tmp/out" ] && fail "$* printed on stdout: $(cat "$tmp/out")"
  grep -q -- "$want" "$tmp/err" || fail "$*: expected '$want' in: $(cat "$tmp/err")"
}
D1=$tmp/m1-tiny
expect_error "outside the vocabulary" \
  "$MAMBALAYA" run --model "$D1" --tokens 1,128 --out "$tmp/x.safetensors"
expect_error "not a model directory" \
  "$MAMBALAYA" run --model "$tmp/nowhere" --tokens 1 --out "$tmp/x.safetensors"
expect_error "unknown strategy" \
  "$MAMBALAYA" run --model "$D1" --tokens 1 --strategy fast --out "$tmp/x.safetensors"
expect_error "do not split into 3" \
  "$MAMBALAYA" run --model "$D1" --tokens 1,2 --batch 3 --out "$tmp/x.safetensors"
expect_error "expected a token id" \
  "$MAMBALAYA" generate --model "$D1" --tokens 1,x --max-new 2
expect_error "needs --model" "$MAMBALAYA" generate --tokens 1 --max-new 2
expect_error "Mamba-1 layer" \
  "$MAMBALAYA" run --model "$tmp/m2-tiny" --spec mamba1 --tokens 1 --out "$tmp/x.safetensors"
expect_error "not a size\|not a model size" \
  "$MAMBALAYA" init-weights --model mamba-130m --set width=3 --out "$tmp/y"
expect_error "not a model preset" \
  "$MAMBALAYA" init-weights --model mamba-9b --out "$tmp/y"
# A checkpoint without a key: the key and the mapping's place in the spec.
mkdir -p "$tmp/broken"
cp "$D1/config.json" "$tmp/broken/"
$PY - "$D1/model.safetensors" "$tmp/broken/model.safetensors" <<'PYEOF'
import sys
sys.path.insert(0, "tests/oracle")
import safetensors_io as st
w, _, meta = st.load(sys.argv[1])
del w["backbone.layers.1.mixer.A_log"]
st.save(sys.argv[2], w, metadata=meta)
PYEOF
expect_error "no tensor backbone.layers.1.mixer.A_log (A, mapped at specs/mamba1.yaml:" \
  "$MAMBALAYA" run --model "$tmp/broken" --tokens 1 --out "$tmp/x.safetensors"
[ -e "$tmp/x.safetensors" ] && fail "a failed run wrote its output"
for c in run generate init-weights; do
  "$MAMBALAYA" $c --help >"$tmp/help" 2>&1 || fail "$c --help exited $?"
  grep -q "usage: mambalaya $c" "$tmp/help" || fail "$c --help: no usage"
done

echo "oracle: $fails failures"
[ "$fails" -eq 0 ]
