#!/bin/sh
# Recurrences are never cut, and every byte read across groups is charged
# (issue 33), end to end: a plan file that cuts RetNet's recurrence is
# refused with the file, the group and the tensor; every design `eval`
# prices (and the search's best) on the cascades with a recurrence of
# several Einsums, at small sizes, writes off chip every tensor that
# another group reads and reads it back there, per tensor in `eval
# --json`'s DRAM bytes. (test_recurrence.c checks the same on every
# cascade and plan through the library.)
set -u
. "$(dirname "$0")/lib/harness.sh" # runs in $tmp: refused writes out, err
PY=/usr/bin/python3

# RetNet planned as [Q K V SD | KV S O Y]: SD reads S[i-1], which the
# second group produces.
cat >"$tmp/cut.json" <<'EOF'
{"strategy": "any", "groups": [["Q", "K", "V", "SD"], ["KV", "S", "O", "Y"]]}
EOF
refused "$tmp/cut.json: error: this plan cannot run: SD (group 1) reads S of an earlier step, which group 2 produces later: it cuts the recurrence of SD and S" \
  "$M" eval "$ROOT/tests/specs/good/retnet.yaml" --plan "$tmp/cut.json"
# The same groups with SD in S's group run, SD and S on chip.
cat >"$tmp/whole.json" <<'EOF'
{"strategy": "any", "groups": [["Q", "K", "V"], ["SD", "KV", "S", "O", "Y"]]}
EOF
"$M" eval "$ROOT/tests/specs/good/retnet.yaml" --plan "$tmp/whole.json" --json \
  >"$tmp/w.json" || fail "the whole recurrence's plan: exit $?"
$PY -c 'import json, sys
p = json.load(open(sys.argv[1]))["plan"]
assert "SD" not in p["offchip"] and "S" not in p["offchip"], p["offchip"]' \
  "$tmp/w.json" || fail "SD or S off chip in $(cat "$tmp/w.json")"

# Every design, and the search: what one group reads of another's is
# written and read back, per tensor. Small sizes: a second in all.
small() {
  case $1 in
  *retnet*) echo "--set B=2 --set I=8 --set D=8 --set H=2 --set E=4 --set F=4" ;;
  *gated_deltanet*) echo "--set B=2 --set I=8 --set D=8 --set H=2 --set E=4 --set F=4" ;;
  *mamba1*) echo "--set B=2 --set I=8 --set d_model=8 --set d_inner=16 --set dt_rank=2 --set d_state=4" ;;
  *fusemax_1pass*) echo "--set B=2 --set H=2 --set E=4 --set F=4 --set M1=4 --set M0=4 --set P=4" ;;
  esac
}
designs=$(choices eval --design mamba1)
[ -n "$designs" ] || fail "no designs listed"
n=0
for spec in "$ROOT/tests/specs/good/retnet.yaml" \
  "$ROOT/specs/gated_deltanet.yaml" "$ROOT/specs/mamba1.yaml" \
  "$ROOT/specs/fusemax_1pass.yaml"; do
  "$M" classify "$spec" $(small "$spec") --json >"$tmp/c.json" ||
    fail "classify $spec: exit $?"
  for d in $designs; do
    [ "$d" = ideal ] && continue # a bound: no intermediate moves
    "$M" eval "$spec" $(small "$spec") --design "$d" --json >"$tmp/e.json" ||
      { fail "eval $spec --design $d: exit $?"; continue; }
    $PY - "$tmp/c.json" "$tmp/e.json" <<'PYEOF' || fail "$spec $d"
import json, sys
edges = json.load(open(sys.argv[1]))["edges"]
e = json.load(open(sys.argv[2]))
groups = e["plan"]["groups"]
group = {x: g for g, members in enumerate(groups) for x in members}
dram = {}  # (group, tensor) -> [read, write] bytes
for ein in e["einsums"]:
    for lv in ein["levels"]:
        if lv["level"] != "DRAM":
            continue
        for t, b in lv.get("tensors", {}).items():
            k = (group[ein["einsum"]], t)
            r = dram.setdefault(k, [0.0, 0.0])
            r[0] += b["read_bytes"]
            r[1] += b["write_bytes"]
for x in edges:
    gp, gq = group[x["producer"]], group[x["consumer"]]
    if gp == gq:
        continue
    t = x["tensor"]
    assert gp < gq, (x, "read before it is produced")
    assert dram.get((gp, t), [0, 0])[1] > 0, (t, "not written by group", gp)
    assert dram.get((gq, t), [0, 0])[0] > 0, (t, "not read by group", gq)
PYEOF
    n=$((n + 1))
  done
done
[ "$n" -ge 32 ] || fail "$n evaluations, expected 4 cascades x 8 designs"

# The finding: Geens-like on Gated DeltaNet fuses the whole recurrence
# (KS, U, S) with its read-out O, so U and S never leave the chip.
"$M" eval gated_deltanet --arch eyeriss --design geens --json >"$tmp/g.json" ||
  fail "geens: exit $?"
$PY -c 'import json, sys
e = json.load(open(sys.argv[1]))
assert ["KS", "U", "S", "O"] in e["plan"]["groups"], e["plan"]["groups"]
assert "U" not in e["plan"]["offchip"] and "S" not in e["plan"]["offchip"]' \
  "$tmp/g.json" || fail "geens region: $(head -c 300 "$tmp/g.json")"

finish recurrence.sh
