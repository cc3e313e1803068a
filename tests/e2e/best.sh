#!/bin/sh
# `--design best` wherever a design is taken: `eval --design best` prices
# the schedule `search` finds (the same latency, to the digit, with the
# same options; its gap to ideal in the text, --json and --csv), a study
# may list `best` among its designs (its rows equal `search`'s figures,
# no other design of the study beats them), and bad uses are refused.
. "$(dirname "$0")/lib/harness.sh"
PY=python3
RETNET=$ROOT/tests/specs/good/retnet.yaml

# eval --design best == search, for the same options.
for spec in mamba1 "$RETNET"; do
  for arch in mambalaya h100; do
    for opts in "--phase prefill" "--phase decode" "--pipelined" \
      "--stitch global --reserve-share 0.5"; do
      # shellcheck disable=SC2086
      "$M" search "$spec" --arch "$arch" $opts --json >s.json ||
        fail "search $spec $arch $opts"
      # shellcheck disable=SC2086
      "$M" eval "$spec" --arch "$arch" $opts --design best --json >e.json ||
        fail "eval --design best $spec $arch $opts"
      $PY - <<'PYEOF' || fail "eval --design best vs search: $spec $arch $opts"
import json
s = json.load(open("s.json"))
e = json.load(open("e.json"))
assert e["inputs"]["design"] == "best", e["inputs"]["design"]
assert e["totals"]["latency_s"] == s["found"], (e["totals"]["latency_s"], s["found"])
b = e["search"]
assert b["found"] == s["found"] and b["lower_bound"] == s["lower_bound"], b
assert b["gap"] == s["gap"] and b["from"] == s["from"], (b, s["gap"], s["from"])
assert b["objective"] == "latency" and b["gap"] >= 1, b
assert e["totals"]["energy_j"] == s["schedule"]["totals"]["energy_j"]
PYEOF
    done
  done
done

# The text and the CSV carry the gap (1.096x: the second passes over X and
# LEX its RD pairs' partial products bring, docs/model.md §6-§7).
"$M" eval mamba1 --design best >t.txt || fail "eval --design best (text)"
grep -q "^best (searched): 8.908 ms, a partition found by the search; ideal 8.128 ms; gap to ideal 1.096x" t.txt ||
  fail "eval --design best: the text's line: $(tail -n 1 t.txt)"
"$M" search mamba1 --json >s.json || fail "search mamba1"
"$M" eval mamba1 --design best --csv >e.csv || fail "eval --design best --csv"
$PY - <<'PYEOF' || fail "eval --design best --csv"
import csv, json
s = json.load(open("s.json"))
rows = list(csv.DictReader(open("e.csv", newline="")))
assert len(rows) == 24, len(rows)
for r in rows:
    assert r["best_from"] == "search", r["best_from"]
    assert abs(float(r["ideal_latency_s"]) - s["lower_bound"]) <= 1e-9 * s["lower_bound"], r["ideal_latency_s"]
    assert abs(float(r["gap_to_ideal"]) - s["gap"]) < 1e-9, r["gap_to_ideal"]
end = max(float(r["start_s"]) + float(r["latency_s"]) for r in rows)
assert abs(end - s["found"]) <= 1e-9 * s["found"], (end, s["found"])
PYEOF

refused "unknown design 'bestest' (expected unfused, ideal, marca, geens, flat, ri, ri+rsb, ri+rsb+rsp, full or best)" \
  "$M" eval mamba1 --design bestest
"$M" fuse mamba1 --strategy full --json >p.json || fail "fuse"
refused "--plan gives the plan: drop --design" \
  "$M" eval mamba1 --plan p.json --design best
refused "unknown design 'best'" "$M" eval mamba1 --strategy best

# A study with best: its rows are search's figures, and none of the
# study's designs is faster at the same point.
cat >study.yaml <<'EOF'
study:
  name: with-best
  cascades:
    - {spec: mamba1, models: [mamba-370m]}
    - {spec: retnet.yaml}
  settings: {B: 8}
  architectures: [mambalaya, h100]
  designs: [unfused, marca, ri, full, best]
  stitchers: [greedy, global]
  options: {reserve_share: [0.5, 0.75]}
  phases: [prefill, decode]
  scenarios: [{name: chat, prompt: 256, generate: 16, layers: 2}]
EOF
cp "$RETNET" retnet.yaml
"$M" sweep study.yaml --out sweepout --threads 2 >sweep.txt 2>err ||
  fail "sweep with best: $(cat err)"
for spec in mamba1 retnet.yaml; do
  for arch in mambalaya h100; do
    for ph in prefill decode; do
      model=
      [ "$spec" = mamba1 ] && model="--model mamba-370m"
      # shellcheck disable=SC2086
      "$M" search "$spec" $model --set B=8 --arch "$arch" --phase "$ph" \
        --reserve-share 0.5 --json >"s-$spec-$arch-$ph.json" ||
        fail "search $spec $arch $ph"
    done
  done
done
$PY - <<'PYEOF' || fail "sweep with best"
import csv, json
rows = list(csv.DictReader(open("sweepout/points.csv", newline="")))
assert len(rows) == 2 * 2 * (1 + 1 + 2 + 2 + 1) * 2 * 3, len(rows)
best = [r for r in rows if r["design"] == "best"]
assert len(best) == 2 * 2 * 2 * 3 and all(r["stitch"] == "" for r in best)
assert all(not r["error"] for r in rows), [r["error"] for r in rows if r["error"]]
key = lambda r: (r["spec"], r["architecture"], r["reserve_share"], r["workload"])
for b in best:
    same = [r for r in rows if key(r) == key(b)]
    for r in same:
        assert float(b["latency_s"]) <= float(r["latency_s"]), (b, r)
    if b["reserve_share"] == "0.5" and b["workload"] != "chat":
        s = json.load(open("s-%s-%s-%s.json" % (b["spec"], b["architecture"],
                                                  b["workload"])))
        near = lambda a, b: abs(a - b) <= 1e-9 * abs(b)
        assert near(float(b["latency_s"]), s["found"]), (b["latency_s"], s["found"])
        assert near(float(b["energy_j"]), s["schedule"]["totals"]["energy_j"])
j = json.load(open("sweepout/sweep.json"))
assert sum(p["inputs"]["design"] == "best" for p in j["points"]) == len(best)
PYEOF

cat >bad.yaml <<'EOF'
study:
  name: x
  cascades: [{spec: mamba1}]
  designs: [full, bestest]
EOF
"$M" sweep bad.yaml --out badout >out.txt 2>err && fail "a bad design ran"
grep -q "bad.yaml:4:19: error: unknown design 'bestest' (expected one of unfused, ideal, marca, geens, flat, ri, ri+rsb, ri+rsb+rsp, full or best)" err ||
  fail "sweep: bad design: $(cat err)"
cat >twice.yaml <<'EOF'
study:
  name: x
  cascades: [{spec: mamba1}]
  designs: [best, full, best]
EOF
"$M" sweep twice.yaml --out badout >out.txt 2>err && fail "best twice ran"
grep -q "twice.yaml:4:25: error: design 'best' is given twice" err ||
  fail "sweep: best twice: $(cat err)"
# FuseMax's 1-pass attention on a FuseMax-like machine (no binding:
# section): best, pipelined, keeps the 2D array busy and BQK on chip.
"$M" eval fusemax_1pass --arch "$ROOT/tests/archs/fusemax.yaml" --set M1=4 \
  --design best --pipelined --json >fm.json || fail "eval fusemax best"
python3 - <<'PYEOF' || fail "fusemax_1pass best: 2D utilization or BQK"
import json
d = json.load(open("fm.json"))
busy = sum(e["compute_s"] for e in d["einsums"] if e["unit"] == "array2d")
util = busy / d["totals"]["latency_s"]
assert util >= 0.85, util
bqk = [e for e in d["einsums"] if e["einsum"] == "BQK"][0]
assert bqk["inter_bytes"] == 0, bqk
assert all("BQK" not in str(g["spilled"]) for g in d["groups"]), d["groups"]
assert abs(d["totals"]["latency_s"] - 287.74e-6) < 0.01e-6, d["totals"]
PYEOF
# The fusion level: on the two-level test architecture (an L2 and a small
# GlobalBuffer, the file's fusion level) the SwiGLU MLP fuses in the L2.
# search says so and writes it in the plan; eval --plan prices the plan
# there, at the search's figure; exec --plan takes it; a level that is not
# one is refused at its line; without the field, the file's own level.
TWO=$ROOT/tests/archs/two_level.yaml
SWIGLU=$ROOT/tests/specs/good/swiglu_mlp.yaml
"$M" search "$SWIGLU" --arch "$TWO" --plan-out lv.json --json >s.json ||
  fail "search on two levels"
"$M" search "$SWIGLU" --arch "$TWO" >s.txt || fail "search on two levels"
grep -q "^fusion level: L2 (2 candidate levels tried" s.txt ||
  fail "search: the fusion level line: $(sed -n 3p s.txt)"
# Outputs that say what happened (issue 36): eval --design best names
# the schedule, its groups, label and fusion level beside the file's own;
# search lists each level it refused and the rule; an inner level larger
# than the fusion level draws a note.
"$M" eval "$SWIGLU" --arch "$TWO" --design best >b.txt || fail "eval best text"
[ "$(sed -n 1p b.txt)" = "design best (the schedule the search found for latency): 1 group, labelled full, fusion level L2 (moved from the file's GlobalBuffer)" ] ||
  fail "eval best's first line: $(sed -n 1p b.txt)"
grep -qx "  not a candidate: Registers: memory level 'Registers' is the innermost, where each Einsum's operands meet the PEs: a fusion group keeps what it holds between Einsums in a level above it" s.txt ||
  fail "search: Registers refused: $(sed -n 4p s.txt)"
# L2 of 128 KiB the fusion level, the 256 KiB GlobalBuffer inside it.
awk '/capacity: 64 MiB/ { print "      capacity: 128 KiB"; print "      fusion: true"; next }
  /fusion: true/ { next } { print }' "$TWO" >inner.yaml
"$M" search "$SWIGLU" --arch inner.yaml >si.txt 2>si.err || fail "search inner"
grep -qx "  not a candidate: GlobalBuffer: memory level 'L2' (128 KiB) stages what the fusion level 'GlobalBuffer' (256 KiB) exchanges with off-chip memory: it must hold at least as much, or be the fusion level ('fusion: true')" si.txt ||
  fail "search: GlobalBuffer refused: $(cat si.txt | head -6)"
"$M" eval "$SWIGLU" --arch inner.yaml >/dev/null 2>ei.err || fail "eval inner"
[ "$(cat ei.err)" = "inner.yaml: note: memory level 'GlobalBuffer' (256 KiB) lies inside the fusion level 'L2' (128 KiB) and is larger: a fusion group holds at most 128 KiB between Einsums, and 'GlobalBuffer' cannot be the fusion level while 'L2' stages it (docs/architecture.md)" ] ||
  fail "eval: the inner level's note: $(cat ei.err)"
"$M" eval "$SWIGLU" --arch "$TWO" 2>&1 >/dev/null | grep -q note &&
  fail "a note where no inner level is larger"
"$M" eval "$SWIGLU" --arch "$TWO" --plan lv.json --json >e.json ||
  fail "eval --plan at the L2"
$PY -c 'import json; p = json.load(open("lv.json")); del p["fusion_level"]; json.dump(p, open("old.json", "w"))' ||
  fail "a plan without its level"
"$M" eval "$SWIGLU" --arch "$TWO" --plan old.json --json >o.json ||
  fail "eval --plan without a level"
"$M" eval "$SWIGLU" --arch "$TWO" --design best --json >b.json ||
  fail "eval --design best on two levels"
$PY - <<'PYEOF' || fail "the fusion level found, written and priced"
import json
s, e = json.load(open("s.json")), json.load(open("e.json"))
o, b = json.load(open("o.json")), json.load(open("b.json"))
assert s["fusion_level"] == "L2" and s["space"]["fusion_levels"] == 2, s
assert json.load(open("lv.json"))["fusion_level"] == "L2"
assert abs(s["found"] - 35.02467176e-3) < 1e-12, s["found"]
assert e["totals"]["latency_s"] == s["found"], (e["totals"], s["found"])
assert abs(o["totals"]["latency_s"] - 354.70270568e-3) < 1e-9, o["totals"]
assert b["search"]["fusion_level"] == "L2", b["search"]
assert b["totals"]["latency_s"] == s["found"]
assert s["lower_bound"] <= s["found"]
PYEOF
"$M" exec "$SWIGLU" --set I=16 --random 1 --plan lv.json >x.txt ||
  fail "exec --plan at the L2"
sed 's/"L2"/"Registers"/' lv.json >r.json
line=$(grep -n fusion_level r.json | cut -d: -f1)
refused "r.json:$line:19: error: \"fusion_level\": memory level 'Registers' is the innermost.*(the fusion levels two-level can take: L2, GlobalBuffer)" \
  "$M" eval "$SWIGLU" --arch "$TWO" --plan r.json
refused "lv.json:$line:19: error: \"fusion_level\": .*has no memory level 'L2' (the fusion levels mambalaya can take: GlobalBuffer)" \
  "$M" eval "$SWIGLU" --plan lv.json
# A fusion level per group (issue 35): a retention layer then a SwiGLU MLP
# fuses its groups in L2, GlobalBuffer, L2. search names each group's
# level (text and --json), writes them in the plan ("group_levels"); eval
# --plan prices the plan at the search's figure and names each group's
# level; exec --plan runs it; a group's level that cannot be one is
# refused at its line and column.
MIXED=$ROOT/tests/specs/levels/retnet_mlp.yaml
"$M" search "$MIXED" --arch "$TWO" --plan-out gl.json --json >ms.json ||
  fail "search, a level per group"
"$M" search "$MIXED" --arch "$TWO" >ms.txt || fail "search, a level per group"
grep -q "^fusion level: per group: G1 L2, G2 GlobalBuffer, G3 L2 (2 candidate levels tried" ms.txt ||
  fail "search: the per-group level line: $(sed -n 3p ms.txt)"
grep -q "^  G2   4:KV 5:S 6:O   (fused in GlobalBuffer)$" ms.txt ||
  fail "search: the group's level in the plan"
"$M" eval "$MIXED" --arch "$TWO" --plan gl.json --json >me.json ||
  fail "eval --plan, a level per group"
"$M" eval "$MIXED" --arch "$TWO" --plan gl.json >me.txt ||
  fail "eval --plan text, a level per group"
grep -q "; fused in GlobalBuffer$" me.txt || fail "eval: the group's level"
$PY - <<'PYEOF' || fail "a level per group found, written and priced"
import json
s, e = json.load(open("ms.json")), json.load(open("me.json"))
p = json.load(open("gl.json"))
levels = ["L2", "GlobalBuffer", "L2"]
assert s["fusion_level"] is None and s["group_levels"] == levels, s
assert p["group_levels"] == levels and "fusion_level" not in p, p
assert [g["fusion_level"] for g in e["groups"]] == levels, e["groups"]
assert abs(s["found"] - 43.68787064e-3) < 1e-12, s["found"]
assert e["totals"]["latency_s"] == s["found"], (e["totals"], s["found"])
assert s["lower_bound"] <= s["found"]
PYEOF
"$M" exec "$MIXED" --set B=1 --set I=4 --set D=16 --set H=2 --set E=4 \
  --set F=4 --set G=8 --random 1 --plan gl.json >mx.txt ||
  fail "exec --plan, a level per group"
$PY -c 'import json; p = json.load(open("gl.json")); p["group_levels"][1] = "Registers"; json.dump(p, open("gr.json", "w"), indent=1)' ||
  fail "a plan with a bad group level"
line=$(grep -n '"Registers"' gr.json | cut -d: -f1)
refused "gr.json:$line:3: error: \"group_levels\": memory level 'Registers' is the innermost.*(the fusion levels two-level can take: L2, GlobalBuffer)" \
  "$M" eval "$MIXED" --arch "$TWO" --plan gr.json
finish best
