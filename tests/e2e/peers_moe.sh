#!/bin/sh
# AccelForge's mixture-of-experts scatter and gather (docs/compat.md):
# tests/specs/peers/accelforge/moe.yaml, written as AccelForge's examples
# write their MoE feedforward, loads as the even split it stands for.
# Hand-computed, with G = 16, C = 8, J = 16 and a 2-byte word:
#  - the experts' multiply-accumulates are those of the X*XT slots they
#    receive, S*(2GC + CJ), never every token through every expert;
#  - the scatter reads each token once (M*G words) and writes the slots
#    (S*G); the gather reads the slots (S*J) and writes the tokens (M*J);
#  - the additions the model counts for the two copies' sums, as said in
#    the notes (the scatter's K per slot, the gather's K*U per token);
#  - the executor's values are the round robin's: slot s holds token
#    s mod M, and token m sums the slots s < X*XT with s mod M = m; the
#    bytes it counts off chip are the model's.
set -u
. tests/e2e/lib/harness.sh
PY=python3
W=$ROOT/tests/specs/peers/accelforge/moe.yaml

# The translation: default sizes M=8, 4 experts of 4 slots, top-2.
"$M" import accelforge "$W" --out moe.yaml 2>notes || fail "import: $(cat notes)"
grep -q '"Z_per_expert\[b, x, xt, g\] = Z\[b, XT\*x + xt - M\*route, g\] :: sum(route)"' moe.yaml ||
  fail "scatter: $(grep Z_per_expert moe.yaml)"
grep -q '"FFB\[b, m, j\] = FFD\[b, 2\*route + xoff, m - XT\*xoff, j\] :: sum(xoff, route)"' moe.yaml ||
  fail "gather: $(grep 'FFB\[' moe.yaml)"
grep -q '^  ROUTE: 2 ' moe.yaml || fail "rank ROUTE: $(grep ROUTE moe.yaml)"
grep -q '^  XOFF: 2 ' moe.yaml || fail "rank XOFF: $(grep XOFF moe.yaml)"
grep -q "^# note: Z_per_expert: the MoE scatter: 8 tokens (m) split evenly, round robin, over 4 experts (x) of 4 slots (xt)" moe.yaml ||
  fail "scatter note: $(grep note moe.yaml)"
grep -q "^# note: FFB: the MoE gather: token m sums its 2 copies" moe.yaml ||
  fail "gather note: $(grep note moe.yaml)"

# The spec import writes is the cascade the template loads as.
"$M" classify "$W" --json >direct.json 2>/dev/null || fail "classify direct"
"$M" classify moe.yaml --json >imported.json 2>/dev/null ||
  fail "classify imported"
$PY - direct.json imported.json <<'PYEOF' || fail "import and direct load differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
key = lambda d: [(e["producer"], e["consumer"], e["class"]) for e in d["edges"]]
assert key(a) == key(b) and len(key(a)) == 6, (key(a), key(b))
PYEOF

# Priced unfused, so that each Einsum's DRAM traffic is its own.
# Cases: NAME SETTINGS M S K ADDS_SCATTER ADDS_GATHER
#   top2: 8 tokens, X=4, XT=4: S=16, K=2, gather tries U=2 experts
#   xt1:  4 tokens, 8 experts: X=8, XT=1 (the gather exact: K*M*J)
#   top1: top-1, X=4, XT=2: K=1, a plain copy; the gather tries X=4
#   pad:  5 tokens: X=4, XT=3, 12 slots = 2 copies + 2 padding: K=3, U=3
#   dec:  one token (decode): X=2, XT=1
for c in "top2||8|16|2|512|512" \
  "xt1|--set N_TOKENS=4 --set N_EXPERTS=8|4|8|2|256|128" \
  "top1|--set TOP_K=1|8|8|1|0|512" \
  "pad|--set N_TOKENS=5|5|12|3|576|720" \
  "dec|--set N_TOKENS=1|1|2|2|64|32"; do
  IFS='|' read -r name sets m s k addsc addga <<EOC
$c
EOC
  # shellcheck disable=SC2086
  "$M" eval "$W" $sets --design unfused --json >"$name.json" 2>err ||
    fail "eval $name: $(cat err)"
  $PY - "$name.json" "$m" "$s" "$k" "$addsc" "$addga" <<'PYEOF' ||
import json, sys
d = json.load(open(sys.argv[1]))
m, s, k, addsc, addga = (float(x) for x in sys.argv[2:])
G, C, J, word = 16, 8, 16, 2
E = {e["einsum"]: e for e in d["einsums"]}
macc = sum(e["ops"].get("macc", 0) for e in d["einsums"])
assert macc == s * (2 * G * C + C * J), (macc, s)
assert E["FFH"]["ops"] == {"mul": s * C}, E["FFH"]["ops"]
sc, ga = E["Z_per_expert"], E["FFB"]
assert sc["ops"].get("add", 0) == addsc, sc["ops"]
assert ga["ops"].get("add", 0) == addga, ga["ops"]
t = sc["levels"][0]["tensors"]
assert t["Z"]["read_bytes"] == m * G * word, t
assert t["Z_per_expert"]["write_bytes"] == s * G * word, t
assert sc["dram_read_bytes"] + sc["dram_write_bytes"] == (m + s) * G * word
t = ga["levels"][0]["tensors"]
assert t["FFD"]["read_bytes"] == s * J * word, t
assert t["FFB"]["write_bytes"] == m * J * word, t
assert d["totals"]["ops"] == macc + s * C + addsc + addga, d["totals"]
PYEOF
    fail "$name: counts"

  # The values: the executor (fused and the interpreter) against the
  # round robin, computed here from its inputs.
  # shellcheck disable=SC2086
  "$M" exec "$W" $sets --random 7 --strategy full --check --json \
    --keep Z,Z_per_expert,FFD,FFB --out "$name.st" >"$name.exec" 2>err ||
    fail "exec $name: $(cat err)"
  $PY -c 'import json, sys; t = json.load(open(sys.argv[1]))["traffic"]
assert t["read_bytes"] == t["model_read_bytes"] > 0, t
assert t["write_bytes"] == t["model_write_bytes"] > 0, t' "$name.exec" ||
    fail "$name: the executor counts the bytes the model prices"
  $PY - "$name.st" <<'PYEOF' || fail "$name: values"
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h, d = json.loads(b[8:8 + n]), b[8 + n:]
T = {}
for k, v in h.items():
    if k != "__metadata__":
        lo, hi = v["data_offsets"]
        T[k] = (struct.unpack("<%df" % ((hi - lo) // 4), d[lo:hi]), v["shape"])
(Z, (_, M, G)), (ZE, (_, X, XT, _)) = T["Z"], T["Z_per_expert"]
(FFD, (_, _, _, J)), (FFB, _) = T["FFD"], T["FFB"]
S = X * XT
for s in range(S):
    for g in range(G):
        assert ZE[s * G + g] == Z[(s % M) * G + g], ("slot", s, g)
for m in range(M):
    for j in range(J):
        ref = sum(FFD[s * J + j] for s in range(m, S, M))
        assert abs(FFB[m * J + j] - ref) <= 1e-5 * max(1, abs(ref)), (m, j)
PYEOF
done

# Slots that are no whole number of copies (AccelForge's ceil): said.
"$M" classify "$W" --set N_TOKENS=5 >/dev/null 2>notes || fail "pad: $(cat notes)"
grep -q "note: Z_per_expert: 12 slots are no whole number of copies of 5 tokens: the last 2 slots hold a copy 3 of tokens 0 to 1" notes ||
  fail "padding note: $(cat notes)"

# A scatter must hold every token; a gather without a scatter to its
# ranks stays an error (tests/specs/bad/112 and here, inline).
cat >short.yaml <<'EOY'
workload:
  rank_sizes: {B: 1, M: 8, X: 2, XT: 3, G: 4}
  einsums:
  - einsum: "Z_per_expert[b, x, xt, g] = Z[b, m, g]"
    is_copy_operation: True
EOY
refused "short.yaml:4:5: error: Z_per_expert: a scatter of 8 tokens (m) to 2 experts (x) of 3 slots (xt) leaves tokens out" \
  "$M" classify short.yaml
refused "FFB is a copy, but its output lacks x, xt of its input FFD: a copy does not reduce.*a gather from experts is translated after a scatter to them" \
  "$M" classify "$ROOT/tests/specs/bad/112_accelforge_copy_reduces.yaml"

finish peers_moe
