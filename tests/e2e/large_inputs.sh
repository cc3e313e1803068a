#!/bin/sh
# Every shipped spec is numerically safe: with its activations (the inputs
# that have a batch rank B: the layer's input, a KV cache, a carried
# state) drawn from [-1000, 1000) and its weights from [-1, 1) — signed
# parameters with their sign: Mamba's A = -exp(A_log) < 0, the chunked
# SSD's dt > 0 (after softplus) — every output of the interpreter and of
# the fully fused plan is finite. The Transformer without the row maximum
# in its softmax is the counter-example the test must catch: inf or NaN.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
. "$ROOT/tests/e2e/lib/sizes.sh"
PY=/usr/bin/python3   # with NumPy and PyYAML (python3-numpy, python3-yaml)

# The activations of SPEC: inputs (declared, produced by no Einsum) with a
# rank B. BaseLoader: YAML 1.1 would read a tensor named ON or Y as a bool.
activations() {
  $PY - "$1" <<'PYEOF'
import re, sys, yaml
e = yaml.load(open(sys.argv[1]), Loader=yaml.BaseLoader)["einsum"]
made = {re.match(r"\s*(\w+)", x).group(1) for x in e["expressions"]
        if "<0" not in x.split("=")[0]}
print(" ".join(t for t, r in e["declaration"].items()
               if t not in made and "B" in r))
PYEOF
}
# The signed parameters of SPEC, as --range options.
signs() {
  case "$1" in
  specs/mamba1.yaml | specs/mamba2.yaml | specs/mamba2_ssd.yaml) echo "--range A=-1:0" ;;
  specs/mamba2_chunked.yaml) echo "--range A=-1:0 --range DT=0:1000" ;;
  esac
}
# Each tensor of the safetensors file $1 as "NAME finite" or "NAME N
# non-finite of M".
finite() {
  $PY - "$1" <<'PYEOF'
import json, struct, sys
import numpy as np
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
for k, v in json.loads(b[8:8 + n]).items():
    if k == "__metadata__":
        continue
    s, e = v["data_offsets"]
    a = np.frombuffer(b[8 + n + s:8 + n + e], dtype=np.float32)
    bad = int((~np.isfinite(a)).sum())
    print(k, "finite" if bad == 0 else "%d non-finite of %d" % (bad, a.size))
PYEOF
}
# Run SPEC (a file) under strategy $2 with large activations; print what
# finite() says of its outputs.
large_run() {
  spec=$1 st=$2 sizes_of=${3:-$1}
  ranges=""
  for a in $(activations "$spec"); do ranges="$ranges --range $a=-1000:1000"; done
  ranges="$ranges $(signs "$sizes_of")" # the last --range of a name counts
  # shellcheck disable=SC2046,SC2086
  "$M" exec "$spec" $(sets "$sizes_of") --random 5 $ranges --strategy "$st" \
    --out "$tmp/o.st" >/dev/null 2>"$tmp/err" ||
    { echo "exit $?: $(cat "$tmp/err")"; return; }
  finite "$tmp/o.st"
}

n=0
for spec in specs/*.yaml; do
  [ -n "$(sizes "$spec")" ] || fail "$spec has no small sizes in lib/sizes.sh"
  [ -n "$(activations "$spec")" ] || fail "$spec: no activation found"
  for st in interpreter unfused full; do
    large_run "$spec" "$st" >"$tmp/said"
    grep -qv " finite$" "$tmp/said" && fail "$spec --strategy $st: $(cat "$tmp/said")"
    [ -s "$tmp/said" ] || fail "$spec --strategy $st: no output"
    n=$((n + 1))
  done
done
[ "$n" -eq 33 ] || fail "$n runs, expected 33 (11 specs, 3 executors)"

# The test catches the softmax that overflows: the Transformer as it was
# before issue 17, without GM.
sed -e 's/^    - "GM\[b,h,m\] = .*//' -e 's/^    GM: .*//' \
  -e 's|exp((QK\[b,h,m,p\] - GM\[b,h,m\]) / sqrt(E))|exp(QK[b,h,m,p] / sqrt(E))|' \
  specs/transformer.yaml >"$tmp/unsafe.yaml"
grep -q "GM\[" "$tmp/unsafe.yaml" && fail "the unsafe Transformer still reads GM"
large_run "$tmp/unsafe.yaml" interpreter specs/transformer.yaml >"$tmp/said"
grep -q "^Z [0-9]* non-finite of 160$" "$tmp/said" ||
  fail "the softmax without its maximum stayed finite: $(cat "$tmp/said")"
finish large_inputs
