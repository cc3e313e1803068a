#!/bin/sh
# --trace FILE on eval and search: the priced plan's timeline as Chrome
# trace-event JSON (what Perfetto opens): valid JSON of traceEvents, a
# named track per compute unit, per memory level and for the groups, a
# complete ("X") slice per Einsum, per transfer and per group; the
# groups' slices add up to the latency and the Einsums end at it
# (sequential), every Einsum once.
. "$(dirname "$0")/lib/harness.sh"
PY=python3
"$M" eval mamba1 --design best --json --trace best.json >eval.json ||
  fail "eval --trace"
"$M" eval mamba2 --arch h100 --design unfused --phase decode --json \
  --trace unfused.json >eval2.json || fail "eval --trace, mamba2 on h100"
"$M" search mamba1 --json --trace search.json >search.json.out ||
  fail "search --trace"
$PY - <<'PYEOF' || fail "the traces"
import json
for trace, result, n in (("best.json", "eval.json", 24), ("unfused.json", "eval2.json", 32),
                         ("search.json", "search.json.out", 24)):
    t = json.load(open(trace))
    r = json.load(open(result))
    ev = t["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "fusion groups" in names.values(), names
    x = [e for e in ev if e["ph"] == "X"]
    for e in x:
        assert e["dur"] >= 0 and e["ts"] >= 0 and e["tid"] in names and e["pid"] == 1, e
    ein = [e for e in x if e["cat"] == "einsum"]
    grp = [e for e in x if e["cat"] == "group"]
    assert len(ein) == n, (trace, len(ein))
    lat = t["metadata"]["latency_us"]
    want = (r["totals"]["latency_s"] if "totals" in r else r["found"]) * 1e6
    assert abs(lat - want) <= 1e-9 * want, (lat, want)
    assert abs(sum(g["dur"] for g in grp) - lat) <= 1e-6 * lat, trace
    assert abs(max(e["ts"] + e["dur"] for e in ein) - lat) <= 1e-6 * lat, trace
    assert any(e["cat"] == "transfer" for e in x)
PYEOF
# An output that is an input is refused.
refused "refusing to write .*mamba1.yaml: it is the input" "$M" eval "$ROOT/specs/mamba1.yaml" --trace "$ROOT/specs/mamba1.yaml"
finish trace
