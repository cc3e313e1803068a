#!/bin/sh
# Bounded work (issue 34): `search --budget Ts` bounds the whole search's
# time and says where it stopped; a long search prints progress with an
# estimate; a spec of 40 000 ranks loads in linear time; a plan file with
# two plans of one label is refused; every problem `export timeloop`
# writes loads back.
set -u
. tests/e2e/lib/harness.sh

# 2000 chained matrix products: the exact search takes over a minute.
python3 "$ROOT/tests/e2e/lib/chain.py" 2000 1024 chain.yaml
python3 - <<'EOF'
with open("ranks.yaml", "w") as f:
    f.write("shape: {" + ", ".join("R%d: 2" % i for i in range(40000)) + "}\n")
    f.write("einsum:\n  declaration:\n")
    for i in range(40000):
        f.write("    T%d: [R%d]\n" % (i, i))
    f.write("    Z: [R0]\n  expressions:\n    - Z[r0] = T0[r0]\n")
EOF
start=$(date +%s)
"$M" search chain.yaml --budget 4s --json >s.json 2>err ||
  fail "search --budget 4s: $(cat err)"
took=$(($(date +%s) - start))
[ "$took" -le 20 ] || fail "search --budget 4s took $took s"
python3 -c 'import json,sys; s=json.load(open("s.json"))["space"]
sys.exit(0 if s["stopped_at_time_limit"] is True else 1)' ||
  fail "search --budget 4s: not stopped_at_time_limit"
grep -q "^mambalaya search: .* in [0-9]* s" err ||
  fail "no progress line on a long search: $(cat err)"
"$M" search chain.yaml --budget 2s 2>/dev/null |
  grep -q "stopped at the time limit" || fail "the text says no time limit"
refused "--budget expects a count of groups (1 to 1e9) or seconds (30s), got '0s'" \
  "$M" search mamba1 --budget 0s
refused "got '1.5'" "$M" search mamba1 --budget 1.5
"$M" search mamba1 --budget 10 --json | python3 -c '
import json, sys
s = json.load(sys.stdin)["space"]
sys.exit(0 if s["stopped_at_budget"] and not s["stopped_at_time_limit"] else 1)' ||
  fail "--budget 10 is a count of groups"

# What a budget leaves unpriced, said: 10 chained products, --budget 1
# prices the group ending at node 1, then each node alone, so of the
# 10 * 11 / 2 = 55 candidate groups 10 * 9 / 2 = 45 are not priced; the
# 16 named-design plans of so short a cascade all are.
python3 "$ROOT/tests/e2e/lib/chain.py" 10 64 chain10.yaml
"$M" search chain10.yaml --budget 1 --json | python3 -c '
import json, sys
s = json.load(sys.stdin)["space"]
got = (s["groups_skipped"], s["named_plans_skipped"], s["named_plans_priced"])
sys.exit(0 if got == (45, 0, 16) else "got %s" % (got,))' ||
  fail "--budget 1 on 10 products: what was not priced"
"$M" search chain10.yaml --budget 1 |
  grep -q "not priced: 45 candidate groups, 0 named-design plans)" ||
  fail "--budget 1: the text does not say what was not priced"

# 40 000 ranks in 1.2 MB, on one line of flow mapping: linear (was 41 s).
start=$(date +%s)
"$M" classify ranks.yaml >/dev/null || fail "classify 40 000 ranks"
took=$(($(date +%s) - start))
[ "$took" -le 5 ] || fail "40 000 ranks took $took s to load"

# Two plans of one label: refused, never the first in silence.
"$M" fuse mamba1 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
d["plans"].append(d["plans"][-1])
json.dump(d, open("two.json", "w"))'
refused "two.json: error: holds two plans labelled 'full' (plans 5 and 6): keep one" \
  "$M" eval mamba1 --plan two.json --strategy full

# export timeloop: a recurrence (S reads S[i-1]) and a constant index
# (S[b, I-1, d]) export problems that load back.
"$M" export timeloop "$ROOT/tests/specs/good/read_patterns.yaml" --out tl \
  >/dev/null 2>&1 || fail "export read_patterns"
for p in tl/*.problem.yaml; do
  "$M" classify "$p" >/dev/null 2>err || fail "$p does not load: $(cat err)"
done
grep -q "S is read as well as written: its one data space is the read-write" \
  tl/01_S.problem.yaml || fail "the recurrence's note"
[ "$(grep -c "name: S$" tl/01_S.problem.yaml)" -eq 2 ] ||
  fail "S is one data space (and the problem's name)"

# An Einsum written over several lines (found by fuzz_export in CI) is
# commented line by line in its problem and its mapping: both load back.
cat >multi.yaml <<'EOF'
shape: {B: 2, I: 4, D: 3}
einsum:
  declaration: {X: [B, I, D], S: [B, I]}
  expressions:
    - "S[b,i]

       = X[b,i,d] :: sum(d)"
EOF
"$M" export timeloop multi.yaml --out ml >/dev/null 2>err ||
  fail "export of a multi-line Einsum: $(cat err)"
"$M" classify ml/01_S.problem.yaml >/dev/null 2>err ||
  fail "a multi-line Einsum's problem does not load: $(cat err)"
python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' \
  ml/01_S.mapping.yaml 2>err || fail "its mapping is not YAML: $(cat err)"

# Two variables that differ in case only (h, H: found by fuzz_export in
# CI) are two dimensions with two names.
cat >case.yaml <<'EOF'
shape: {B: 2, H: 3, L: 4}
einsum:
  declaration: {A: [B, H, L], Z: [B, H, H]}
  expressions:
    - Z[b,H,h] = A[b,h,L-1]
EOF
"$M" export timeloop case.yaml --out cs >/dev/null 2>err ||
  fail "export with h and H: $(cat err)"
"$M" classify cs/01_Z.problem.yaml >/dev/null 2>err ||
  fail "h and H's problem does not load: $(cat err)"

# A variable only a dropped second read has (found by fuzz_export in CI)
# is no dimension: the problem loads back, and says so.
cat >twice.yaml <<'EOF'
shape: {B: 2, I: 4, D: 3, H: 4}
einsum:
  declaration: {X: [B, I, D], DX: [B, I, D], W: [H], V: [H]}
  expressions:
    - DX[b,i,d] = X[b,i,d] - X[b,h,d]
    - V[h] = W[h]
EOF
"$M" export timeloop twice.yaml --out tw >/dev/null 2>err ||
  fail "export of a read twice: $(cat err)"
"$M" classify tw/01_DX.problem.yaml >/dev/null 2>err ||
  fail "a read twice's problem does not load: $(cat err)"
grep -q "h indexes no data space kept" tw/01_DX.problem.yaml ||
  fail "no note for the dropped dimension"

# A Timeloop problem of one input that sums (exported from QN2[r,i,h] =
# QS[b,i,h,e] * QS[b,i,h,e], found by fuzz_export) loads: the sum is said.
cat >one.yaml <<'EOF'
problem:
  shape:
    name: QN2
    dimensions: [R, B, I]
    data-spaces:
      - name: QS
        projection: [[[B]], [[I]]]
      - name: QN2
        projection: [[[R]], [[I]]]
        read-write: True
  instance: {R: 2, B: 2, I: 4}
EOF
"$M" import timeloop one.yaml 2>/dev/null |
  grep -q '"QN2\[r, i\] = QS\[b, i\] :: sum(b)"' ||
  fail "a one-input Timeloop problem: $("$M" import timeloop one.yaml 2>&1 | tail -3)"

finish bounded
