#!/bin/sh
# The peers' workload formats load unchanged (docs/compat.md): an
# AccelForge template rendered by jinja2 with its variables from --set,
# `import` writing the spec it stands for, a Timeloop problem, a TeAAL spec
# whose unmodelled sections are named once; nothing unbound or silent;
# --set without a limit.
set -u
. tests/e2e/lib/harness.sh
PY=python3
P=$ROOT/tests/specs/peers

# AccelForge: classify takes the template; import writes the same cascade.
"$M" classify "$P/accelforge/block.yaml" --json >direct.json 2>notes ||
  fail "classify an AccelForge template: $(cat notes)"
grep -q "note: rank T of X has size 33, derived from m\*2 + r" notes ||
  fail "derived size note: $(cat notes)"
grep -q "note: bits_per_value is read but not modelled" notes ||
  fail "bits_per_value note"
"$M" import accelforge "$P/accelforge/block.yaml" --out block.yaml ||
  fail "import accelforge"
grep -q '^  MC: 6    # ceil(16 / 3)' block.yaml || fail "ceil size: $(grep MC block.yaml)"
grep -q '"QK\[b, m, p, h\] = Q\[b, m, h, e\] \* K\[b, p, h, e\]"' block.yaml ||
  fail "rank annotation translated"
"$M" classify block.yaml --json >imported.json 2>/dev/null || fail "imported spec"
$PY - direct.json imported.json <<'PYEOF' || fail "import and direct load differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
key = lambda d: [(e["producer"], e["consumer"], e["class"]) for e in d["edges"]]
assert key(a) == key(b) and len(key(a)) == 15, (key(a), key(b))
PYEOF

# Template variables come from --set (and re-render); an unused one is
# refused like any unknown setting; an undefined one names its line.
"$M" import accelforge "$P/accelforge/block.yaml" --set BATCH_SIZE=4 \
  --set N_TOKENS=8 >b4.yaml || fail "import --set"
grep -q '^  B: 4$' b4.yaml || fail "BATCH_SIZE=4 gives B: 4"
grep -q '^  BATCH_SIZE: 4$' b4.yaml || fail "template variable as a param"
"$M" eval "$P/accelforge/block.yaml" --set BATCH_SIZE=4 >/dev/null 2>&1 ||
  fail "eval --set BATCH_SIZE"
"$M" classify "$P/accelforge/block.yaml" --set NOT_A_VARIABLE=1 >out 2>err
[ $? -eq 2 ] && [ ! -s out ] &&
  tail -n 1 err | grep -q "set NOT_A_VARIABLE: not a rank" ||
  fail "an unused template variable is refused: $(cat err)"
printf 'workload:\n  rank_sizes: {M: {{N_TOKENS}}}\n  einsums: ["Z[m] = A[m]"]\n' >undef.yaml
refused "undef.yaml:2:1: error: 'N_TOKENS' is undefined (give template variables with --set NAME=VALUE)" \
  "$M" classify undef.yaml
"$M" import accelforge undef.yaml --set N_TOKENS=3 | grep -q "^  M: 3$" ||
  fail "--set reaches the template"
refused "block.yaml: error: --set NOT_READ: the template does not read it" \
  "$M" import accelforge "$P/accelforge/block.yaml" --set NOT_READ=1
refused "112_accelforge_copy_reduces.yaml: error: --set N: the file is no template" \
  "$M" import accelforge "$ROOT/tests/specs/bad/112_accelforge_copy_reduces.yaml" --set N=1
refused "set is for AccelForge templates" \
  "$M" import timeloop "$P/timeloop/conv.yaml" --set C=4
"$M" import accelforge "$P/accelforge/block.yaml" --rendered >r.yaml ||
  fail "--rendered"
grep -q "^- - FFG\[b, m, c\] = Z\[b, m, g\] \* WFFG\[g, c\]" r.yaml ||
  grep -q "FFG\[b, m, c\] = Z\[b, m, g\] \* WFFG\[g, c\]" r.yaml ||
  fail "rendered include: $(head -5 r.yaml)"
# The renderer's python3 is a fixed path (the build's PYTHON), not PATH's.
env PATH=/nonexistent "$M" classify "$P/accelforge/block.yaml" >/dev/null \
  2>&1 || fail "rendering without python3 on PATH"

# Timeloop: one Einsum, the operator and the unmodelled mapping said.
"$M" classify "$P/timeloop/conv.yaml" >/dev/null 2>notes || fail "timeloop"
grep -q "note: the operator is a multiply-accumulate" notes ||
  fail "timeloop operator note"
grep -q "note: the mapping section is read but not modelled" notes ||
  fail "timeloop mapping note"
"$M" import timeloop "$P/timeloop/conv.yaml" |
  grep -q '"Outputs\[n, m, p, q\] = Weights\[c, m, r, s\] \* Inputs\[n, c, r + 2\*p, s + q\]"' ||
  fail "timeloop expression"
refused "not a Timeloop problem" "$M" import timeloop "$P/accelforge/block.yaml"

# Timeloop v0.4's spelling (data_spaces, read_write: its exercises, the
# FuseMax artifact) loads: FuseMax's four baseline problems, an exercise's
# AlexNet layer; a dimension no data space indexes is left out, and said.
for x in "fusemax_av:AV[b, f, h, p] = A[b, h, m, p] * V[b, f, h, m]" \
  "fusemax_m:M[b, h, p] = QK[b, h, m, p] :: sum(m)" \
  "fusemax_mm:Z[m, n] = A[k, m] * B[k, n]" \
  "fusemax_sn:SN[b, h, m, p] = QK[b, h, m, p] * M[b, h, p]" \
  "alexnet_layer1:Outputs[n, m, q, p] = Weights[c, m, r, s] * Inputs[n, c, r + 4*p, s + 4*q]"; do
  "$M" import timeloop "$P/timeloop/${x%%:*}.yaml" >imp 2>err ||
    fail "${x%%:*} does not load: $(cat err)"
  grep -qF "\"${x#*:}\"" imp || fail "${x%%:*}: $(grep '^    - ' imp)"
done
"$M" classify "$P/timeloop/fusemax_sld.yaml" >/dev/null 2>notes ||
  fail "fusemax_sld: $(cat notes)"
grep -q "note: dimension N indexes no data space: left out (Timeloop repeats the multiply-accumulate 256 times over it)" notes ||
  fail "the dimension left out is said: $(cat notes)"
sed 's/^    data_spaces:/    data-spaces: []\n    data_spaces:/' \
  "$P/timeloop/fusemax_mm.yaml" >both.yaml
refused "both.yaml:16:5: error: both data-spaces and data_spaces: give one" \
  "$M" classify both.yaml

# TeAAL: take() loads; one warning names the unmodelled sections.
"$M" classify "$P/teaal/gamma.yaml" >/dev/null 2>notes || fail "gamma"
[ "$(wc -l <notes)" -eq 1 ] || fail "one warning: $(cat notes)"
grep -q "warning: TeAAL's mapping, format, architecture, bindings sections are read but not modelled" notes ||
  fail "TeAAL warning: $(cat notes)"

# Nothing unbound: TeAAL's gemm without a and b is refused where a is
# used, and loads once --set gives them; exec then computes numbers.
refused "110_unbound_scalar.yaml:12:17: error: unknown name 'a'" \
  "$M" classify "$ROOT/tests/specs/bad/110_unbound_scalar.yaml"
"$M" exec "$ROOT/tests/specs/bad/110_unbound_scalar.yaml" --set a=2 --set b=3 \
  --set M=2 --set N=2 --set K=2 --random 1 --out z >/dev/null 2>err ||
  fail "bound by --set: $(cat err)"

# --set has no fixed limit: 200 settings, the last one of a name wins.
{
  echo "params:"
  i=0
  while [ $i -lt 200 ]; do echo "  p$i: 0"; i=$((i + 1)); done
  echo "shape: {I: 4}"
  echo "einsum:"
  echo "  declaration: {X: [I], Y: [I]}"
  echo "  expressions: [\"Y[i] = X[i] * p199\"]"
} >many.yaml
args=""
i=0
while [ $i -lt 200 ]; do args="$args --set p$i=$i"; i=$((i + 1)); done
# shellcheck disable=SC2086
"$M" classify many.yaml $args --set I=7 --json >many.json 2>err ||
  fail "200 --set options: $(cat err)"
$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["inputs"]["settings"]
assert len(s) == 201 and s["p199"] == 199 and s["I"] == 7, s' many.json 2>err ||
  fail "200 settings reported: $(cat err)"

# export timeloop: the architecture (every level, named as the file names
# it), each Einsum as a problem and the model's loop nest, in what
# Timeloop v3.0.3's mapping parser takes: permutations one letter per
# dimension, each dimension's factors covering its extent exactly
# (src/mapping/parser.cpp: 1 + sum (last_i - 1) x prod_{j inner} end_j,
# a leftover written N=32,24), every level a target.
"$M" export timeloop "$ROOT/specs/cnn_layer.yaml" --design full --out tl \
  2>err || fail "export timeloop: $(cat err)"
[ "$(ls tl | wc -l)" -eq 7 ] ||
  fail "arch.yaml and three Einsums, two files each: $(ls tl)"
$PY - tl <<'PYEOF' || fail "exported mappings"
import glob, re, sys, yaml
arch = yaml.safe_load(open(sys.argv[1] + "/arch.yaml"))["arch"]
names = [l["name"] for l in arch["storage"]]
assert names == ["Registers", "GlobalBuffer", "DRAM"], names
assert arch["storage"][2]["technology"] == "DRAM"
assert arch["storage"][1]["entries"] == 32 * 2**20 // 2, arch["storage"][1]
for p in sorted(glob.glob(sys.argv[1] + "/*.problem.yaml")):
    inst = yaml.safe_load(open(p))["problem"]["instance"]
    m = yaml.safe_load(open(p.replace("problem", "mapping")))["mapping"]
    assert sorted(d["target"] for d in m) == sorted(names), (p, m)
    prod = {d: 0 for d in inst}
    for d in reversed(m):  # outermost level first
        assert isinstance(d["permutation"], str), (p, d)
        assert sorted(d["permutation"]) == sorted(inst), (p, d)
        f = dict(re.findall(r"([A-Z])=(\d+(?:,\d+)?)", d["factors"]))
        assert sorted(f) == sorted(inst), (p, d)
        for k, v in f.items():
            end, _, last = v.partition(",")
            prod[k] = prod[k] * int(end) + int(last or end) - 1
    for k, n in inst.items():
        assert prod[k] + 1 == n, (p, k, prod[k] + 1, n)
PYEOF
"$M" classify tl/01_O.problem.yaml >/dev/null 2>err ||
  fail "an exported problem loads back: $(cat err)"
grep -q "^# an offset of -3 in an index is dropped" tl/01_O.problem.yaml ||
  fail "the dropped offset is said"

# The shipped translations of AccelForge's Transformer layers, priced:
# their operations are the layers' multiply-accumulates (4MD² + 2M²HE +
# 2MDC for GPT-3 6.7B; GQA's smaller K and V, a GLU and its elementwise
# product for Llama 3 8B; one token against 2048 cached in decode).
for x in gpt3_6.7b_prefill:446676598784 llama3_8b_prefill:481065697280 \
  llama3_8b_decode:234895360; do
  name=${x%%:*}
  "$M" eval "$ROOT/specs/peers/$name.yaml" --json >"$name.json" 2>err ||
    fail "eval $name: $(cat err)"
  $PY -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]
assert t["ops"] == float(sys.argv[2]) and t["latency_s"] > 0, t' \
    "$name.json" "${x#*:}" || fail "$name: ops"
done

[ "$fails" -eq 0 ]
