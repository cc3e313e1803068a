#!/bin/sh
# One plan, one price (issue 23): every plan `fuse --json` writes for every
# shipped and test cascade (each strategy, each stitcher), relabelled with
# every strategy name and with "any", is either refused, naming the group
# and the edge its label does not allow, or priced the same in every
# figure as under its own label. Under ASan+UBSan (MAMBALAYA_SANITIZED=1)
# the greedy stitcher's plans only.
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
: "${MAMBALAYA_SANITIZED:=0}"
python3 - "$M" "$tmp" "$MAMBALAYA_SANITIZED" <<'PYEOF' || fail "relabelled plans"
import glob, json, subprocess, sys
m, tmp, sanitized = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
labels = ["unfused", "ri", "ri+rsb", "ri+rsb+rsp", "full", "any"]
stitchers = ["greedy"] if sanitized else ["greedy", "alg1", "global"]
sizes = {"tests/specs/good/teaal_gemm.yaml": ["--set", "K=4", "--set", "M=5",
                                              "--set", "N=6"],
         "tests/specs/good/teaal_conv.yaml": []}

def run(args):
    return subprocess.run([m] + args, capture_output=True, text=True)

def figures(out):
    d = json.loads(out)
    d.pop("inputs", None)
    d.pop("plan", None)
    for k in ("design", "label"):
        d.pop(k, None)
    return d

plans = refused = priced = 0
for spec in sorted(glob.glob("specs/*.yaml") + glob.glob("tests/specs/good/*.yaml")):
    extra = sizes.get(spec, [])
    if run(["eval", spec] + extra).returncode != 0:
        continue  # sizes it does not give (TeAAL's): nothing to price
    for st in labels[:-1]:
        for how in stitchers:
            f = run(["fuse", spec, "--strategy", st, "--stitch", how, "--json"])
            if f.returncode != 0:
                continue  # Algorithm 1 over too many ranks
            plan = json.loads(f.stdout)
            own = plan.get("label", plan["strategy"])
            prices = {}
            for lbl in labels:
                p = dict(plan, strategy=lbl)
                p.pop("label", None)
                path = "%s/p.json" % tmp
                json.dump(p, open(path, "w"))
                e = run(["eval", spec, "--plan", path, "--json"] + extra)
                if e.returncode == 0:
                    prices[lbl] = figures(e.stdout)
                    priced += 1
                else:
                    assert e.returncode == 2, (spec, st, how, lbl, e.stderr)
                    edge = "holds the edge" in e.stderr and \
                        "which strategy '%s' does not allow" % lbl in e.stderr
                    alone = lbl == "unfused" and \
                        "puts each Einsum in a group of its own" in e.stderr
                    assert "group" in e.stderr and (edge or alone), \
                        (spec, st, how, lbl, e.stderr)
                    refused += 1
            assert "any" in prices and "full" in prices, (spec, st, how)
            ref = prices["any"]
            for lbl, fig in prices.items():
                assert fig == ref, (spec, st, how, lbl, "another price")
            plans += 1
assert plans >= (21 if not sanitized else 18), plans
print("relabel: %d plans, %d relabelled prices equal, %d refused" %
      (plans, priced, refused))
PYEOF
finish relabel
