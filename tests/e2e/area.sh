#!/bin/sh
# Area like for like (docs/architecture.md, "Area"): eval --json reports
# the area of the H100 and of Mambalaya by the same component classes,
# which add up to the total, with the same exclusions; the iso-area
# verdict under each reading of the nonlinear hardware, and the
# break-even stage area, from those figures; a sweep over area.nonlinear
# with the H100 as the reference gives the same verdicts, its area
# columns by class adding up to area_mm2.
set -u
. tests/e2e/lib/harness.sh

for a in mambalaya h100; do
  "$M" eval mamba1 --set B=4 --design full --arch $a --json >$a.json ||
    fail "eval --arch $a --json"
  "$M" eval mamba1 --set B=4 --design full --arch $a >$a.txt ||
    fail "eval --arch $a"
  grep -q "area by class (mm2): compute .*, nonlinear .*, interconnect .*, memory " $a.txt ||
    fail "eval --arch $a: no area by class"
  grep -q "not counted on any architecture: off-chip interfaces, control, on-chip network" $a.txt ||
    fail "eval --arch $a: the exclusions are not stated"
done
python3 - <<'PYEOF' || fail "area by class, verdicts, break-even"
import json
m, h = (json.load(open(a + ".json"))["totals"] for a in ("mambalaya", "h100"))
ma, ha = m["area"], h["area"]
assert set(ma["by_class_mm2"]) == set(ha["by_class_mm2"]) == \
    {"compute", "nonlinear", "interconnect", "memory"}, (ma, ha)
assert ma["excluded"] == ha["excluded"], (ma["excluded"], ha["excluded"])
for t, a in ((m, ma), (h, ha)):
    assert all(v > 0 for v in a["by_class_mm2"].values()), a
    s = sum(a["by_class_mm2"].values())
    assert abs(s - t["area_mm2"]) < 1e-9 * s, (s, t["area_mm2"])
    assert a["nonlinear_hardware"] == "separate"
    assert a["total_as_mm2"]["separate"] == t["area_mm2"]
    nl = a["by_class_mm2"]["nonlinear"]
    assert abs(a["total_as_mm2"]["marca"] - (t["area_mm2"] - nl)) < 1e-9
# The shipped reading: 135.36 against 94.60 mm2, not iso-area.
assert abs(m["area_mm2"] - 135.357124) < 1e-6, m["area_mm2"]
assert abs(h["area_mm2"] - 94.598029) < 1e-6, h["area_mm2"]
assert abs(ha["by_class_mm2"]["memory"] - 39.940045) < 1e-6
# The paper's reading for Mambalaya (the H100's SFUs stay): iso-area.
assert abs(ma["total_as_mm2"]["marca"] - 42.195652) < 1e-6
assert ma["total_as_mm2"]["marca"] < h["area_mm2"] < m["area_mm2"]
# Break-even: the stage area x (both stages, both files, 708 um2 now) at
# which the totals meet.
mn, hn = ma["by_class_mm2"]["nonlinear"], ha["by_class_mm2"]["nonlinear"]
x = 708 * ((h["area_mm2"] - hn) - (m["area_mm2"] - mn)) / (mn - hn)
assert abs(x - 391.67) < 0.01, x
PYEOF

cat >nl.yaml <<'EOF'
study:
  name: nl
  cascades:
    - {spec: mamba1, models: [mamba-370m]}
  settings: {B: 64}
  architectures: [mambalaya]
  parameters:
    nonlinear: {area.nonlinear: [separate, marca]}
  designs: [full]
  phases: [prefill]
  objectives: [latency, area]
  reference: h100
EOF
"$M" sweep nl.yaml --out nl >/dev/null || fail "sweep area.nonlinear"
python3 - <<'PYEOF' || fail "sweep: the verdicts and the area columns"
import csv
rows = list(csv.DictReader(open("nl/points.csv")))
got = [(r["area.nonlinear"], round(float(r["area_mm2"]), 6),
        r["within_reference_area"]) for r in rows]
assert got == [("separate", 135.357124, "false"),
               ("marca", 42.195652, "true")], got
for r in rows:
    s = sum(float(r["area_%s_mm2" % c])
            for c in ("compute", "nonlinear", "interconnect", "memory"))
    assert abs(s - float(r["area_mm2"])) < 1e-9 * s, r
assert rows[0]["latency_s"] == rows[1]["latency_s"]
PYEOF

finish area
