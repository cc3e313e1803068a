#!/bin/sh
# AccelForge's example architectures (tests/archs/accelforge/, copied from
# its repository at 1c1929c2: README there) load as they are written, by
# `--arch FILE` and by `import accelforge-arch` (docs/compat.md): every
# figure below is worked out by hand from the file (sizes in bits,
# energies in joules per bit, throughputs in bits per second), the notes
# name what is not modelled, and what cannot be translated is an error at
# the file, line and column that says it.
set -u
. tests/e2e/lib/harness.sh
PY=python3
A=$ROOT/tests/archs/accelforge

# ---- tpu_v4i: the translation, line by line ----
"$M" import accelforge-arch "$A/tpu_v4i.yaml" --out tpu.yaml ||
  fail "import accelforge-arch tpu_v4i"
# A figure is checked among the lines of its own level (or unit).
want() { # FILE LEVEL LINE: LINE is among the lines of LEVEL's entry
  sed -n "/- name: $2\$/,/- name:/p" "$1" | grep -q -x -F -e "$3" ||
    fail "$1: $2 lacks '$3': $(sed -n "/- name: $2\$/,/- name:/p" "$1")"
}
grep -q -x '  clock: 1.05 GHz' tpu.yaml || fail "tpu clock: MAC 1.05e9/s"
grep -q -x '  word: 2 B' tpu.yaml || fail "tpu word"
# MainMemory: 8 * 614e9 bits/s = 614 GB/s on one port (equal read and
# write throughputs, AccelForge's default sum of their times); 7.03e-12 J
# per bit (bits_per_action 1).
want tpu.yaml MainMemory '      bandwidth: 614 GB/s'
want tpu.yaml MainMemory '      read_energy: 7.03 pJ/bit'
# GlobalBuffer: 1024*1024*128*8 bits = 134217728 B (128 MiB); separate
# ports (total_latency max(...)): 8 * 2048e9 bits/s reads = 2048 GB/s,
# 8 * 1024e9 writes = 1024 GB/s; the level below MainMemory, which keeps
# ~Intermediates: the fusion level.
want tpu.yaml GlobalBuffer '      capacity: 134217728 B'
want tpu.yaml GlobalBuffer '      fusion: true'
want tpu.yaml GlobalBuffer '      read_bandwidth: 2048 GB/s'
want tpu.yaml GlobalBuffer '      write_bandwidth: 1024 GB/s'
want tpu.yaml GlobalBuffer '      read_energy: 1.88 pJ/bit'
want tpu.yaml GlobalBuffer '      write_energy: 2.36 pJ/bit'
# LocalBuffer: 1024*1024*4*8 bits = 4 MiB, spatial Z fanout 4.
want tpu.yaml LocalBuffer '      capacity: 4194304 B'
want tpu.yaml LocalBuffer '      instances: 4'
want tpu.yaml LocalBuffer '      write_energy: 0.293 pJ/bit'
# Register: `weight.bits_per_value if weight else 0`, and it keeps weight:
# 16 bits = 2 B, under 4 x 128 x 128 fanouts.
want tpu.yaml Register '      capacity: 2 B'
want tpu.yaml Register '      instances: 65536'
# MAC: the most instances, the matrix unit: [4 * 128, 128]; ScalarUnit,
# 1.05e9 * 128 per second on each of 4: 128 per cycle of 1.05 GHz.
want tpu.yaml MAC '      shape: [512, 128]'
want tpu.yaml ScalarUnit '      pes: 4'
grep -q '^      ops: {macc: 128, add: 128,' tpu.yaml || fail "ScalarUnit rate"
grep -q -x '    macc: 0.084 pJ' tpu.yaml || fail "MAC energy 0.084e-12 J"
for n in 'leak_power read, not modelled' 'area read, not modelled' \
  'tensors read, not modelled' 'enabled read, not modelled' \
  "ScalarUnit's energy per operation (0 pJ) is not modelled" \
  'fusion level: GlobalBuffer'; do
  grep -q "^# note: .*$n" tpu.yaml || fail "tpu note '$n'"
done

# ---- nvdla ----
"$M" import accelforge-arch "$A/nvdla.yaml" --out nvdla.yaml ||
  fail "import accelforge-arch nvdla"
grep -q -x '  clock: 1 GHz' nvdla.yaml || fail "nvdla clock: MAC 1e9/s"
want nvdla.yaml MainMemory '      bandwidth: 38.4 GB/s'
want nvdla.yaml GlobalBuffer '      capacity: 65536 B'
want nvdla.yaml GlobalBuffer '      read_bandwidth: 512 GB/s'
want nvdla.yaml GlobalBuffer '      write_bandwidth: 128 GB/s'
want nvdla.yaml GlobalBuffer '      read_energy: 0.249 pJ/bit'
want nvdla.yaml Register '      instances: 6144'
want nvdla.yaml MAC '      shape: [32, 192]'
grep -q "^# note: Register: energy 0 pJ per bit from its class Dummy" \
  nvdla.yaml || fail "nvdla: the Dummy class noted"
grep -q "^# note: Register: throughput unlimited from its class Dummy" \
  nvdla.yaml || fail "nvdla: the Dummy's throughput noted"

# ---- eyeriss and simba: figures from their component classes ----
# Their files leave energies and throughputs to hwcomponents' models; the
# translation takes each class's published figure (docs/compat.md), one
# note per figure.
"$M" import accelforge-arch "$A/eyeriss.yaml" --out eyeriss.yaml ||
  fail "import accelforge-arch eyeriss"
# LPDDR4 (hwcomponents-cacti's table): 8 pJ/bit; 50 * 2^20 accesses/s of
# 64 bits = 3355443200 bits/s = 0.4194304 GB/s, reads and writes alike
# (AccelForge's default total_latency: one port).
want eyeriss.yaml MainMemory '      bandwidth: 0.4194304 GB/s'
want eyeriss.yaml MainMemory '      read_energy: 8 pJ/bit'
want eyeriss.yaml MainMemory '      write_energy: 8 pJ/bit'
# GlobalBuffer: 1024 * 1024 bits = 128 KiB; 32 actions of 64 bits per
# cycle at 200 MHz = 51.2 GB/s; SmartBufferSRAM after Horowitz: 20 pJ per
# 64 bits at 32 KB, 100 at 1 MB, 128 KB = 2/5 of the way in log size:
# 20 * 5^0.4 = 38.073 pJ / 64 = 0.59489 pJ/bit.
want eyeriss.yaml GlobalBuffer '      capacity: 131072 B'
want eyeriss.yaml GlobalBuffer '      bandwidth: 51.2 GB/s'
want eyeriss.yaml GlobalBuffer '      read_energy: 0.5948918558 pJ/bit'
# A 24 B scratchpad, below Horowitz's smallest SRAM: its 10 pJ per 64
# bits (0.15625 pJ/bit); throughput unlimited (CACTI's, not run).
want eyeriss.yaml InputScratchpad '      capacity: 24 B'
want eyeriss.yaml InputScratchpad '      instances: 168'
want eyeriss.yaml InputScratchpad '      write_energy: 0.15625 pJ/bit'
sed -n '/- name: InputScratchpad$/,/- name:/p' eyeriss.yaml |
  grep -q bandwidth && fail "eyeriss: a scratchpad's bandwidth is unlimited"
# IntMAC (Aladdin at 40 nm): 0.21 pJ * 16/32 + 12.68 pJ * (8/32)^2 =
# 0.105 + 0.7925 = 0.8975 pJ; the file's 200 MHz; 14 x 12 PEs.
grep -q -x '  clock: 0.2 GHz' eyeriss.yaml || fail "eyeriss clock"
grep -q -x '    macc: 0.8975 pJ' eyeriss.yaml || fail "eyeriss IntMAC energy"
want eyeriss.yaml MAC '      shape: [14, 12]'
for n in 'MainMemory: energy 8 pJ per bit from its class LPDDR4' \
  'MainMemory: throughput 3355443200 bits/s per instance from its class LPDDR4' \
  'InputScratchpad: throughput unlimited from its class SmartBufferSRAM' \
  'MAC: energy 0.8975 pJ per operation from its class IntMAC' \
  'MAC: multiplier 8 bits, adder 16 bits' \
  'GlobalBuffer: extra_attributes_for_component_model read, not modelled' \
  'arch: extra_attributes_for_all_component_models read, not modelled'; do
  grep -q "^# note: $n" eyeriss.yaml || fail "eyeriss note '$n'"
done
# Without its widths, IntMAC's are the word's 16 bits: 0.21 pJ * 16/32 +
# 12.68 pJ * (16/32)^2 = 0.105 + 3.17 = 3.275 pJ.
sed '/multiplier_width: 8, adder_width: 16/d' "$A/eyeriss.yaml" >wide.yaml
"$M" import accelforge-arch wide.yaml --out wide_ours.yaml ||
  fail "import eyeriss without the MAC's widths"
grep -q -x '    macc: 3.275 pJ' wide_ours.yaml || fail "IntMAC at 16 bits"
grep -q "^# note: MAC: multiplier 16 bits, adder 16 bits (the word's" \
  wide_ours.yaml || fail "IntMAC's widths noted as the word's"
grep -q '^# note: GlobalBuffer: throughput' eyeriss.yaml &&
  fail "eyeriss: GlobalBuffer's throughput is the file's total_latency"
grep -q '^# note: .*component_class read' eyeriss.yaml &&
  fail "eyeriss: every component_class gives a figure"
"$M" import accelforge-arch "$A/simba.yaml" --out simba.yaml ||
  fail "import accelforge-arch simba"
# No throughput in the file: the clock is Aladdin's 1 ns cycle; 16 PEs
# of 8 x 8 MACs: [16 * 8, 8]. 64 KB: 1/5 of the way from 32 KB to 1 MB:
# 20 * 5^0.2 = 27.595 pJ / 64 = 0.43117 pJ/bit; 32 KB: 20 / 64.
grep -q -x '  clock: 1 GHz' simba.yaml || fail "simba clock: IntMAC's 1e9/s"
want simba.yaml MAC '      shape: [128, 8]'
want simba.yaml GlobalBuffer '      read_energy: 0.4311655192 pJ/bit'
want simba.yaml WeightBuffer '      read_energy: 0.3125 pJ/bit'
want simba.yaml Register '      instances: 1024'
grep -q "^# note: MAC: throughput 1000000000 operations/s per instance from its class IntMAC" \
  simba.yaml || fail "simba: the clock noted"

# ---- all four price Mamba-1, loaded directly and as imported alike ----
for f in tpu_v4i nvdla eyeriss simba; do
  "$M" eval mamba1 --arch "$A/$f.yaml" --design unfused --json \
    >"$f.json" 2>"$f.notes" || fail "eval mamba1 --arch $f.yaml"
  grep -q "^$A/$f.yaml: note: word: 2 B assumed" "$f.notes" ||
    fail "$f: notes on stderr: $(cat "$f.notes")"
done
grep -q "^$A/eyeriss.yaml: note: OutputScratchpad: energy 0.15625 pJ per bit from its class SmartBufferSRAM" \
  eyeriss.notes || fail "eyeriss: class notes on stderr: $(cat eyeriss.notes)"
"$M" eval mamba1 --arch nvdla.yaml --design unfused --json >nvdla_imp.json \
  2>/dev/null || fail "the imported nvdla loads"
$PY - tpu_v4i.json nvdla.json nvdla_imp.json eyeriss.json simba.json \
  <<'PYEOF' || fail "Mamba-1 figures"
import json, sys
tpu, nv, imp, eye, sim = (json.load(open(f)) for f in sys.argv[1:6])
def close(a, b, what):
    assert abs(a - b) <= 1e-9 * abs(b), (what, a, b)
def level(d, name):
    return next(l for l in d["levels"] if l["name"] == name)
def einsum(d, name):
    return next(e for e in d["einsums"] if e["einsum"] == name)
# The levels as the file gives them (bytes, bytes/s).
g = level(tpu, "GlobalBuffer")
assert g["capacity_bytes"] == 128 * 2**20 and g["instances"] == 1, g
close(g["read_bandwidth_bytes_per_s"], 2048e9, "tpu GLB read")
close(g["write_bandwidth_bytes_per_s"], 1024e9, "tpu GLB write")
r = level(tpu, "Register")
assert r["capacity_bytes"] == 2 and r["instances"] == 65536, r
close(level(nv, "MainMemory")["bandwidth_bytes_per_s"], 38.4e9, "nvdla DRAM")
# Energies: bytes x the file's joules per bit x 8.
for d, pj in ((tpu, 7.03), (nv, 7.03)):
    m = level(d, "MainMemory")
    close(m["energy_j"], (m["read_bytes"] + m["write_bytes"]) * pj * 8e-12,
          "DRAM energy")
g = level(tpu, "GlobalBuffer")
close(g["energy_j"], g["read_bytes"] * 1.88 * 8e-12 +
      g["write_bytes"] * 2.36 * 8e-12, "tpu GLB energy")
mac = next(c for c in nv["components"] if c["name"] == "MAC")
close(mac["energy_j"], nv["totals"]["ops"] * 0.084e-12, "nvdla MAC energy")
# Latency: nvdla's LEX is bound by its DRAM traffic at 38.4 GB/s;
# tpu's TTX (B*I*D*ED = 64*2048*2048*1024 = 2^38 MACs) by 512 x 128
# MACs at 1.05 GHz.
lex = einsum(nv, "LEX")
assert lex["bound"] == "MainMemory", lex["bound"]
close(lex["memory_s"], (lex["dram_read_bytes"] + lex["dram_write_bytes"])
      / 38.4e9, "nvdla LEX")
ttx = einsum(tpu, "TTX")
assert ttx["ops"] == {"macc": 2.0**38}, ttx["ops"]
close(ttx["compute_s"], 2**38 / (512 * 128 * 1.05e9), "tpu TTX")
# eyeriss and simba, priced from their classes: LPDDR4's 8 pJ per bit
# and 0.4194304 GB/s, IntMAC's 0.8975 pJ per MAC, SRAM per Horowitz.
for d in (eye, sim):
    m = level(d, "MainMemory")
    close(m["bandwidth_bytes_per_s"], 50 * 2**20 * 64 / 8, "LPDDR4 rate")
    close(m["energy_j"], (m["read_bytes"] + m["write_bytes"]) * 8 * 8e-12,
          "LPDDR4 energy")
    mac = next(c for c in d["components"] if c["name"] == "MAC")
    close(mac["energy_j"], d["totals"]["ops"] * 0.8975e-12, "IntMAC")
g = level(eye, "GlobalBuffer")
close(g["energy_j"], (g["read_bytes"] + g["write_bytes"]) * 8e-12 *
      20 * 5**0.4 / 64, "eyeriss GLB energy")
close(g["bandwidth_bytes_per_s"], 32 * 64 / 8 * 200e6, "eyeriss GLB rate")
w = level(sim, "WeightBuffer")
assert w["instances"] == 16, w
close(w["energy_j"], (w["read_bytes"] + w["write_bytes"]) * 8e-12 * 20 / 64,
      "simba WeightBuffer energy")
# Latency: eyeriss's LEX is bound by LPDDR4's 0.4194304 GB/s; simba's TTX
# computes its 2^38 MACs on 128 x 8 MACs at IntMAC's 1 GHz (eyeriss's 14
# x 12 PEs do not divide its powers of two: no closed form).
lex = einsum(eye, "LEX")
assert lex["bound"] == "MainMemory", lex["bound"]
close(lex["memory_s"], (lex["dram_read_bytes"] + lex["dram_write_bytes"])
      / (50 * 2**20 * 64 / 8), "eyeriss LEX")
close(einsum(sim, "TTX")["compute_s"], 2**38 / (128 * 8 * 1e9), "simba TTX")
# The imported file prices as the AccelForge file does.
close(imp["totals"]["latency_s"], nv["totals"]["latency_s"], "import")
close(imp["totals"]["energy_j"], nv["totals"]["energy_j"], "import energy")
PYEOF

# ---- a study of an AccelForge architecture ----
# sweep studies the file as eval loads it: its parameter paths name the
# translation's fields (import's output), and its notes go to stderr. A
# point prices as eval prices the translation with that value written in.
cat >study.yaml <<EOF
study:
  name: af
  cascades:
    - {spec: mamba1, models: [mamba-130m]}
  settings:
    B: 1
  architectures: [$A/tpu_v4i.yaml]
  parameters:
    buffer:
      memory[fusion].capacity: [1 MiB, 4 MiB]
  designs: [full]
  phases: [prefill]
  objectives: [latency, energy]
EOF
"$M" sweep study.yaml --out swept >sweep.out 2>sweep.notes ||
  fail "sweep of an AccelForge architecture: $(cat sweep.notes)"
grep -q "^$A/tpu_v4i.yaml: note: word: 2 B assumed" sweep.notes ||
  fail "sweep: the translation's notes on stderr: $(cat sweep.notes)"
sed 's/^      capacity: 134217728 B$/      capacity: 4194304 B/' tpu.yaml \
  >tpu4.yaml
"$M" eval mamba1 --model mamba-130m --set B=1 --arch tpu4.yaml \
  --design full --json >tpu4.json 2>/dev/null || fail "eval tpu4.yaml"
$PY - swept/points.csv tpu4.json <<'PYEOF' || fail "the study's point"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, rows
row = next(r for r in rows if r["memory[fusion].capacity"] == "4 MiB")
t = json.load(open(sys.argv[2]))["totals"]
for k in ("latency_s", "energy_j"):
    assert abs(float(row[k]) - t[k]) <= 1e-9 * t[k], (k, row[k], t[k])
PYEOF

# ---- what cannot be translated, at its line and column ----
# A class mambalaya has no figures for (hwcomponents' HBM2), and a class
# of a memory on a compute unit, in eyeriss's lines.
sed 's/component_class: LPDDR4/component_class: HBM2/' "$A/eyeriss.yaml" \
  >hbm.yaml
refused "hbm.yaml:9:22: error: MainMemory's read energy comes from AccelForge's component model 'HBM2' (hwcomponents), which mambalaya does not run and has no figure for" \
  "$M" eval mamba1 --arch hbm.yaml
sed 's/component_class: IntMAC/component_class: LPDDR4/' "$A/eyeriss.yaml" \
  >mac.yaml
refused "mac.yaml:54:22: error: MAC's compute energy would come from its class, but 'LPDDR4' is not a !Compute node's" \
  "$M" eval mamba1 --arch mac.yaml
# simple and snowcat are Jinja templates (rendered: their lines are the
# rendering's, import --rendered); their off-chip memory and MAC have
# unlimited throughputs (their energies, 1 J per bit, count accesses).
refused "simple.yaml (rendered):15:19: error: MainMemory, off-chip memory, has an unlimited throughput" \
  "$M" eval mamba1 --arch "$A/simple.yaml"
refused "snowcat.yaml (rendered):24:22: error: MAC's compute throughput is inf" \
  "$M" eval mamba1 --arch "$A/snowcat.yaml"
"$M" import accelforge-arch "$A/simple.yaml" --rendered | sed -n 15p |
  grep -q -x '      throughput: inf' || fail "simple rendered line 15"
refused "simple.yaml: error: --set NOT_READ: the template does not read it" \
  "$M" import accelforge-arch "$A/simple.yaml" --set NOT_READ=1
refused "not an AccelForge architecture: it has no 'arch' section" \
  "$M" import accelforge-arch "$ROOT/archs/eyeriss.yaml"

# Bad input in a file of the examples' shape (nvdla's lines).
bad() { # NAME SED-SCRIPT: nvdla.yaml edited, as NAME
  sed "$2" "$A/nvdla.yaml" >"$1"
}
bad key.yaml 's/^    size: 1024\*64\*8 # 64 kB/    sise: 1024*64*8/'
refused "key.yaml:18:5: error: unknown key 'sise' in a !Memory node (did you mean 'size'?" \
  "$M" eval mamba1 --arch key.yaml
bad expr.yaml 's/^    size: 1024\*64\*8 # 64 kB/    size: 1024*64*/'
refused "expr.yaml:18:11: error: size: expected a number, a name or '(' at column 9 of '1024\*64\*'" \
  "$M" eval mamba1 --arch expr.yaml
bad tag.yaml 's/^  - !Container/  - !Toll/'
refused "tag.yaml:27:5: error: node 'ProcessingElement' is a !Toll node" \
  "$M" eval mamba1 --arch tag.yaml
bad lat.yaml 's/^    total_latency: max.*/    total_latency: min(a.n_calls)/'
refused "lat.yaml:19:20: error: total_latency 'min(a.n_calls)' is not one the translation reads" \
  "$M" eval mamba1 --arch lat.yaml
bad port.yaml '/^    total_latency: max/d'
refused "port.yaml:16:5: error: GlobalBuffer reads at 4.096e+12 bits/s and writes at 1.024e+12 on one port" \
  "$M" eval mamba1 --arch port.yaml
bad act.yaml 's/{name: compute,/{name: compoot,/'
refused "act.yaml:43:14: error: unknown action 'compoot' (expected compute)" \
  "$M" eval mamba1 --arch act.yaml
# An error the architecture loader finds in the translation points at the
# line of the AccelForge file it came from: 7.03e-3 J per bit.
bad range.yaml 's/name: read, energy: 7.03e-12/name: read, energy: 7.03e-3/'
refused "range.yaml:12:28: error: read_energy '7030000000 pJ/bit' is out of range" \
  "$M" eval mamba1 --arch range.yaml
# A fanout at the fusion level: instances would split its tile.
bad fan.yaml 's/^    total_latency: max.*/    spatial: [{name: X, fanout: 2}]\n    total_latency: max(a.n_calls \/ a.throughput for a in actions)/'
refused "fan.yaml:19:14: error: memory level 'GlobalBuffer' is not inside the fusion level 'GlobalBuffer'" \
  "$M" eval mamba1 --arch fan.yaml

finish accelforge_arch
