#!/bin/sh
# Bounded resources: inputs that would need more memory than there is are
# refused up front with one clear message and exit 2 (never SIGABRT, under
# ASan+UBSan too); only regular files and named pipes are read.
set -u
. tests/e2e/lib/harness.sh

"$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=2 \
  --set vocab=64 --out m >/dev/null || fail "init-weights"

# config.json with 2^31-1 layers beside a 2-layer checkpoint: refused for
# memory before anything is read; with a budget that would allow it, the
# missing layer is found before anything is allocated per layer.
mkdir huge && cp m/model.safetensors huge/
sed 's/"n_layer": 2/"n_layer": 2147483647/' m/config.json >huge/config.json
refused "2147483647 layers.*needs .* of memory" \
  "$M" run --model huge --tokens 1,2 --out r.safetensors
sed 's/"n_layer": 2/"n_layer": 100000000/' m/config.json >huge/config.json
refused "backbone.layers.99999999.*(the config has 100000000 layers)" \
  "$M" run --model huge --tokens 1,2 --out r.safetensors --max-memory 1e18

# generate --max-new 1048576 --out with a 50280-token vocabulary: 211 GB
# of logits (held three times: the array, its copy for the file, the
# file's image), refused before allocating.
"$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=1 \
  --set vocab=50280 --out v >/dev/null || fail "init-weights v"
refused "generating 1048576 tokens .*needs 589 GiB of memory, more than the 16.0 GiB that --max-memory allows" \
  "$M" generate --model v --tokens 1,2 --max-new 1048576 --out g.safetensors \
  --max-memory 16GiB
avail=$(awk '/MemAvailable/ {print $2}' /proc/meminfo 2>/dev/null)
if [ -n "$avail" ] && [ "$avail" -lt 150000000 ]; then
  refused "needs 589 GiB of memory, more than the .* this machine has" \
    "$M" generate --model v --tokens 1,2 --max-new 1048576 --out g.safetensors
fi
[ -e g.safetensors ] && fail "a refused generate wrote its --out"

# 65 000 tokens on the interpreter, from a file, with too little memory.
python3 -c 'print(",".join(str(i % 64) for i in range(65000)))' >tokens.txt
refused "running 1 x 65000 tokens (interpreter, 2 layers) needs" \
  "$M" run --model m --tokens-file tokens.txt --out r.safetensors \
  --max-memory 64MiB
# ... which runs with enough (the fused executor holds less).
if [ "${MAMBALAYA_SANITIZED:-0}" != 1 ]; then
  "$M" run --model m --tokens-file tokens.txt --out r.safetensors \
    --strategy full 2>/dev/null || fail "65000 tokens, fused"
  [ "$("$M" tensors --json r.safetensors |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["tensors"][0]["shape"])')" = \
    "[1, 65000, 64]" ] || fail "65000 tokens: logits shape"
fi

# init-weights of 2^24 layers: refused for memory, nothing written.
refused "writing a model of 16777216 layers.*needs" \
  "$M" init-weights --model mamba-130m --set n_layer=16777216 --out big

# /dev/zero as every kind of input: not a regular file or a named pipe.
refused "/dev/zero: error: cannot read: a character device" \
  "$M" fuse /dev/zero
refused "/dev/zero: error: cannot read: a character device" \
  "$M" eval mamba1 --arch /dev/zero
refused "/dev/zero: error: cannot read: a character device" \
  "$M" tensors /dev/zero
refused "/dev/zero: error: cannot read: a character device" \
  "$M" run --model m --tokens-file /dev/zero --out r.safetensors
mkdir z && ln -s /dev/zero z/config.json && cp m/model.safetensors z/
refused "z/config.json: error: cannot read: a character device" \
  "$M" run --model z --tokens 1 --out r.safetensors
rm z/config.json && cp m/config.json z/ && rm z/model.safetensors &&
  ln -s /dev/zero z/model.safetensors
refused "z/model.safetensors: error: cannot read: a character device" \
  "$M" run --model z --tokens 1 --out r.safetensors
refused "cannot read: a directory" "$M" fuse m
refused "cannot read: a directory" \
  "$M" run --model m --tokens-file m --out r.safetensors

# A named pipe is read (to its end).
mkfifo pipe
printf '1,2,3\n4,5,6\n' >pipe &
"$M" run --model m --tokens-file pipe --out p.safetensors 2>err ||
  fail "tokens from a named pipe: $(cat err)"
wait
grep -q "2 x 3 tokens" err || fail "tokens from a pipe: $(cat err)"

# A shipped spec through a pipe, too.
cat "$ROOT/specs/mamba1.yaml" >pipe &
"$M" classify ./pipe >/dev/null 2>err || fail "spec from a pipe: $(cat err)"
wait

# NaN weights: the logits are NaN and the picked tokens meaningless; run
# and generate say so on stderr (and still succeed).
mkdir nan && cp m/config.json nan/
python3 - m/model.safetensors nan/model.safetensors <<'EOF' || fail "NaN model"
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
e = json.loads(b[8:8 + n])["backbone.norm_f.weight"]
at = 8 + n + e["data_offsets"][0]
b[at:at + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(b)
EOF
"$M" generate --model nan --tokens 1,2 --max-new 2 >out 2>err ||
  fail "generate with NaN weights: $(cat err)"
grep -q "warning: 128 logits were not finite" err ||
  fail "generate with NaN weights: no warning: $(cat err)"
"$M" run --model nan --tokens 1,2 --out n.safetensors 2>err ||
  fail "run with NaN weights"
grep -q "warning: 128 of the 128 logits are not finite" err ||
  fail "run with NaN weights: no warning: $(cat err)"

echo "resources: $fails failures"
[ "$fails" -eq 0 ]
