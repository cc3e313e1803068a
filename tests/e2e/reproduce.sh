#!/bin/sh
# `mambalaya reproduce` end to end: the figures it writes into --out (every
# figure as SVG, PDF and PNG: each SVG well formed, with axes, labels and
# legends, each PDF and PNG the same figure; figures.csv, targets.csv and
# an index.html that shows them all), the table and the JSON contract on
# stdout, --format, a --out that cannot be created; and a cascade that
# names no model labelled as what it is, with the paper's figures only
# where they apply (other setups of the paper's cascade:
# reproduce_setups.sh).
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/repro.sh"
PY=/usr/bin/python3
CHECK=tests/e2e/svg_check.py
RENDER=tests/e2e/render_check.py

# The text table and the figures: the paper's run, shared with figures.sh
# (tests/e2e/lib/harness.sh).
shared paper reproduce --format svg,pdf,png
text="$SHARED/out"
cp "$SHARED/stdout" "$tmp/table"
[ "$(cat "$SHARED/rc")" = 0 ] ||
  fail "reproduce --out exited $(cat "$SHARED/rc"): $(cat "$SHARED/stderr")"
last=$(tail -n 1 "$tmp/table")
[ "$last" = "figures written to $text/index.html" ] ||
  fail "last line of the table: '$last'"
grep -q "within 0.85-1.15" "$tmp/table" || fail "no summary line in the table"
grep -q "^42 figures, " "$tmp/table" || fail "the paper's 42 figures changed"
grep -q "^best (searched) " "$tmp/table" || fail "no best (searched) row"
[ "$(grep -c "^over \|^end-to-end geomean\|^long context, over" "$tmp/table")" -eq 6 ] ||
  fail "not six best-variant rows with best (searched)"

for f in $FIGURES; do
  for e in svg pdf png; do
    [ -s "$text/$f.$e" ] || fail "$f.$e not written"
  done
done
for f in figures.csv targets.csv index.html; do
  [ -s "$text/$f" ] || fail "$f not written"
done
ls "$text" | grep -q '\.tmp$' && fail "temporary files left in --out"

$PY "$CHECK" "$text"/*.svg >"$tmp/check" ||
  { grep -v '^ok ' "$tmp/check"; fail "svg_check.py rejected a figure"; }
$PY "$RENDER" "$text"/*.svg >"$tmp/render" ||
  { grep -v '^ok ' "$tmp/render"; fail "render_check.py rejected a figure"; }
$PY "$CHECK" --expect-series 'MARCA-like,Geens-like,Mambalaya,best (searched),paper' \
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
for f in figures:
    for e in ("svg", "pdf", "png"):
        assert f'<a href="{f}.{e}">' in page, (f, e)
assert "the paper&#39;s setup" in page, "the setup is not called the paper's"
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
assert "Ideal fusion / compute, array2d (matrix)" in seen["utilization_prefill"]
assert "Ideal fusion / DRAM bandwidth" in seen["utilization_prefill"]
assert {"prefill / DRAM", "decode / operations"} <= seen["energy"], seen["energy"]
assert len(seen["sweep_370m"]) == 9 and "FLAT" in seen["sweep_370m"], seen["sweep_370m"]
assert "best (searched)" in seen["sweep_370m"] and "best (searched)" in seen["sota"]
# best (searched) is at least as fast as every strategy, at every I and in
# every scenario (speedups over best unfused: at least the best's).
for fig in ("sweep_370m", "sweep_2.8b", "sota"):
    by = {}
    for r in rows[1:]:
        if r[0] == fig:
            by.setdefault(r[2], {})[r[1]] = float(r[3])
    for x, ys in by.items():
        fused = [v for k, v in ys.items()
                 if k in ("RI", "RI+RSb", "RI+RSb+RSp", "Fully fused", "Mambalaya")]
        assert ys["best (searched)"] >= max(fused) * (1 - 1e-12), (fig, x, ys)
        if "Ideal fusion" in ys:
            assert ys["best (searched)"] <= ys["Ideal fusion"] * (1 + 1e-12), (fig, x, ys)
# The ski slope (issue 36): each design's DRAM traffic against the fusion
# level's capacity, 2^-10 .. 2^4 times mambalaya's 32 MiB, never grows
# with it, and full fusion's falls by more than 10x over the range.
slope = {}
for r in rows[1:]:
    if r[0] == "ski_slope" and r[1].startswith("DRAM traffic / "):
        slope.setdefault(r[1][len("DRAM traffic / "):], []).append((float(r[2]), float(r[3])))
assert len(slope) == 9, sorted(slope)
for k, pts in slope.items():
    pts.sort()
    assert [x for x, _ in pts] == [32 * 2.0 ** e for e in range(-10, 5)], (k, pts)
    assert all(b <= a * (1 + 1e-12) for (_, a), (_, b) in zip(pts, pts[1:])), (k, pts)
assert slope["Fully fused"][0][1] > 10 * slope["Fully fused"][-1][1], slope["Fully fused"]
assert "ski_slope" in page and "The ski slope" in page
# The paper's values are marks on the bars they belong to, not bars.
paper = [r for r in rows[1:] if r[0] == "speedup_e2e" and
         r[1].startswith("paper: ")]
assert sorted(float(r[3]) for r in paper) == [2.23, 2.72, 2.99, 3.35, 4.9]
assert {r[1] for r in paper} == {"paper: RI", "paper: RI+RSb",
                                 "paper: RI+RSb+RSp", "paper: Fully fused"}
assert all(not r[2].startswith("paper") for r in rows[1:])
PYEOF

# --json: the contract, unchanged, and the same figures, byte for byte --
# from a byte-for-byte copy of the shipped architecture, which is the
# paper's (one run serves both checks) -- into a directory whose parents
# do not exist yet.
json="$tmp/a/b/json"
mkdir "$tmp/arch"
cp archs/mambalaya.yaml "$tmp/arch/copy.yaml"
"$MAMBALAYA" reproduce --json --arch "$tmp/arch/copy.yaml" \
  --format svg,pdf,png --out "$json" >"$tmp/out.json" 2>"$tmp/err" ||
  fail "reproduce --json --arch copy exited $?: $(cat "$tmp/err")"
$PY - "$tmp/out.json" <<'PYEOF' || fail "reproduce --json"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["setup"]
assert s["spec"] == "specs/mamba1.yaml" and s["arch"] == "mambalaya", s
assert s["models"] == ["mamba-370m", "mamba-2.8b"] and s["paper_setup"], s
assert s["batch"] == 64 and s["prefill_tokens"] == 2048, s
assert d["designs"]["full"]["prefill"]["latency_s"] > 0
# best (searched): no slower than any strategy, no faster than ideal; the
# figures where the best variant appears, again with it.
D = d["designs"]
for ph in ("prefill", "decode"):
    b = D["best"][ph]
    for k in ("ri", "ri+rsb", "ri+rsb+rsp", "full", "unfused", "marca", "geens"):
        assert b["latency_s"] <= D[k][ph]["latency_s"], (ph, k)
    assert b["latency_s"] >= D["ideal"][ph]["latency_s"], ph
    assert abs(b["gap_to_ideal"] - b["latency_s"] / D["ideal"][ph]["latency_s"]) < 1e-9
B = d["best_searched"]
assert sorted(B) == sorted(["vs_marca.prefill", "vs_marca.decode",
    "vs_geens.prefill", "vs_marca.e2e_geomean", "vs_geens.e2e_geomean",
    "long_context.improvement"]), sorted(B)
for k, row in B.items():
    assert row["variant"] == d["targets"][k]["ours"], (k, row)
    assert row["paper"] == d["targets"][k]["paper"], (k, row)
    assert row["searched"] >= row["variant"] and row["searched_gap_to_ideal"] >= 1, (k, row)
    assert row["searched_gap_to_ideal"] <= row["variant_gap_to_ideal"], (k, row)
p = B["vs_marca.prefill"]
assert abs(p["searched"] - D["marca"]["prefill"]["latency_s"] / D["best"]["prefill"]["latency_s"]) < 1e-9
assert len(d["targets"]) == 42, len(d["targets"])
t = d["targets"]
# The most inter-Einsum reduction is full fusion's (§VI-C's 34x): the
# unfused layer's intermediates (83,266,895,872 bytes: Table I's
# 91,856,830,464 less HH, 64 x 2048 x 2048 x 16 x 2 bytes, which the
# unfused design now keeps with its recurrence) over what full fusion
# moves -- LEX written (it leaves the group), RX written and read back
# (the distance rule), X written and read back and LEX read again (the
# two passes its RD partial products bring): 64 x 2048 x (1024 + 2 x
# 2048 + 2 x 2048 + 1024) elements of 2 bytes (docs/model.md §7).
full = 2 * 64 * 2048 * (1024 + 2 * 2048 + 2 * 2048 + 1024)
unfused = 91856830464 - 64 * 2048 * 2048 * 16 * 2
m = t["inter_reduction.max"]
assert abs(m["ours"] - unfused / full) < 1e-9 * m["ours"], m
assert m["within"], m
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
# (index.html names the architecture's file: the copy's path there.)
sed "s|($tmp/arch/copy.yaml)|(archs/mambalaya.yaml)|" "$json/index.html" \
  >"$tmp/index.html" && mv "$tmp/index.html" "$json/index.html"
for f in "$text"/*; do
  cmp -s "$f" "$json/${f##*/}" || fail "${f##*/} differs between two runs"
done
$PY -c "import json, sys; d = json.load(open(sys.argv[1]))
assert d['setup']['paper_setup'] and 'vs_marca.prefill' in d['targets']
" "$tmp/out.json" || fail "a copy of mambalaya.yaml is not the paper's"

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

# --format: a wrong one is a usage error (only the formats asked for:
# reproduce_setups.sh's testchip run).
"$MAMBALAYA" reproduce --format svg,gif --out "$tmp/gif" >"$tmp/bad.out" \
  2>"$tmp/bad.err"
st=$?
[ "$st" -eq 2 ] || fail "--format svg,gif exited $st, expected 2"
grep -q "svg, pdf and png" "$tmp/bad.err" ||
  fail "--format svg,gif: unclear message: $(cat "$tmp/bad.err")"
[ -e "$tmp/gif" ] && fail "--format svg,gif created --out"

# A spec without the ranks reproduce varies: an input error.
"$MAMBALAYA" reproduce --spec transformer --out "$tmp/tr" >"$tmp/bad.out" \
  2>"$tmp/bad.err"
st=$?
[ "$st" -eq 2 ] || fail "--spec transformer exited $st, expected 2"
grep -q "specs/transformer.yaml: error: .*rank I" "$tmp/bad.err" ||
  fail "--spec transformer: unclear message: $(cat "$tmp/bad.err")"

# A cascade that names no model (issue 17): its own sizes (B=4, I=1024),
# labelled with the spec, its sizes and the architecture; no output names
# a model preset, and without a layer count no end-to-end figure is drawn.
rw=tests/specs/good/rwkv6_shift.yaml
"$MAMBALAYA" reproduce --spec $rw --arch h100 --format svg,png \
  --out "$tmp/rw" >"$tmp/rw.table" 2>"$tmp/err" ||
  fail "reproduce --spec rwkv6_shift --arch h100 exited $?: $(cat "$tmp/err")"
labels "$tmp/rw" "$rw" h100 "B=4" "D=2048, E=2048"
grep -q "I=1024" "$tmp/rw/utilization_prefill.svg" ||
  fail "rwkv6_shift: the spec's I=1024 not in the prefill figures"
"$MAMBALAYA" reproduce --spec $rw --arch h100 --json --format svg \
  --out "$tmp/rwj" >"$tmp/rw.json" 2>"$tmp/err" ||
  fail "reproduce --spec rwkv6_shift --json exited $?: $(cat "$tmp/err")"
for f in speedup_e2e speedup_e2e_pipelined sota; do
  [ -e "$tmp/rw/$f.svg" ] && fail "rwkv6_shift without layers: $f drawn"
done
[ -s "$tmp/rw/sweep.svg" ] && [ -s "$tmp/rw/sweep.png" ] ||
  fail "rwkv6_shift: no sweep figure"
grep -l -i 'mamba2\?-[0-9.]*[mb]\b\|over [0-9]* layers' "$tmp/rw"/* \
  "$tmp/rw.table" "$tmp/rw.json" && fail "rwkv6_shift: a model named"
$PY -c "import json, sys; s = json.load(open(sys.argv[1]))['setup']
assert s['models'] == [] and s['layers'] is None and s['batch'] == 4, s
" "$tmp/rw.json" || fail "rwkv6_shift: the JSON setup"
# Its tables (issue 36): no "nan" where there is no end-to-end figure
# ("-" instead), and no label cut to fit a column.
grep -n -i 'nan' "$tmp/rw.table" && fail "rwkv6_shift: nan in a table"
grep -q '^end-to-end geomean over the scenarios, over MARCA-like  *-  *-  *-  *-  *-$' \
  "$tmp/rw.table" || fail "rwkv6_shift: the end-to-end row without figures"
# The paper's setup has labels of 68 characters ("... long context
# (I0=16384, G=256)"), once cut at 64.
$PY - "$tmp/rw.json" "$tmp/rw.table" "$tmp/out.json" "$tmp/table" <<'PYEOF' ||
import json, sys
longest = 0
for js, table in zip(sys.argv[1::2], sys.argv[2::2]):
    d, text = json.load(open(js)), open(table).read()
    whats = [t["what"] for k in ("targets", "best_searched")
             for t in d[k].values()]
    assert len(whats) >= 6, whats
    for w in whats:
        assert w in text, w
        longest = max(longest, len(w))
assert longest > 64, longest
PYEOF
  fail "a label cut in the tables"
# --layers N draws them, over N layers; --model asks for a preset, whose
# name then labels the figures, at the spec's own B.
# (The run figures.sh checks the figures of.)
shared rwkv24 reproduce --spec $rw --arch h100 --layers 24 --format svg,pdf,png
[ "$(cat "$SHARED/rc")" = 0 ] ||
  fail "reproduce --layers 24 exited $(cat "$SHARED/rc"): $(cat "$SHARED/stderr")"
grep -q "end to end over 24 layers" "$SHARED/out/speedup_e2e.svg" ||
  fail "--layers 24: speedup_e2e.svg not over 24 layers"
# One layer is one layer (issue 36: no "1 layers"), in the table and the
# figure.
"$MAMBALAYA" reproduce --spec $rw --arch h100 --layers 1 --format svg \
  --out "$tmp/rw1" >"$tmp/rw1.table" 2>"$tmp/err" ||
  fail "reproduce --layers 1 exited $?: $(cat "$tmp/err")"
grep -q "; 1 layer end to end;" "$tmp/rw1.table" ||
  fail "--layers 1: not '1 layer end to end' in the table"
grep -q "end to end over 1 layer<" "$tmp/rw1/speedup_e2e.svg" ||
  fail "--layers 1: speedup_e2e.svg not 'over 1 layer'"
"$MAMBALAYA" reproduce --spec $rw --arch h100 --model mamba-370m \
  --format svg --out "$tmp/rwm" >"$tmp/rwm.table" 2>"$tmp/err" ||
  fail "reproduce --model mamba-370m exited $?: $(cat "$tmp/err")"
labels "$tmp/rwm" mamba-370m "B=4"
"$MAMBALAYA" reproduce --layers 0 --out "$tmp/l0" >/dev/null 2>&1 &&
  fail "--layers 0 accepted"

echo "reproduce: $fails failures"
[ "$fails" -eq 0 ]
