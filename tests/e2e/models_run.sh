#!/bin/sh
# A whole model on real tensors (docs/models.md, "Running a model"): a
# four-layer hybrid of Granite 4.0's type (tests/configs/tiny/hybrid.json:
# Mamba-2 with groups, grouped-query attention with RoPE, a mixture of
# experts with a shared MLP, a tied head) gets random weights from
# `init-weights --config`, runs greedily under `generate --config` (a
# prompt, then one token at a time, each block carrying its KV cache or
# SSM state), and its logits at every position equal an independent NumPy
# reference written from the published formulas (tests/oracle/net_ref.py)
# within 1e-5. NumPy is a dependency of the tests: without it this fails.
set -u
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null ||
  skip "models_run: $PY has no NumPy (apt-get install python3-numpy)"
CFG=$ROOT/tests/configs/tiny/hybrid.json
M_DIR=$tmp/tiny

"$M" init-weights --config "$CFG" --out "$M_DIR" --seed 3 >out ||
  fail "init-weights --config"
grep -q "^wrote .*/config.json and .*/model.safetensors: granitemoehybrid, 4 layers, [0-9]* parameters (F32)$" out ||
  fail "init-weights says: $(cat out)"
cmp -s "$CFG" "$M_DIR/config.json" || fail "the config is not copied as it was"
# Two sequences, six new tokens each.
PROMPT="1,2,3,4,5;6,7,8,9,10"
"$M" generate --config "$M_DIR" --tokens "$PROMPT" --max-new 6 \
  --out "$tmp/logits.safetensors" >gen.txt || fail "generate --config"
[ "$(wc -l <gen.txt)" -eq 2 ] || fail "two rows of tokens: $(cat gen.txt)"
ALL=$(echo "$PROMPT" | tr ';' '\n' | paste -d, - gen.txt | paste -s -d';')
$PY "$ROOT/tests/oracle/net_ref.py" "$M_DIR" "$ALL" "$tmp/logits.safetensors" >ref.txt ||
  fail "logits against the NumPy reference: $(cat ref.txt)"
cat ref.txt
# The same weights and tokens give the same tokens again, and one
# sequence alone what it gave beside the other.
"$M" generate --config "$M_DIR" --tokens "1,2,3,4,5" --max-new 6 >one.txt ||
  fail "generate, one sequence"
[ "$(cat one.txt)" = "$(head -1 gen.txt)" ] ||
  fail "one sequence alone: $(cat one.txt), beside another: $(head -1 gen.txt)"
# Every shipped model type, shrunk to a tiny model of its kind and
# schedule (tests/configs/tiny/shrink.py), gets weights and runs: MLA and
# its latent cache, Gated DeltaNet and gated attention, Mamba-1 and
# Mamba-2, plain and gated MLPs, mixtures with and without shared
# experts, Falcon-H1's parallel block; Zamba2's shared block (fed the
# hidden state beside the embeddings) is refused, saying why.
mkdir -p "$tmp/small"
$PY "$ROOT/tests/configs/tiny/shrink.py" "$tmp/small" "$ROOT"/tests/configs/*.json ||
  fail "shrink.py"
for f in "$tmp"/small/*.json; do
  b=$(basename "$f" .json)
  "$M" init-weights --config "$f" --out "$tmp/small/$b" >/dev/null 2>err ||
    { fail "init-weights --config $b: $(cat err)"; continue; }
  if [ "$b" = Zamba2-2.7B ]; then
    refused "block shared attention 0 of .* cannot run yet: it reads the hidden state concatenated with the embeddings" \
      "$M" generate --config "$tmp/small/$b" --tokens "1,2,3" --max-new 2
    continue
  fi
  "$M" generate --config "$tmp/small/$b" --tokens "1,2,3;4,5,6" --max-new 4 \
    --out inc.st >small.txt 2>err || fail "generate --config $b: $(cat err)"
  [ "$(wc -l <small.txt)" -eq 2 ] || fail "$b: $(cat small.txt)"
  # Token by token equals one pass over the same tokens: every cache and
  # state a decode step carries (KV caches, a window's last tokens, MLA's
  # latents, SSM states) continues the prompt's exactly.
  seq=$(printf '1,2,3\n4,5,6\n' | paste -d, - small.txt | cut -d, -f1-6 |
    paste -s -d';')
  "$M" generate --config "$tmp/small/$b" --tokens "$seq" --max-new 1 \
    --out one.st >/dev/null 2>err || fail "generate one pass $b: $(cat err)"
  ROOT="$ROOT" $PY -c '
import os, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests", "oracle"))
import numpy as np, safetensors_io as st
inc = st.load("inc.st")[0]["logits"]
one = st.load("one.st")[0]["logits"]
err = float(np.max(np.abs(inc - one)))
sys.exit(0 if inc.shape == one.shape and err <= 1e-5 else print(inc.shape, one.shape, err) or 1)
' || fail "$b: token by token differs from one pass"
done

# Errors.
refused "drop --model" "$M" init-weights --config "$CFG" --model mamba-130m --out "$tmp/x"
refused "token 99 is outside the vocabulary (0 to 60)" \
  "$M" generate --config "$M_DIR" --tokens "1,99" --max-new 2
refused "no such file\|cannot read" "$M" generate --config "$tmp/none" --tokens "1" --max-new 1
finish models_run
