#!/bin/sh
# The loop nests `export timeloop` writes, and the counts the model gives
# for them, for the cases bench/timeloop/compare.sh runs through Timeloop
# v3.0.3 (CI has no Timeloop: these are its counts, derived by hand below,
# which Timeloop gave too; bench/timeloop/README.md). Counts in words
# (2 B): per level and tensor, read and written.
set -u
. tests/e2e/lib/harness.sh
B=$ROOT/bench/timeloop

# check CASE ARCH "TARGET KIND FACTORS"... -- "LEVEL TENSOR READ WRITE"...
check() {
  spec=$1 arch=$2
  shift 2
  "$M" export timeloop "$B/$spec.yaml" --arch "$B/$arch.yaml" \
    --out "$spec-$arch" >/dev/null 2>err ||
    { fail "export $spec on $arch: $(cat err)"; return; }
  "$M" eval "$B/$spec.yaml" --arch "$B/$arch.yaml" --design unfused \
    --json >"$spec-$arch.json" 2>err ||
    { fail "eval $spec on $arch: $(cat err)"; return; }
  python3 - "$spec-$arch" "$@" <<'PYEOF' || fail "$spec on $arch"
import glob, json, sys, yaml
d, args = sys.argv[1], sys.argv[2:]
cut = args.index("--")
m = yaml.safe_load(open(glob.glob(d + "/01_*.mapping.yaml")[0]))["mapping"]
got = {(x["target"], x["type"]): x["factors"] for x in m}
for want in args[:cut]:
    target, kind, factors = want.split(" ", 2)
    assert got.pop((target, kind)) == factors, (want, got)
assert all(t.endswith("=1") for f in got.values() for t in f.split()), \
    ("factors other than 1 not asserted", got)
levels = json.load(open(d + ".json"))["einsums"][0]["levels"]
ours = {(l["level"], t): (b["read_bytes"] / 2, b["write_bytes"] / 2)
        for l in levels for t, b in l["tensors"].items()}
for want in args[cut + 1:]:
    level, tensor, r, w = want.split()
    assert ours.pop((level, tensor)) == (float(r), float(w)), (want, ours)
assert not ours, ("not asserted", ours)
PYEOF
}

# A GEMM whose sizes do not divide its tiles, C[m,n] = A[m,k] B[k,n] at
# 37 x 29 x 20 on three.yaml (288 words of registers). Everything fits
# the buffer: one pass from DRAM. The registers hold 16 x 16 of C with
# one k (16 + 16 + 256 = 288 words), the buffer's loops m (3: 16, 16, 5),
# n (2: 16, 13), k (20) innermost -- Timeloop's leftovers M=16,5 N=16,13.
# A is fetched again for each n (2 x 740), B for each m (3 x 580), C once
# (its reduction k innermost). The MAC reads each operand per point,
# 37 x 29 x 20 = 21460, and reads back the partial sums of C but the
# first (21460 - 1073) plus its drain up (1073).
check gemm_odd three "Registers temporal M=16,5 N=16,13 K=1" \
  "Buffer temporal M=3 N=2 K=20" -- \
  "DRAM A 740 0" "DRAM B 580 0" "DRAM C 0 1073" \
  "Buffer A 1480 740" "Buffer B 1740 580" "Buffer C 1073 1073" \
  "Registers A 21460 1480" "Registers B 21460 1740" "Registers C 21460 21460"

# The fusion level itself tiled: C[m,n] = A[m,k] B[k,n] at 48 x 80 x 56
# on small.yaml (a 512-word buffer, 64 words of registers). DRAM steps m
# (3 tiles of 16), n (5 of 16), k (7 of 8): A 16x8 + B 8x16 + C 16x16 =
# 512 words. A is fetched again for each n (5 x 2688), B for each m
# (3 x 4480), C written once (k innermost: its partial sums stay in the
# buffer). The registers tile within each buffer tile, m (4 of 4) then n
# (8 of 2), k whole (A 4x8 + B 8x2 + C 4x2 = 56 words): one nest m3 n5 k7
# | m4 n8. A's last loop is the inner m, n (5) before it: 5 x 2688. B's
# is the inner n, both m loops before it: 12 x 4480. C's is the inner n,
# with the buffer's k (7) before it: its tiles cross 7 times (7 x 3840
# written, 6 x 3840 partial sums read back, + the 3840 sent up) -- what a
# level tiled alone, over the whole space, would not count. The MAC:
# 48 x 56 x 80 = 215040 points.
check gemm48 small "DRAM temporal M=3 N=5 K=7" \
  "Buffer temporal M=4 N=8 K=1" "Registers temporal M=4 N=2 K=8" -- \
  "DRAM A 13440 0" "DRAM B 13440 0" "DRAM C 0 3840" \
  "Buffer A 13440 13440" "Buffer B 53760 13440" "Buffer C 26880 26880" \
  "Registers A 215040 13440" "Registers B 215040 53760" \
  "Registers C 238080 238080"

# A strided convolution: Outputs[k,p,q] = Inputs[c,2p+r,2q+s] W[k,c,r,s],
# 8 x 4 x 3 x 3 filters over 4 x 13 x 13, 6 x 6 outputs. The registers
# hold k 8, p 6, c 4, s 3 (Inputs 4 x 11 x 3 = 132, W 96, Outputs 48:
# 276 words); the buffer steps r (3) then q (6). W is indexed by r, the
# outer loop: fetched once (288). Outputs, indexed by q only, is written
# once per r (3 x 288 = 864) and read back twice (576) plus its drain
# (288). The input window keeps its halo (676, once; Timeloop refetches
# it: README.md, "By design"). Points 8 x 6 x 6 x 4 x 3 x 3 = 10368.
check conv_stride three "Registers temporal K=8 P=6 Q=1 C=4 R=1 S=3" \
  "Buffer temporal K=1 P=1 Q=6 C=1 R=3 S=1" -- \
  "DRAM Inputs 676 0" "DRAM Weights 288 0" "DRAM Outputs 0 288" \
  "Buffer Inputs 676 676" "Buffer Weights 288 288" "Buffer Outputs 864 864" \
  "Registers Inputs 10368 676" "Registers Weights 10368 288" \
  "Registers Outputs 10944 10944"

# A depthwise convolution: Outputs[c,p,q] = Inputs[c,p+r,q+s] W[c,r,s],
# 6 channels of 3 x 3 over 10 x 10. One channel at a time from DRAM
# (C=6 there), which the registers hold whole (100 + 9 + 64 = 173
# words): every tensor moves once, 600, 54 and 384 words; points
# 6 x 8 x 8 x 9 = 3456.
check depthwise three "DRAM temporal C=6 P=1 Q=1 R=1 S=1" \
  "Registers temporal C=1 P=8 Q=8 R=3 S=3" -- \
  "DRAM Inputs 600 0" "DRAM Weights 54 0" "DRAM Outputs 0 384" \
  "Buffer Inputs 600 600" "Buffer Weights 54 54" "Buffer Outputs 384 384" \
  "Registers Inputs 3456 600" "Registers Weights 3456 54" \
  "Registers Outputs 3456 3456"

# The 32 x 32 x 32 GEMM on four levels (four.yaml: a 16 KiB buffer, four
# 512-word scratchpads, 32 words of registers each). The buffer steps n
# (8 tiles of 4) and splits m over the four scratchpads (8 rows each);
# each scratchpad steps m (2 of 4) then k (16 of 2) for its registers
# (8 + 8 + 16 = 32 words). To the scratchpads: A (8 x 32 per instance)
# once, as no loop indexes it there (4 x 256 = 1024); B whole to each
# instance, no multicast (4 x 1024); C once (1024). To the registers,
# over the nest: A again for each n above (8 x 1024), B for each m there
# (2 x 4096), C once, k inner; points 32768.
check gemm four "Buffer temporal M=1 N=8 K=1" "Buffer spatial M=4 N=1 K=1" \
  "Scratch temporal M=2 N=1 K=16" "Registers temporal M=4 N=4 K=2" -- \
  "DRAM A 1024 0" "DRAM B 1024 0" "DRAM C 0 1024" \
  "Buffer A 1024 1024" "Buffer B 4096 1024" "Buffer C 1024 1024" \
  "Scratch A 8192 1024" "Scratch B 8192 4096" "Scratch C 1024 1024" \
  "Registers A 32768 8192" "Registers B 32768 8192" \
  "Registers C 32768 32768"

# A reduction over two ranks with names of two letters, S[b] = X[b,ed,st]
# W[ed,st] summed over ed and st (6 x 20 x 12), whose dimensions Timeloop
# names B, E and S. The registers hold b 6, ed 3, st 12 (216 + 36 + 6 =
# 258 words; ed 4 would be 342); the buffer steps ed (7: 3 ... 3, 2).
# X and W move once (1440, 240); S stays in the registers through the
# reduction (6). Points 1440.
check reduce2 three "Registers temporal B=6 E=3,2 S=12" \
  "Buffer temporal B=1 E=7 S=1" -- \
  "DRAM X 1440 0" "DRAM W 240 0" "DRAM S 0 6" \
  "Buffer X 1440 1440" "Buffer W 240 240" "Buffer S 6 6" \
  "Registers X 1440 1440" "Registers W 1440 240" "Registers S 1440 1440"
grep -q "^# dimensions (one letter each, as Timeloop's mappings name them): B = b, E = ed, S = st$" \
  reduce2-three/01_S.problem.yaml || fail "the renaming is said"

# The GEMM through a staging level (staged.yaml: DRAM -> 4 KiB of L2 -> a
# 2 KiB buffer, the fusion level -> 288 words of registers). The buffer
# holds m 16, n 8, all of k (512 + 256 + 128 = 896 of its 1024 words):
# DRAM steps m (2) then n (4), so A moves once (1024), B once per m
# (2048), C once; L2 passes each of them through, in and out. The
# registers hold m 16, n 8, k 4 (64 + 32 + 128 words), the buffer steps
# k (8) within each DRAM step: A again for each n above (4 x 1024), B for
# each m (2 x 1024), C once, its reduction inside.
check gemm staged "DRAM temporal M=2 N=4 K=1" "Buffer temporal M=1 N=1 K=8" \
  "Registers temporal M=16 N=8 K=4" -- \
  "DRAM A 1024 0" "DRAM B 2048 0" "DRAM C 0 1024" \
  "L2 A 1024 1024" "L2 B 2048 2048" "L2 C 1024 1024" \
  "Buffer A 4096 1024" "Buffer B 2048 2048" "Buffer C 1024 1024" \
  "Registers A 32768 4096" "Registers B 32768 2048" \
  "Registers C 32768 32768"

# Timeloop names a dimension with one letter: an Einsum of 27 variables
# (16 of the output, 11 summed) is refused before anything is written.
python3 - <<'PYEOF'
a = [chr(65 + i) for i in range(16)]
b = [chr(65 + i) for i in range(16, 26)] + ["AA"]
low = lambda r: ", ".join(n.lower() for n in r)
open("d27.yaml", "w").write(
    "shape: {%s}\neinsum:\n  declaration: {X: [%s], W: [%s], Y: [%s]}\n"
    "  expressions:\n    - \"Y[%s] = X[%s] * W[%s] :: sum(%s)\"\n" % (
        ", ".join(n + ": 2" for n in a + b), ", ".join(a), ", ".join(b),
        ", ".join(a), low(a), low(a), low(b), low(b)))
PYEOF
refused "export: Y's Einsum has 27 dimensions: Timeloop names each with one letter, 26 at most" \
  "$M" export timeloop d27.yaml --out d27
[ -e d27 ] && fail "d27 written"

# An access no coordinate of which varies (a scalar S[], BTX[D] at a
# constant: fuzz_export's crash of 2026-11-29) is a data space of no
# coordinate, `projection: []`, and loads back as S[].
cat >scalar.yaml <<'EOF2'
shape: {I: 8, D: 4}
einsum:
  declaration: {X: [I], S: [], BTX: [D], Y: [I], T: []}
  expressions:
    - Y[i] = X[i] * S[] + BTX[D]
    - "T[] = Y[i] :: sum(i)"
EOF2
"$M" export timeloop scalar.yaml --out scalar >/dev/null 2>err ||
  fail "export scalar: $(cat err)"
for p in scalar/01_Y.problem.yaml scalar/02_T.problem.yaml; do
  "$M" import timeloop "$p" >"$p.spec.yaml" 2>err || fail "import $p: $(cat err)"
done
python3 - <<'PYEOF' || fail "scalar data spaces"
import yaml
y = yaml.safe_load(open("scalar/01_Y.problem.yaml"))["problem"]["shape"]
assert {d["name"]: d["projection"] for d in y["data-spaces"]} == \
    {"X": [[["I"]]], "S": [], "BTX": [], "Y": [[["I"]]]}, y
t = yaml.safe_load(open("scalar/02_T.problem.yaml"))["problem"]["shape"]
assert {d["name"]: d["projection"] for d in t["data-spaces"]} == \
    {"Y": [[["I"]]], "T": []}, t
s = yaml.safe_load(open("scalar/01_Y.problem.yaml.spec.yaml"))["einsum"]
assert s["declaration"]["S"] == [] and s["declaration"]["BTX"] == [], s
assert s["expressions"] == ["Y[i] = X[i] * S[] * BTX[]"], s
assert yaml.safe_load(open("scalar/02_T.problem.yaml.spec.yaml"))["einsum"][
    "expressions"] == ["T[] = Y[i] :: sum(i)"]
PYEOF

# A negative coefficient (-f: fuzz_export's crash of 2026-11-30) is
# written as its magnitude, the same footprint walked in reverse, and
# said: Timeloop's coefficients are positive whole numbers.
cat >negative.yaml <<'EOF2'
shape: {I: 8, F: 4}
einsum:
  declaration: {X: [I, F], W: [F], Y: [I]}
  expressions:
    - "Y[i] = X[i, -f] * W[f] :: sum(f)"
EOF2
"$M" export timeloop negative.yaml --out negative >/dev/null 2>err ||
  fail "export negative: $(cat err)"
"$M" import timeloop negative/01_Y.problem.yaml >/dev/null 2>err ||
  fail "import negative: $(cat err)"
grep -q "^# a coefficient of -1 is written as 1 " negative/01_Y.problem.yaml ||
  fail "negative coefficient not said"

[ "$fails" -eq 0 ]
