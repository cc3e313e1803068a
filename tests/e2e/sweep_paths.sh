#!/bin/sh
# Study paths (docs/sweep.md, "Paths"): every example path the docs give
# (docs/sweep.md and docs/architecture.md, in backquotes or as a key of a
# study example) is swept over two values on the first shipped
# architecture that has its field, and some figure moves; one study over
# Mambalaya and the H100 varies both fusion buffers (GlobalBuffer, L2)
# through memory[fusion]; a selector that matches nothing, or several
# levels, or a field another path names, is refused at FILE:LINE:COL.
set -u
. tests/e2e/lib/harness.sh

# The documented paths: `memory...`, `compute...`, `energy...`, `area...`
# ending in a key after the first (not a bare selector such as
# `memory[staging]`, which names no field), `clock`, `word`, and
# the keys of the study examples' parameters.
paths=$(for doc in "$ROOT/docs/sweep.md" "$ROOT/docs/architecture.md"; do
  grep -oE '`((memory|compute|energy|area)((\.[A-Za-z0-9_-]+)|(\[[^]`]*\]))*\.[A-Za-z0-9_-]+|clock|word)`' "$doc" |
    tr -d '`'
  sed -n 's/^ *\(\(memory\|compute\|energy\|area\)[.[][^: ]*\): .*/\1/p' "$doc"
done | sort -u)
count=$(echo "$paths" | wc -l)
[ "$count" -ge 12 ] || fail "only $count example paths found in the docs: $paths"

# Two values for the field at PATH, as an architecture file writes them.
values() {
  case $1 in
  *functional_units*.area) echo "[100 um2, 200 um2]" ;;
  *.capacity) echo "[1 MiB, 2 MiB]" ;;
  *bandwidth) echo "[1 GB/s, 1 TB/s]" ;;
  *_energy) echo "[1 pJ/B, 2 pJ/B]" ;;
  *.port_area) echo "[0.1 mm2/MiB, 0.2 mm2/MiB]" ;;
  memory*.area) echo "[0.3 mm2/MiB, 0.6 mm2/MiB]" ;;
  *.instances) echo "[57, 114]" ;;
  *.shape) echo "[[128, 128], [256, 256]]" ;;
  *.pes) echo "[256, 8192]" ;;
  *.pipeline) echo "[1, 6]" ;;
  *.ops.*) echo "[0.25, 1]" ;;
  energy.*) echo "[1 pJ, 2 pJ]" ;;
  area.interconnect) echo "[10 um2, 25 um2]" ;;
  area.nonlinear) echo "[separate, marca]" ;;
  clock) echo "[1 GHz, 2 GHz]" ;;
  word) echo "[1 B, 2 B]" ;;
  *) echo "" ;;
  esac
}

# study FILE ARCHS PATH VALUES: one mamba-370m layer, prefill and decode.
study() {
  cat >"$1" <<EOF
study:
  name: p
  cascades:
    - {spec: mamba1, models: [mamba-370m]}
  settings: {B: 64}
  architectures: [$2]
  parameters:
    axis:
      $3: $4
  designs: [unfused, ri, full]
  phases: [prefill, decode]
  objectives: [latency, energy]
EOF
}

# Does some figure of points.csv in DIR differ between the two values of
# the parameter, for each architecture? Prints what moved, per arch.
moved() {
  python3 - "$1/points.csv" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
figs = [c for c in rows[0] if c.endswith(("_s", "_j", "_mm2", "_bytes"))]
param = list(rows[0])[list(rows[0]).index("architecture") + 1]
ok = True
for arch in sorted({r["architecture"] for r in rows}):
    by = {}
    for r in rows:
        if r["architecture"] == arch:
            key = (r["design"], r["workload"])
            by.setdefault(key, []).append(r)
    moves = sorted({f for pair in by.values() for f in figs
                    if len({p[f] for p in pair}) > 1})
    errors = [r["error"] for r in rows if r["error"]]
    print(arch, param, ",".join(moves) or "NOTHING", *errors[:1])
    ok = ok and bool(moves) and not errors
sys.exit(0 if ok else 1)
PYEOF
}

n=0
for p in $paths; do
  v=$(values "$p")
  [ -n "$v" ] || { fail "$p: the test has no values for it"; continue; }
  n=$((n + 1))
  done_one=
  for arch in mambalaya h100 eyeriss; do
    study "s$n.yaml" "$arch" "$p" "$v"
    "$M" sweep "s$n.yaml" --out "o$n" >/dev/null 2>"e$n" || continue
    moved "o$n" >"m$n" || fail "$p on $arch moves no figure: $(cat "m$n")"
    done_one=$arch
    break
  done
  [ -n "$done_one" ] || fail "$p: no shipped architecture takes it: $(cat "e$n")"
done
[ "$n" -ge 12 ] || fail "only $n documented paths swept"

# One study, two architectures, two names for the fusion buffer.
study both.yaml "mambalaya, h100" "memory[fusion].capacity" "[1 MiB, 32 MiB]"
"$M" sweep both.yaml --out both >/dev/null || fail "memory[fusion] sweep"
moved both >both.txt || fail "memory[fusion] does not move both: $(cat both.txt)"
grep -q "^mambalaya memory\[fusion\].capacity .*latency_s" both.txt ||
  fail "memory[fusion] on mambalaya: latency does not move: $(cat both.txt)"
grep -q "^h100 memory\[fusion\].capacity .*latency_s" both.txt ||
  fail "memory[fusion] on h100: latency does not move: $(cat both.txt)"
# The same figures as naming each level: GlobalBuffer and L2 at 1 MiB.
study gb.yaml mambalaya "memory.GlobalBuffer.capacity" "[1 MiB]"
study l2.yaml h100 "memory.L2.capacity" "[1 MiB]"
"$M" sweep gb.yaml --out gb >/dev/null && "$M" sweep l2.yaml --out l2 >/dev/null ||
  fail "sweeps by name"
python3 - <<'PYEOF' || fail "memory[fusion] is not the named level"
import csv
both = list(csv.DictReader(open("both/points.csv")))
for arch, d in (("mambalaya", "gb"), ("h100", "l2")):
    named = list(csv.DictReader(open(d + "/points.csv")))
    mine = [r for r in both if r["architecture"] == arch
            and r["memory[fusion].capacity"] == "1 MiB"]
    assert [r["latency_s"] for r in mine] == [r["latency_s"] for r in named], arch
    assert [r["energy_j"] for r in mine] == [r["energy_j"] for r in named], arch
PYEOF

# Refusals, each at the path's line and column in the study.
study st.yaml mambalaya "memory[staging].capacity" "[8 MiB]"
refused "st.yaml:9:7: error: .*no level has the role 'staging' (DRAM dram, GlobalBuffer buffer, Registers registers)" \
  "$M" sweep st.yaml --out st
study pos.yaml mambalaya "memory[3].capacity" "[8 MiB]"
refused "pos.yaml:9:7: error: .*memory\[3\]: there are 3 items" "$M" sweep pos.yaml --out pos
study fu.yaml mambalaya "area.functional_units[fma].area" "[100 um2]"
refused "fu.yaml:9:7: error: .*only memory and compute items are selected by role" \
  "$M" sweep fu.yaml --out fu
study br.yaml mambalaya "memory[fusion.capacity" "[8 MiB]"
refused "br.yaml:9:7: error: .*is not KEY or KEY\[SELECTOR\]" "$M" sweep br.yaml --out br
cat >five.yaml <<'EOF'
architecture:
  name: five
  clock: 1 GHz
  word: 2 B
  memory:
    - {name: DRAM, bandwidth: 100 GB/s, read_energy: 30 pJ/B, write_energy: 30 pJ/B}
    - {name: Buffer, capacity: 8 MiB, fusion: true, read_energy: 10 pJ/B, write_energy: 10 pJ/B}
    - {name: A, capacity: 256 KiB, read_energy: 5 pJ/B, write_energy: 5 pJ/B}
    - {name: B, capacity: 64 KiB, read_energy: 2 pJ/B, write_energy: 2 pJ/B}
    - {name: Regs, capacity: 1 KiB, read_energy: 0.1 pJ/B, write_energy: 0.1 pJ/B}
  compute:
    - {name: pe, role: vector, pes: 64, ops: {macc: 1, add: 1, mul: 1, div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}
  energy: {macc: 1 pJ, add: 1 pJ, mul: 1 pJ, div: 1 pJ, exp: 1 pJ, log: 1 pJ, sqrt: 1 pJ, silu: 1 pJ, max: 1 pJ}
EOF
study amb.yaml five.yaml "memory[level].capacity" "[8 KiB]"
refused "amb.yaml:9:7: error: .*several levels have the role 'level' (.*A level, B level.*): name one, or give its position" \
  "$M" sweep amb.yaml --out amb
study neg.yaml five.yaml "memory[-2].capacity" "[8 KiB, 32 KiB]"
"$M" sweep neg.yaml --out neg >/dev/null || fail "memory[-2] on five levels"
moved neg >neg.txt || fail "memory[-2] (level B) moves no figure: $(cat neg.txt)"
cat >dup.yaml <<'EOF'
study:
  name: dup
  cascades:
    - {spec: mamba1, models: [mamba-370m]}
  architectures: [mambalaya]
  parameters:
    a: {memory.GlobalBuffer.capacity: [8 MiB]}
    b: {"memory[fusion].capacity": [16 MiB]}
EOF
refused "dup.yaml:8:9: error: 'memory\[fusion\].capacity' and 'memory.GlobalBuffer.capacity' (line 7) name one field of mambalaya (memory\[1\].capacity)" \
  "$M" sweep dup.yaml --out dup

finish sweep_paths
