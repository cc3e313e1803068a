#!/bin/sh
# The memory hierarchy end to end (docs/architecture.md, "Memory levels"):
# eval reports every level's bytes per tensor, time and energy in text,
# --json and --csv, and which level bounds each Einsum; an omitted
# bandwidth prints as unlimited; a sweep over the GlobalBuffer's bandwidth
# and one over an inner level's capacity both move latency; --json echoes
# each compute unit's scalar fields; a file with four levels and no fusion
# level is refused at its line.
set -u
. tests/e2e/lib/harness.sh
PY=python3

"$M" eval mamba1 --set B=4 --design full >text.txt || fail "eval text"
grep -q "GlobalBuffer   buffer .*unlimited" text.txt ||
  fail "eval text: the GlobalBuffer's bandwidth is not printed unlimited"
grep -q "per tensor: read/write MB" text.txt || fail "eval text: no tensors"
"$M" eval mamba1 --set B=4 --design full --arch h100 --json >h.json ||
  fail "eval --json"
"$M" eval mamba1 --set B=4 --design full --arch h100 --csv >h.csv ||
  fail "eval --csv"
# Every compute unit's scalar fields (COMPUTE_UNIT_FIELDS) in --json, as
# archs/h100-sxm.yaml gives them or by their defaults (pipeline 1,
# efficiency 1, sms and threads 0: none).
"$M" eval mamba1 --set B=4 --design full --arch h100-sxm --json >sxm.json ||
  fail "eval --json on h100-sxm"
$PY - <<'PYEOF' || fail "per-unit JSON"
import json
units = json.load(open("sxm.json"))["units"]
assert units == [
    {"name": "tensor", "role": "matrix", "pipeline": 1, "efficiency": 0.75,
     "sms": 132, "threads": 2048},
    {"name": "cuda", "role": "vector", "pipeline": 1, "efficiency": 1,
     "sms": 0, "threads": 0}], units
PYEOF
$PY - <<'PYEOF' || fail "per-level JSON and CSV"
import csv, json
d = json.load(open("h.json"))
levels = [l["name"] for l in d["levels"]]
assert levels == ["HBM", "L2", "SharedMemory", "Registers"], levels
assert [l["role"] for l in d["levels"]] == ["dram", "buffer", "level",
                                            "registers"]
assert d["levels"][3]["bandwidth_bytes_per_s"] is None   # unlimited
assert d["levels"][2]["instances"] == 114
for e in d["einsums"]:
    assert e["bound"] in levels + ["compute"], e["bound"]
    assert [l["level"] for l in e["levels"]] == levels
    for l in e["levels"]:
        r = sum(t["read_bytes"] for t in l["tensors"].values())
        w = sum(t["write_bytes"] for t in l["tensors"].values())
        assert abs(r - l["read_bytes"]) <= 1e-9 * max(r, 1), (e["einsum"], l)
        assert abs(w - l["write_bytes"]) <= 1e-9 * max(w, 1), (e["einsum"], l)
    hbm = e["levels"][0]
    assert hbm["read_bytes"] == e["dram_read_bytes"], e["einsum"]
    assert hbm["write_bytes"] == e["dram_write_bytes"], e["einsum"]
tot = d["totals"]["energy_j"]
parts = sum(c["energy_j"] for c in d["components"])
assert abs(parts - tot) <= 1e-9 * tot, (parts, tot)
rows = list(csv.DictReader(open("h.csv")))
assert len(rows) == len(d["einsums"])
for r, e in zip(rows, d["einsums"]):
    assert r["bound"] == e["bound"]
    for l in e["levels"]:
        n = l["level"]
        for k in ("read_bytes", "write_bytes"):
            v = float(r[n + "_" + k])
            assert abs(v - l[k]) <= 1e-9 * max(l[k], 1), (n, k, v, l[k])
        got = dict(kv.split("=") for kv in r[n + "_tensors"].split()) \
            if r[n + "_tensors"] else {}
        for t, b in l["tensors"].items():
            rd, wr = got[t].split("/")
            for v, k in ((rd, "read_bytes"), (wr, "write_bytes")):
                assert abs(float(v) - b[k]) <= 1e-9 * max(b[k], 1), (n, t)
PYEOF

# Sweeps: the GlobalBuffer's bandwidth on the paper's architecture (the
# example path of docs/sweep.md), an inner level's capacity on Eyeriss.
cat >bw.yaml <<'EOF'
study:
  name: bw
  cascades:
    - {spec: mamba1, models: [mamba-370m]}
  settings: {B: 64}
  architectures: [mambalaya]
  parameters:
    bw:
      memory.GlobalBuffer.bandwidth: [1 GB/s, 100 GB/s, 10 TB/s]
  designs: [full]
  phases: [prefill]
  objectives: [latency, energy]
EOF
cat >spad.yaml <<'EOF'
study:
  name: spad
  cascades:
    - {spec: cnn_layer}
  architectures: [eyeriss]
  parameters:
    spad:
      memory.Scratchpad.capacity: [64 B, 512 B, 2 KiB]
  designs: [unfused]
  phases: [prefill]
  objectives: [latency, energy]
EOF
"$M" sweep bw.yaml --out bw >/dev/null 2>err || fail "sweep bw: $(cat err)"
"$M" sweep spad.yaml --out spad >/dev/null 2>err ||
  fail "sweep spad: $(cat err)"
$PY - <<'PYEOF' || fail "the sweeps move latency"
import csv
# The scratchpad tiles within the global buffer's tile (one loop nest,
# docs/model.md §4): past 512 B it holds the whole of that tile and more
# room buys nothing.
for study in ("bw", "spad"):
    lat = [float(r["latency_s"]) for r in csv.DictReader(
        open(study + "/points.csv"))]
    assert len(lat) == 3 and lat[0] > lat[1], (study, lat)
    assert lat[1] > lat[2] if study == "bw" else lat[1] == lat[2], (study, lat)
PYEOF

# A mapping search bounded by MAP_BUDGET says so: ResNet's stem on Eyeriss
# (seven classes of variables in the convolution O at the buffer: their
# loop orders alone exceed the budget, so each tile is 1 or whole and the
# smallest class keeps its place), in the text and in --json, and an
# Einsum searched whole says nothing.
"$M" eval cnn_layer --arch eyeriss --design unfused >cnn.txt ||
  fail "eval cnn_layer"
grep -q "note: the mapping search of 1 Einsum (O) was bounded (MAP_BUDGET): each tile 1 or whole, the loop order of the smallest classes of variables kept as written;" cnn.txt ||
  fail "no note of the bounded search: $(grep note cnn.txt)"
"$M" eval cnn_layer --arch eyeriss --design unfused --json >cnn.json ||
  fail "eval cnn_layer --json"
$PY - <<'PYEOF' || fail "search_bounded in --json"
import json
e = {x["einsum"]: x for x in json.load(open("cnn.json"))["einsums"]}
b = {l["level"]: l["search_bounded"] for l in e["O"]["levels"]
     if "search_bounded" in l}
assert list(b) == ["GlobalBuffer"], b
assert abs(b["GlobalBuffer"]["tile_powers_of"] / 2.0 ** 64 - 1) < 1e-9, b
assert b["GlobalBuffer"]["orders_kept"] == 1, b
assert all("search_bounded" not in l for n in ("A", "PL")
           for l in e[n]["levels"]), e["A"]["levels"]
PYEOF

# The energy line names every level by the file's own name, an inner
# staging level too (it was folded into "registers"), and its shares add
# up with the operations' to 100 % (within the rounding of 0.1 %).
"$M" eval mamba1 --arch "$ROOT/tests/archs/two_level.yaml" >two.txt ||
  fail "eval two_level"
grep '^  energy ' two.txt | python3 -c '
import re, sys
line = sys.stdin.read()
names = re.findall(r"([A-Za-z0-9]+) ([0-9.]+)%", line)
assert [n for n, _ in names] == ["DRAM", "L2", "GlobalBuffer", "Registers",
                                 "operations"], line
assert abs(sum(float(v) for _, v in names) - 100) < 0.3, line
' || fail "eval energy line: $(grep '^  energy ' two.txt)"

# Four levels and no fusion level: refused at the memory list's first item.
sed -e '/fusion: true/d' \
  -e 's/^    - name: GlobalBuffer$/    - {name: L2, capacity: 64 MiB, read_energy: 1 pJ\/B, write_energy: 1 pJ\/B, area: 0.32 mm2\/MiB}\n    - name: GlobalBuffer/' \
  "$ROOT/archs/mambalaya.yaml" >four.yaml
refused "four.yaml:18:5: error: .*fusion: true" \
  "$M" eval mamba1 --arch four.yaml

finish levels
