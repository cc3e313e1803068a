#!/bin/sh
# Figures a reviewer accepts (issue 17): every figure of `reproduce` (the
# paper's setup, and a cascade that names no model) and of every shipped
# study, rendered as SVG, PDF and PNG: each SVG well formed with a legend
# entry per series (svg_check.py), each PDF and PNG the same figure
# (render_check.py), and no text over other text (figure_check.py: the
# boxes the layout gave the texts). Broken copies must be rejected, so the
# overlap check is known to catch what it claims to.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3
FMT=svg,pdf,png

# reproduce's runs, shared with reproduce.sh (lib/harness.sh).
shared paper reproduce --format $FMT
[ "$(cat "$SHARED/rc")" = 0 ] ||
  fail "reproduce exited $(cat "$SHARED/rc"): $(cat "$SHARED/stderr")"
paper=$SHARED/out
shared rwkv24 reproduce --spec tests/specs/good/rwkv6_shift.yaml --arch h100 \
  --layers 24 --format $FMT
[ "$(cat "$SHARED/rc")" = 0 ] ||
  fail "reproduce rwkv6_shift exited $(cat "$SHARED/rc"): $(cat "$SHARED/stderr")"
rwkv=$SHARED/out
dirs="$paper $rwkv"
# The energy check below compares the JSON with the figures of one run.
"$MAMBALAYA" reproduce --json --format svg --out "$tmp/pj" \
  >"$tmp/paper.json" 2>"$tmp/err" ||
  fail "reproduce --json exited $?: $(cat "$tmp/err")"
for s in studies/*.yaml; do
  n=$(basename "$s" .yaml)
  "$MAMBALAYA" sweep "$s" --format $FMT --out "$tmp/$n" >/dev/null \
    2>"$tmp/err" || fail "sweep $s exited $?: $(cat "$tmp/err")"
  dirs="$dirs $tmp/$n"
done

n=0
for d in $dirs; do
  for f in "$d"/*.svg; do
    n=$((n + 1))
    [ -s "${f%.svg}.png" ] || fail "${f%.svg}.png not written"
  done
  for c in svg_check render_check figure_check; do
    $PY tests/e2e/$c.py "$d"/*.svg >"$tmp/out" ||
      { grep -v '^ok ' "$tmp/out"; fail "$c.py rejected a figure of $d"; }
  done
done
[ "$n" -ge 30 ] || fail "only $n figures rendered"

# The energy chart's parts are the architecture's own memory levels, by
# their names in the file, none folded into another (issue 36: "global
# buffer" and "registers" for any file, the H100's SharedMemory counted as
# registers), and they add up to each design's energy in the JSON.
$PY tests/e2e/svg_check.py --expect-series 'DRAM,GlobalBuffer,Registers,operations' \
  "$paper/energy.svg" >/dev/null || fail "energy.svg: not mambalaya's levels"
$PY tests/e2e/svg_check.py --expect-series 'HBM,L2,SharedMemory,Registers,operations' \
  "$rwkv/energy.svg" >/dev/null || fail "energy.svg on h100: not its levels"
$PY - "$tmp/paper.json" "$tmp/pj/figures.csv" "$tmp/pj/traffic_prefill.svg" <<'PYEOF' ||
import csv, json, re, sys
d = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2], newline="")))[1:]
s = d["setup"]
tokens = {"prefill": s["batch"] * s["prefill_tokens"], "decode": s["batch"]}
labels = {"Best unfused": "unfused", "Ideal fusion": "ideal", "MARCA-like": "marca",
          "Geens-like": "geens", "FLAT": "flat", "RI": "ri", "RI+RSb": "ri+rsb",
          "RI+RSb+RSp": "ri+rsb+rsp", "Fully fused": "full"}
sums = {}
for fig, series, x, y in rows:
    if fig == "energy":
        phase, part = series.split(" / ")
        sums[(phase, x)] = sums.get((phase, x), 0) + float(y)
assert len(sums) == 2 * len(labels), sorted(sums)
for (phase, label), uj in sums.items():
    want = d["designs"][labels[label]][phase]["energy_j"] / tokens[phase] * 1e6
    assert abs(uj - want) <= 1e-9 * want, (phase, label, uj, want)
# A bar of 0 on the log axis is named under the chart (issue 36: it
# vanished without a note): every zero of figures.csv, shown or counted.
zeros = sum(1 for r in rows if r[0] == "traffic_prefill" and float(r[3]) == 0)
svg = open(sys.argv[3], encoding="utf-8").read()
m = re.search(r'class="axis-note"[^>]*>Not drawn, 0 or less on the log axis: ([^<]*)<', svg)
assert m and zeros > 0, (zeros, m)
noted = 0
for part in m.group(1).split("; "):
    more = re.fullmatch(r"and (\d+) more", part)
    noted += int(more.group(1)) if more else len(part.split(" at ", 1)[1].split(", "))
assert noted == zeros, (noted, zeros, m.group(1))
PYEOF
  fail "the energy parts or the log axis's note"

# A study's Pareto chart shows the swept inputs (issue 36): a study of the
# fusion level's capacity (written in KiB) and the DRAM bandwidth; the key
# under the panel gives each front point's inputs in engineering units and
# its figures in the axes' units; and, as the fusion level's capacity is
# swept, the ski slope's panels, whose traffic never grows with capacity.
cat >"$tmp/ski.yaml" <<'EOF'
study:
  name: ski
  cascades:
    - {spec: mamba1, models: [mamba-370m]}
  settings: {B: 64, tokens: 2048}
  architectures: [mambalaya]
  parameters:
    buffer:
      memory[fusion].capacity: {from: 256 KiB, to: 262144 KiB, times: 4}
    bandwidth:
      memory.DRAM.bandwidth: [100 GB/s, 2039 GB/s]
  designs: [unfused, ri, full]
  phases: [prefill]
  objectives: [latency, energy]
EOF
"$MAMBALAYA" sweep "$tmp/ski.yaml" --format svg --out "$tmp/ski" >/dev/null \
  2>"$tmp/err" || fail "sweep ski.yaml exited $?: $(cat "$tmp/err")"
for c in svg_check figure_check; do
  $PY tests/e2e/$c.py "$tmp/ski/pareto.svg" >"$tmp/out" ||
    { cat "$tmp/out"; fail "$c.py rejected the ski study's figure"; }
done
$PY - "$tmp/ski/points.csv" "$tmp/ski/pareto.svg" <<'PYEOF' ||
import csv, html, re, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
svg = open(sys.argv[2], encoding="utf-8").read()
def texts(cls):
    return [html.unescape(t) for t in re.findall(rf'class="{cls}"[^>]*>([^<]*)<', svg)]
notes = texts("note")
assert notes[0] == ("The front by latency: #point (as in points.csv) series, "
                    "memory[fusion].capacity, memory.DRAM.bandwidth -- latency, energy"), notes[0]
def binary(text):  # "262144 KiB" -> "256 MiB", by hand
    v, unit = text.split()
    b = float(v) * {"KiB": 1024, "MiB": 1024 ** 2}[unit]
    for p in ("B", "KiB", "MiB", "GiB"):
        if b < 1024:
            return f"{b:.4g} {p}"
        b /= 1024
names = {"unfused": "Best unfused", "ri": "RI", "full": "Fully fused"}
front = [r for r in rows if r["pareto"] == "true"]
assert front
for r in front:
    bw = {"100 GB/s": "100 GB/s", "2039 GB/s": "2.039 TB/s"}[r["memory.DRAM.bandwidth"]]
    line = (f"#{r['point']} {names[r['design']]} on mambalaya: "
            f"{binary(r['memory[fusion].capacity'])}, {bw} -- "
            f"{float(r['latency_s']) * 1e3:.4g} ms, {float(r['energy_j']):.4g} J")
    assert line in notes, (line, notes)
assert "latency (ms)" in texts("xlabel") and "energy (J)" in texts("ylabel"), texts("xlabel")
titles = texts("title")
for t in ("prefill: DRAM traffic vs the fusion level&#39;s capacity",
          "prefill: latency vs the fusion level&#39;s capacity"):
    assert html.unescape(t) in titles, titles
# The model's traffic never grows with the fusion level's capacity, for
# each design at each bandwidth, and full fusion's falls by more than half.
by = {}
for r in rows:
    v, unit = r["memory[fusion].capacity"].split()
    by.setdefault((r["design"], r["memory.DRAM.bandwidth"]), []).append(
        (float(v), float(r["dram_bytes"])))
assert len(by) == 6, sorted(by)
for k, pts in by.items():
    pts.sort()
    assert len(pts) == 6, (k, pts)
    assert all(b <= a * (1 + 1e-12) for (_, a), (_, b) in zip(pts, pts[1:])), (k, pts)
full = by[("full", "2039 GB/s")]
assert full[0][1] > 2 * full[-1][1], full
PYEOF
  fail "the ski study's key, axes or slope"

# A text moved onto another must be caught: the title onto the subtitle.
good="$paper/sota.svg"
sed 's|\(<text class="subtitle" x="[0-9.]*" y="\)[0-9.]*|\124|' "$good" \
  >"$tmp/overlap.svg"
if $PY tests/e2e/figure_check.py "$tmp/overlap.svg" >"$tmp/out" 2>&1; then
  fail "figure_check.py accepted a subtitle over the title"
elif ! grep -q "overlaps" "$tmp/out"; then
  fail "figure_check.py: expected 'overlaps' in: $(cat "$tmp/out")"
fi

echo "$n figures checked, $fails failures"
[ "$fails" -eq 0 ]
