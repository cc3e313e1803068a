#!/bin/sh
# The eval command end to end: every shipped spec on every shipped
# architecture under every design, prefill and (where the spec has a
# sequence rank) decode, exits 0 with JSON
# whose every Einsum fits or whose group says what it spilled; a plan
# written by `fuse --stitch global --json` prices with the off-chip figure
# fuse printed; and the decode phase and model presets fail clearly.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=python3

n=0
mkdir "$tmp/all"
# Every model design (the table's: best is the search's, in best.sh).
designs=$(choices eval --design mamba1 | sed 's/ best$//')
[ "$(echo "$designs" | wc -w)" -ge 9 ] || fail "designs: '$designs'"
for spec in specs/*.yaml; do
  # Decode where the spec has a sequence rank (a CNN layer has none, and
  # says so).
  phases="prefill decode"
  if ! "$MAMBALAYA" eval "$spec" --phase decode >/dev/null 2>"$tmp/err"; then
    grep -q "has no sequence rank" "$tmp/err" ||
      fail "eval $spec --phase decode: $(cat "$tmp/err")"
    phases=prefill
  fi
  for arch in archs/*.yaml; do
    for d in $designs; do
      for ph in $phases; do
        n=$((n + 1))
        if ! "$MAMBALAYA" eval "$spec" --arch "$arch" --design "$d" \
             --phase "$ph" --json >"$tmp/all/$n.json" 2>"$tmp/err"; then
          fail "eval $spec --arch $arch --design $d --phase $ph: $(cat "$tmp/err")"
          rm -f "$tmp/all/$n.json"
        fi
        echo "$n $spec $arch $d $ph" >>"$tmp/all/index"
      done
    done
  done
done
$PY - "$tmp/all" <<'PYEOF' || fail "eval JSON"
import json, math, os, sys
bad = 0
for line in open(os.path.join(sys.argv[1], "index")):
    n, spec, arch, design, phase = line.split()
    path = os.path.join(sys.argv[1], n + ".json")
    if not os.path.exists(path):
        continue
    try:
        d = json.load(open(path))
        t = d["totals"]
        for k in ("latency_s", "dram_read_bytes", "energy_j"):
            assert math.isfinite(t[k]) and t[k] > 0, (k, t[k])
        achieved = d["accounting"] == "achieved" and design != "ideal"
        for g in d["groups"]:
            assert isinstance(g["spilled"], list)
            if achieved:
                assert g["held_elements"] <= g["budget_elements"] * 1.000001
        for e in d["einsums"]:
            if achieved:
                assert e["fits"] is True, e["einsum"]
                assert e["footprint_elements"] <= e["capacity_elements"] * 1.000001
    except Exception as ex:
        print("FAIL:", spec, arch, design, phase, repr(ex))
        bad += 1
sys.exit(1 if bad else 0)
PYEOF
[ "$n" -ge 96 ] || fail "only $n evaluations checked"

# A plan from the exact stitcher, priced as written: the same groups, and
# eval's ideal inter-Einsum traffic is fuse's off-chip figure (2-byte words).
"$MAMBALAYA" fuse mamba2 --strategy ri+rsb+rsp --stitch global --json \
  >"$tmp/plan.json" || fail "fuse --stitch global exited $?"
"$MAMBALAYA" eval mamba2 --plan "$tmp/plan.json" --json >"$tmp/pe.json" \
  2>"$tmp/err" || fail "eval --plan exited $?: $(cat "$tmp/err")"
$PY - "$tmp/plan.json" "$tmp/pe.json" <<'PYEOF' || fail "eval --plan: not the plan"
import json, sys
p = json.load(open(sys.argv[1]))
e = json.load(open(sys.argv[2]))
assert [g["einsums"] for g in e["groups"]] == p["groups"], "groups differ"
assert e["totals"]["ideal_inter_bytes"] == 2 * p["offchip_elements"], \
    (e["totals"]["ideal_inter_bytes"], p["offchip_elements"])
assert e["plan"]["groups"] == p["groups"]
PYEOF

# A plan that cannot run (a group reading what a later one produces), and
# one naming an Einsum the spec lacks: exit 2, the file named.
$PY - "$tmp/plan.json" "$tmp/bad1.json" "$tmp/bad2.json" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1]))
q = dict(p, groups=list(reversed(p["groups"])))
json.dump(q, open(sys.argv[2], "w"))
r = dict(p, groups=[g + (["NOPE"] if i == 0 else []) for i, g in enumerate(p["groups"])])
json.dump(r, open(sys.argv[3], "w"))
PYEOF
for b in bad1 bad2; do
  "$MAMBALAYA" eval mamba2 --plan "$tmp/$b.json" >/dev/null 2>"$tmp/err"
  st=$?
  [ "$st" -eq 2 ] || fail "eval --plan $b exited $st, expected 2"
  grep -q "$b.json" "$tmp/err" || fail "eval --plan $b: $(cat "$tmp/err")"
done
grep -q "NOPE" "$tmp/err" || fail "bad2: the unknown name is not named"

# Decode: the spec's sequence rank (M for the transformer), a conflicting
# --set, and a spec without one.
"$MAMBALAYA" eval transformer --phase decode --json >"$tmp/t.json" ||
  fail "transformer decode exited $?"
"$MAMBALAYA" eval mamba1 --phase decode --set I=4 >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "--phase decode --set I=4 did not exit 2"
grep -q "sequence rank I" "$tmp/err" || fail "conflict: $(cat "$tmp/err")"
cat >"$tmp/nos.yaml" <<'EOF'
shape: {M: 4, K: 4}
einsum:
  declaration: {A: [M, K], B: [M]}
  expressions:
    - B[m] = A[m,k]
EOF
"$MAMBALAYA" eval "$tmp/nos.yaml" --phase decode >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "decode without a sequence rank did not exit 2"
grep -q "sequence" "$tmp/err" || fail "no sequence rank: $(cat "$tmp/err")"
sed 's/^shape:/sequence: M\nshape:/' "$tmp/nos.yaml" >"$tmp/seq.yaml"
"$MAMBALAYA" eval "$tmp/seq.yaml" --phase decode --json >"$tmp/s.json" ||
  fail "decode with sequence: M exited $?"

# A Mamba-2 preset on the Mamba-1 cascade: a message that says so.
"$MAMBALAYA" eval mamba1 --model mamba2-370m >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "mamba2 preset on mamba1 did not exit 2"
grep -q "Mamba-1" "$tmp/err" && grep -q "Mamba-2" "$tmp/err" ||
  fail "preset mismatch: $(cat "$tmp/err")"

# An architecture none of whose units can add names the file, the unit
# and the Einsum.
cat >"$tmp/noadd.yaml" <<'EOF'
architecture:
  name: noadd
  clock: 1 GHz
  word: 2 B
  memory:
    - {name: DRAM, bandwidth: 100 GB/s, read_energy: 1 pJ/B, write_energy: 1 pJ/B}
    - {name: G, capacity: 8 MiB, read_energy: 1 pJ/B, write_energy: 1 pJ/B}
  compute:
    - {name: mma, role: matrix, shape: [8, 8], ops: {macc: 1}}
    - {name: vec, role: vector, pes: 16, ops: {macc: 1, mul: 1}}
  energy: {macc: 1 pJ, mul: 1 pJ}
EOF
"$MAMBALAYA" eval mamba1 --arch "$tmp/noadd.yaml" --design ri >/dev/null \
  2>"$tmp/err"
[ $? -eq 2 ] || fail "a unit that cannot add did not exit 2"
grep -q "noadd.yaml:.*unit .* cannot run the add operations of Einsum LEX" \
  "$tmp/err" || fail "unit error: $(cat "$tmp/err")"

# --design best --objective energy: the search's least-energy schedule,
# no more energy than the least-latency one, named in every output;
# --objective without --design best is refused.
"$MAMBALAYA" eval mamba1 --design best --json >"$tmp/bl.json" &&
  "$MAMBALAYA" eval mamba1 --design best --objective energy --json \
    >"$tmp/be.json" || fail "eval --design best --objective energy failed"
python3 - "$tmp/bl.json" "$tmp/be.json" <<'EOF' || fail "best by energy"
import json, sys
lat, en = (json.load(open(p)) for p in sys.argv[1:])
e, l = en["totals"]["energy_j"], lat["totals"]["energy_j"]
assert en["search"]["objective"] == "energy", en["search"]
assert lat["search"]["objective"] == "latency", lat["search"]
assert abs(en["search"]["found"] - e) <= 1e-9 * e, (en["search"], e)
assert e <= l * (1 + 1e-12), (e, l)
assert en["search"]["lower_bound"] <= e
EOF
"$MAMBALAYA" eval mamba1 --design best --objective traffic --csv |
  head -1 | grep -q ',best_from,ideal_dram_bytes,gap_to_ideal$' ||
  fail "eval --objective traffic --csv header"
"$MAMBALAYA" eval mamba1 --objective energy >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "add --design best" "$tmp/err" ||
  fail "--objective without --design best: $(cat "$tmp/err")"

echo "eval: $n evaluations, $fails failures"
[ "$fails" -eq 0 ]
