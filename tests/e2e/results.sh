#!/bin/sh
# Self-describing results: every --json (classify, fuse, eval, reproduce)
# names its inputs (spec and architecture with their SHA-256, model,
# settings, options, tool version); eval --json reports energy and area per
# component; eval --csv writes one row per Einsum; diff tells two results
# apart (exit 1) or says they are the same (exit 0).
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=python3

"$MAMBALAYA" classify mamba1 --json >"$tmp/classify.json" || fail classify
"$MAMBALAYA" fuse mamba2 --strategy ri --stitch global --json \
  >"$tmp/fuse.json" || fail fuse
"$MAMBALAYA" eval mamba1 --set B=4 --design ri --json >"$tmp/a.json" ||
  fail eval
"$MAMBALAYA" eval mamba1 --set B=4 --design ri --arch h100 --json \
  >"$tmp/b.json" || fail "eval h100"
"$MAMBALAYA" reproduce --format svg --out "$tmp/r" --json \
  --reserve-share 0.7 >"$tmp/repro.json" || fail reproduce
"$MAMBALAYA" eval mamba1 --set B=4 --csv >"$tmp/e.csv" || fail "eval --csv"
$PY - "$tmp" <<'PYEOF' || fail "inputs"
import csv, hashlib, json, os, sys
t = sys.argv[1]
sha = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
for name, command in (("classify", "classify"), ("fuse", "fuse"),
                      ("a", "eval"), ("repro", "reproduce")):
    i = json.load(open(os.path.join(t, name + ".json")))["inputs"]
    assert i["tool"].startswith("mambalaya "), i
    assert i["command"] == command, (name, i["command"])
    assert i["spec"]["shipped"] is True
    assert i["spec"]["sha256"] == sha(i["spec"]["path"]), name
a = json.load(open(os.path.join(t, "a.json")))
i = a["inputs"]
assert i["settings"] == {"B": 4.0}, i["settings"]
assert i["ranks"]["B"] == 4 and i["ranks"]["I"] == 2048
assert i["architecture"]["path"] == "archs/mambalaya.yaml"
assert i["architecture"]["sha256"] == sha("archs/mambalaya.yaml")
assert i["design"] == "ri" and i["phase"] == "prefill"
assert i["options"]["stitch"] == "greedy" and i["options"]["two_pass"] is True
f = json.load(open(os.path.join(t, "fuse.json")))["inputs"]
assert f["stitch"] == "global" and f["strategy"] == "ri", f
r = json.load(open(os.path.join(t, "repro.json")))["inputs"]
assert r["options"] == {"reserve_share": 0.7}, r["options"]
# Energy and area per component: they add up to the totals.
comps = {c["name"]: c for c in a["components"]}
assert set(comps) == {"DRAM", "GlobalBuffer", "Registers", "array2d",
                      "array2d-1d", "array1d"}, set(comps)
e = sum(c["energy_j"] for c in a["components"])
assert abs(e - a["totals"]["energy_j"]) <= 1e-9 * e, (e, a["totals"])
area = sum(c["area_mm2"] for c in a["components"])
assert abs(area - a["totals"]["area_mm2"]) < 1e-9 and area > 100, area
assert comps["DRAM"]["area_mm2"] == 0 and comps["array2d-1d"]["area_mm2"] == 0
rows = list(csv.DictReader(open(os.path.join(t, "e.csv"))))
assert len(rows) == 24 and rows[0]["einsum"] == "LEX", len(rows)
assert all(r["design"] == "full" for r in rows)
PYEOF

"$MAMBALAYA" diff "$tmp/a.json" "$tmp/a.json" >"$tmp/same" 2>&1
[ $? -eq 0 ] && grep -q "^no difference$" "$tmp/same" || fail "diff of a result with itself"
"$MAMBALAYA" diff "$tmp/a.json" "$tmp/b.json" >"$tmp/diff" 2>&1
[ $? -eq 1 ] || fail "diff of two architectures: exit $?"
grep -q '^  inputs.architecture.path: "archs/mambalaya.yaml" -> "archs/h100.yaml"$' \
  "$tmp/diff" || fail "diff: the architecture"
grep -q '^  totals.latency_s: ' "$tmp/diff" || fail "diff: the latency"
grep -q '^  components\[L2\]: (absent) -> ' "$tmp/diff" || fail "diff: the L2"
echo '{' >"$tmp/bad.json"
"$MAMBALAYA" diff "$tmp/a.json" "$tmp/bad.json" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "bad.json:2:0: error" "$tmp/err" ||
  fail "diff of a malformed file: $(cat "$tmp/err")"

echo "results: $fails failures"
[ "$fails" -eq 0 ]
