#!/bin/sh
# `mambalaya reproduce` end to end: the figures it writes into --out (every
# SVG well formed, with axes, labels and legends; figures.csv, targets.csv
# and an index.html that shows them all), the table and the JSON contract
# on stdout, and a --out that cannot be created.
set -u
: "${MAMBALAYA:=build/mambalaya}"
PY=/usr/bin/python3
CHECK=tests/e2e/svg_check.py
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

FIGURES="roofline roofline_decode utilization_prefill utilization_decode
utilization_strategies utilization_designs_prefill utilization_designs_decode
traffic_prefill traffic_prefill_fused traffic_decode speedup_e2e
speedup_e2e_pipelined sota sweep_370m sweep_2.8b energy"

# The text table, into a directory whose parents do not exist yet.
text="$tmp/a/b/figs"
"$MAMBALAYA" reproduce --out "$text" >"$tmp/table" 2>"$tmp/err" ||
  fail "reproduce --out exited $?: $(cat "$tmp/err")"
last=$(tail -n 1 "$tmp/table")
[ "$last" = "figures written to $text/index.html" ] ||
  fail "last line of the table: '$last'"
grep -q "within 0.85-1.15" "$tmp/table" || fail "no summary line in the table"

for f in $FIGURES; do
  [ -s "$text/$f.svg" ] || fail "$f.svg not written"
done
for f in figures.csv targets.csv index.html; do
  [ -s "$text/$f" ] || fail "$f not written"
done
ls "$text" | grep -q '\.tmp$' && fail "temporary files left in --out"

$PY "$CHECK" "$text"/*.svg >"$tmp/check" ||
  { grep -v '^ok ' "$tmp/check"; fail "svg_check.py rejected a figure"; }
$PY "$CHECK" --expect-series 'MARCA-like,Geens-like,Mambalaya' \
  "$text/sota.svg" >/dev/null || fail "sota.svg series"

# index.html shows every SVG and the targets; the CSVs parse and hold every
# figure and every target.
$PY - "$text" $FIGURES <<'PYEOF' || fail "index.html or the CSVs"
import csv, math, os, re, sys
d, figures = sys.argv[1], sys.argv[2:]
page = open(os.path.join(d, "index.html"), encoding="utf-8").read()
svgs = sorted(f for f in os.listdir(d) if f.endswith(".svg"))
imgs = re.findall(r'<img src="([^"]+)" alt="([^"]+)"', page)
srcs = sorted(src for src, _ in imgs)
assert srcs == svgs, ("not shown:", set(svgs) - set(srcs), "missing:",
                      set(srcs) - set(svgs))
assert all(alt.strip() for _, alt in imgs)
assert '<table class="targets">' in page and "<th>ratio</th>" in page
assert "<script" not in page.lower() and "http://" not in page
rows = list(csv.reader(open(os.path.join(d, "targets.csv"), newline="")))
assert rows[0] == ["key", "where", "what", "paper", "ours", "ratio", "unit",
                   "within"], rows[0]
keys = {r[0]: r for r in rows[1:]}
assert len(keys) == len(rows) - 1 >= 40, len(rows)
for k, r in keys.items():
    assert len(r) == 8 and r[7] in ("true", "false"), r
    assert math.isfinite(float(r[3])) and math.isfinite(float(r[4])), r
    assert f'id="t-{k}"' in page, k
off = sum(r[7] == "false" for r in keys.values())
assert page.count('<tr id="t-') == len(keys)
assert page.count('class="off"') == off, (off, page.count('class="off"'))
rows = list(csv.reader(open(os.path.join(d, "figures.csv"), newline="")))
assert rows[0] == ["figure", "series", "x", "y"], rows[0]
seen = {}
for r in rows[1:]:
    assert len(r) == 4 and r[1] and r[2], r
    assert math.isfinite(float(r[3])), r
    seen.setdefault(r[0], set()).add(r[1])
assert sorted(seen) == sorted(figures), sorted(seen)
assert {"MARCA-like", "Geens-like", "Mambalaya"} <= seen["sota"]
assert "Best unfused / Einsum 7 TTX" in seen["roofline"], seen["roofline"]
assert "Ideal fusion / compute" in seen["utilization_prefill"]
assert len(seen["sweep_370m"]) == 7, seen["sweep_370m"]
# The paper's values are plotted beside ours.
paper = [r for r in rows[1:] if r[0] == "speedup_e2e" and
         r[2].startswith("paper:")]
assert sorted(float(r[3]) for r in paper) == [2.23, 2.72, 2.99, 3.35, 4.9]
PYEOF

# --json: the contract, unchanged, and the same figures, byte for byte.
json="$tmp/json"
"$MAMBALAYA" reproduce --json --out "$json" >"$tmp/out.json" 2>"$tmp/err" ||
  fail "reproduce --json exited $?: $(cat "$tmp/err")"
$PY - "$tmp/out.json" <<'PYEOF' || fail "reproduce --json"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["targets"]
for k in ["unfused.read_share", "unfused.write_share", "unfused.inter_share",
          "ideal.speedup.prefill", "ideal.speedup.decode",
          "speedup.prefill.ri", "speedup.prefill.ri_rsb",
          "speedup.prefill.ri_rsb_rsp", "speedup.prefill.full",
          "speedup.decode.ri", "vs_marca.prefill", "vs_marca.decode",
          "vs_geens.prefill"]:
    for f in ("ours", "paper"):
        v = t[k][f]
        assert isinstance(v, (int, float)) and not isinstance(v, bool), (k, f)
PYEOF
for f in "$text"/*; do
  cmp -s "$f" "$json/${f##*/}" || fail "${f##*/} differs between two runs"
done

# An --out under a regular file: an unusable output path, exit 2, a
# message naming the file, and nothing on stdout.
: >"$tmp/file"
"$MAMBALAYA" reproduce --out "$tmp/file/figs" >"$tmp/bad.out" 2>"$tmp/bad.err"
st=$?
[ "$st" -eq 2 ] || fail "unwritable --out exited $st, expected 2"
[ -s "$tmp/bad.out" ] && fail "unwritable --out printed on stdout"
grep -q "$tmp/file: error: .*not a directory" "$tmp/bad.err" ||
  fail "unwritable --out: unclear message: $(cat "$tmp/bad.err")"
"$MAMBALAYA" reproduce --json --out "$tmp/file" >"$tmp/bad.out" 2>/dev/null &&
  fail "--out naming a regular file succeeded"
[ -s "$tmp/bad.out" ] && fail "--json with an unwritable --out printed"

echo "reproduce: $fails failures"
[ "$fails" -eq 0 ]
