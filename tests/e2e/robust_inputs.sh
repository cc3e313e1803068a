#!/bin/sh
# Issue 18's reproducers, on the newer surfaces: plan files, studies and
# sweep outputs, the tokenizer, diff and exec. Each is refused with a
# clear error and exit 2 (or fails with exit 1 where docs/io.md says so),
# nothing is written outside --out, no input is overwritten, and under
# ASan+UBSan no report (a report changes the exit status).
set -u
. tests/e2e/lib/harness.sh

# ---- plan files: one reader for eval and exec ----
"$M" fuse mamba1 --strategy ri --json >ri.json || fail "fuse ri"
"$M" fuse mamba1 --strategy full --json >full.json || fail "fuse full"
"$M" fuse mamba1 --json >all.json || fail "fuse all"
python3 - <<'PY'
import json
p = json.load(open("ri.json"))
p["groups"] = [[]] * 14 + p["groups"]
json.dump(p, open("empty.json", "w"))
f = json.load(open("full.json"))
for label in ["unfused", "ri", "ri+rsb", "ri+rsb+rsp", "any", "fast"]:
    f["strategy"] = label
    json.dump(f, open("as_%s.json" % label, "w"))
PY
refused "empty.json: error: group 1 is empty" "$M" eval mamba1 --plan empty.json
refused "empty.json: error: group 1 is empty" \
  "$M" exec mamba1 --set B=1 --set I=4 --random 1 --plan empty.json
refused "holds 5 plans (unfused, ri, ri+rsb, ri+rsb+rsp, full): pick one" \
  "$M" eval mamba1 --plan all.json
"$M" eval mamba1 --plan all.json --strategy ri >picked.txt ||
  fail "eval --plan all.json --strategy ri"
"$M" eval mamba1 --plan ri.json >ri.txt || fail "eval --plan ri.json"
cmp -s picked.txt ri.txt || fail "--strategy ri picks the ri plan"
refused "edge LEX -> PX (through LEX), of class RI, which strategy 'unfused'" \
  "$M" eval mamba1 --plan as_unfused.json
refused "edge NUM -> MEX (through NUM), of class RSb, which strategy 'ri' " \
  "$M" eval mamba1 --plan as_ri.json
refused "edge SQEX -> NEX (through SQEX), of class RSp, which strategy 'ri+rsb' " \
  "$M" eval mamba1 --plan as_ri+rsb.json
refused "edge TTX -> TX (through TTX), of class RD, which strategy 'ri+rsb+rsp' " \
  "$M" eval mamba1 --plan as_ri+rsb+rsp.json
refused "unknown strategy 'fast'" "$M" eval mamba1 --plan as_fast.json
"$M" eval mamba1 --plan as_any.json | tail -n 1 >any.txt || fail "label any"
"$M" eval mamba1 --plan full.json | tail -n 1 >full.txt || fail "label full"
cmp -s any.txt full.txt || fail "any and full price one plan alike"

# ---- sweep: inputs inside --out, the output path, sizes ----
mkdir o
cp "$ROOT/specs/mamba1.yaml" o/pareto.svg
cp "$ROOT/archs/mambalaya.yaml" o/points.csv
cp o/pareto.svg spec.orig
cp o/points.csv arch.orig
cat >s.yaml <<'Y'
study:
  name: s
  cascades: [{spec: o/pareto.svg, models: [mamba-370m]}]
  architectures: [o/points.csv]
  designs: [unfused]
  phases: [prefill]
Y
refused "refusing to write o/points.csv: it is the input o/points.csv" \
  "$M" sweep s.yaml --out o
cmp -s o/pareto.svg spec.orig && cmp -s o/points.csv arch.orig ||
  fail "sweep overwrote its inputs"
[ -e o/sweep.json ] && fail "sweep wrote beside a refused input"
sed 's|architectures: \[o/points.csv\]|architectures: [mambalaya]|' s.yaml >s2.yaml
refused "refusing to write o/pareto.svg: it is the input o/pareto.svg" \
  "$M" sweep s2.yaml --out o
refused "--out" "$M" sweep s.yaml --out ''
[ -e points.csv ] && fail "sweep --out '' wrote here"
long=$(python3 -c 'print("d" * 200 + "/" + "e/" * 2000)')
refused "the output directory (--out) is too long" "$M" sweep s.yaml --out "$long"
refused "exists and is not a directory" "$M" sweep s.yaml --out s.yaml
cat >overflow.yaml <<'Y'
study:
  name: overflow
  cascades: [{spec: mamba1, models: [mamba-370m]}]
  settings:
    B: {from: 1, to: 8192, step: 1}
    I: {from: 1, to: 8192, step: 1}
    d_model: {from: 1, to: 8192, step: 1}
    d_inner: {from: 1, to: 8192, step: 1}
    dt_rank: {from: 1, to: 8192, step: 1}
Y
refused "make more than 100000000 combinations" "$M" sweep overflow.yaml
printf "study:\n  name: e\n  cascades: [{spec: mamba1}]\n  parameters: {a: {'': [1]}}\n" >e1.yaml
printf "study:\n  name: e\n  cascades: [{spec: mamba1}]\n  parameters: {a: {'.': [1]}}\n" >e2.yaml
refused "'' is not a parameter path" "$M" sweep e1.yaml
refused "'\.' is not a parameter path" "$M" sweep e2.yaml
printf "study:\n  name: r\n  cascades: [{spec: mamba1}]\n  settings: {B: {from: 1, to: 10001, step: 1}}\n" >r.yaml
refused "a range of more than 10000 values" "$M" sweep r.yaml
printf "study:\n  name: h\n  cascades: [{spec: mamba1}]\n  settings: {B: 0x10}\n" >h.yaml
refused "B must be a plain decimal number (16, 2.5, 1e3: no hex" "$M" sweep h.yaml
printf "study:\n  name: l\n  cascades: [{spec: mamba1}]\n  scenarios: [{name: c, generate: 1, layers: 1e9}]\n" >l.yaml
refused "layers is a count from 1 to 1000000, found '1e9'" "$M" sweep l.yaml
refused "the settings and parameters alone make 1 point: about 16.0 KiB of memory, more than the budget of 1.00 KiB" \
  "$M" sweep s2.yaml --out o2 --max-memory 1024
refused "the study has 1 point: about 24.0 KiB of memory, more than the budget of 20.0 KiB" \
  "$M" sweep s2.yaml --out o2 --max-memory 20KiB
[ -e o2 ] && fail "a refused sweep created its --out"

# ---- tokenizer and tokenize ----
mkdir tk
python3 "$ROOT/tests/tokenizer/bpe_ref.py" make tk >/dev/null 2>&1 ||
  fail "the reference tokenizer"
T=tk/tokenizer.json
refused "/dev/zero: error: cannot read: a character device" \
  "$M" tokenize --tokenizer "$T" --lines /dev/zero
refused "tk: error: cannot read: a directory" "$M" tokenize --tokenizer "$T" --lines tk
printf '{"model":{"type":"BPE","vocab":{"a":1073741822},"merges":[]},"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"}}' >huge.json
refused "the id of 'a' is 1073741822, past what a file of 129 bytes can number" \
  "$M" tokenize --tokenizer huge.json --text a
echo '[4294967296, 1.5, "x"]' >big.ids
echo '[-7, 99999]' >neg.ids
refused "big.ids:1: error: element 1 is not the id of a token" \
  "$M" tokenize --tokenizer "$T" --decode-lines big.ids
refused "neg.ids:1: error: element 1 is not the id of a token" \
  "$M" tokenize --tokenizer "$T" --decode-lines neg.ids
refused "--ids is empty" "$M" tokenize --tokenizer "$T" --ids ''
refused "expected ids of tokens" "$M" tokenize --tokenizer "$T" --ids 1,99999

# ---- diff ----
echo '{"a": 1}' >u1.json
echo '[1, 2]' >u2.json
refused "not a result written with --json" "$M" diff u1.json u2.json
"$M" eval mamba1 --json >e.json || fail "eval --json"
refused "a result of .eval. and one of .fuse. are not comparable" \
  "$M" diff e.json all.json

# ---- exec: NaN is never a match; memory estimated ----
cat >nan.yaml <<'Y'
einsum:
  declaration:
    X: [I]
    Y: [I]
    Z: [I]
  expressions:
    - Y[i] = sqrt(X[i])
    - Z[i] = Y[i] + 1
shape:
  I: 4
Y
"$M" exec nan.yaml --random 1 --range X=-2:-1 --strategy ri --check \
  >nan.out 2>nan.err
[ $? -eq 1 ] || fail "exec --check with NaN on both sides: exit $?"
grep -q "Z holds a NaN" nan.err || fail "exec --check NaN: $(cat nan.err)"
"$M" exec nan.yaml --random 1 --range X=1:2 --strategy ri --check >/dev/null ||
  fail "exec --check without NaN"
refused "this run needs 4.29 PiB of memory" \
  "$M" exec mamba1 --random 1 --set I=100000000

finish robust_inputs
