#!/bin/sh
# A `binding:` that puts a matrix operation on a unit without the matrix
# role is warned about, with what it costs (issue 33): the Einsum, the
# unit, its compute there and on the fastest unit able to run it, on
# stderr and in --json. tests/archs/bound_av.yaml binds AV to a 256-PE
# vector array: right for FuseMax's 1-pass attention (AV = RNV / RD,
# elementwise: no warning), the A·V product of the 3-pass one.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3
arch=tests/archs/bound_av.yaml

# The 3-pass attention: AV's 2^37 MACCs (B=8, H=16, F=64, P=M=4096 at
# the spec's sizes) on 256 PEs at 1.75 GHz take 0.3068 s (+ 6 cycles of
# pipeline), on the 256x256 array 1/256 of it.
"$M" eval fusemax_3pass --arch "$arch" --json >"$tmp/e.json" 2>"$tmp/err" ||
  fail "eval: exit $?"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "one warning expected: $(cat "$tmp/err")"
grep -q "^$arch:[0-9]*:[0-9]*: warning: binding puts AV, a matrix operation, on array1d (vector role): 0.3068 s of compute, against 0.001198 s on array2d (matrix role), the fastest unit able to run it$" \
  "$tmp/err" || fail "warning: $(cat "$tmp/err")"
$PY - "$tmp/e.json" <<'PYEOF' || fail "--json warnings"
import json, sys
d = json.load(open(sys.argv[1]))
w = d["warnings"]
assert len(w) == 1, w
w = w[0]
av = [e for e in d["einsums"] if e["einsum"] == "AV"][0]
macc = av["ops"]["macc"]
assert macc == 2**37, macc  # 8 * 16 * 64 * 4096 * 4096
clock, pipe = 1.75e9, 6
assert (w["kind"], w["einsum"], w["unit"], w["role"], w["best_unit"]) == \
    ("binding", "AV", "array1d", "vector", "array2d"), w
assert abs(w["compute_s"] - (macc / (256 * clock) + pipe / clock)) < 1e-12, w
assert abs(w["best_compute_s"] - (macc / (65536 * clock) + pipe / clock)) < 1e-12, w
assert w["file"] == "tests/archs/bound_av.yaml" and w["line"] == 37, w
assert av["unit"] == "array1d"  # the binding holds: it is said, not undone
PYEOF

# The 1-pass attention's AV is elementwise: the binding is right, no word.
"$M" eval fusemax_1pass --arch "$arch" --json >"$tmp/e1.json" 2>"$tmp/err1" ||
  fail "eval 1-pass: exit $?"
[ -s "$tmp/err1" ] && fail "1-pass warned: $(cat "$tmp/err1")"
$PY -c 'import json, sys; assert json.load(open(sys.argv[1]))["warnings"] == []' \
  "$tmp/e1.json" || fail "1-pass --json warnings"

# Without the binding, the rule puts AV on the matrix array: no warning.
"$M" eval fusemax_3pass --json >/dev/null 2>"$tmp/err2" || fail "mambalaya: exit $?"
[ -s "$tmp/err2" ] && fail "mambalaya warned: $(cat "$tmp/err2")"

finish binding.sh
