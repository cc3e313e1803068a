"""Compare mambalaya's per-level, per-tensor accesses (eval --json) with
Timeloop's (timeloop-model.stats.txt) for the same mapping.

    python3 compare.py OURS.json timeloop-model.stats.txt WORD_BYTES I [WINDOW]

I is the Einsum's place in OURS (execution order, as `export timeloop`
numbers its files from 1). Ours count bytes read from and written into each level, over all its
instances; Timeloop counts scalar reads, fills and updates per level,
data space and instance (times its instances in use, here). The same
accesses: our reads = Timeloop's reads; our writes = its fills + updates.
One convention differs: we count the read of an output tile a level
sends out to its parent (the drain); Timeloop counts the parent's update
only. So our reads = Timeloop's reads + the parent level's updates.
WINDOW names a tensor read through a sliding window: it may differ by
design (README.md, "By design"), and is marked rather than failed.
Prints one line per level and tensor and exits 1 on any other
difference."""
import json, re, sys

ours = json.load(open(sys.argv[1]))
word = float(sys.argv[3])
einsum = int(sys.argv[4])
window = sys.argv[5] if len(sys.argv) > 5 else None
tl = {}
level = space = None
count = re.compile(r"(?:Algorithmic s|S)calar (reads|fills|updates) "
                   r"\(per-instance\)\s*:\s*([0-9.e+]+)")
used = re.compile(r"Utilized instances \(max\)\s*:\s*([0-9]+)")
for line in open(sys.argv[2]):
    m = re.match(r"=== (\S+) ===", line)
    if m:
        level, space = m.group(1), None
        continue
    m = re.match(r"^\s{4}(\w+):\s*$", line)
    if m and level:
        space = m.group(1)
        continue
    m = used.search(line)
    if m and level and space:
        tl.setdefault((level, space), {})["instances"] = float(m.group(1))
        continue
    m = count.search(line)
    if m and level and space:  # per instance: times the instances in use
        c = tl.setdefault((level, space), {})
        c[m.group(1)] = float(m.group(2)) * c.get("instances", 1)

bad = 0
print("%-10s %-8s %12s %12s %12s %12s" % ("level", "data", "our reads",
      "TL rd+drain", "our writes", "TL fill+upd"))
levels = ours["einsums"][einsum]["levels"]
for i, lv in enumerate(levels):
    parent = levels[i - 1]["level"] if i > 0 else None
    for t, b in sorted(lv["tensors"].items()):
        c = tl.get((lv["level"], t))
        if c is None:
            print("%-10s %-8s: not in Timeloop's stats" % (lv["level"], t))
            bad += 1
            continue
        r, w = b["read_bytes"] / word, b["write_bytes"] / word
        drain = tl.get((parent, t), {}).get("updates", 0) if parent else 0
        tr = c.get("reads", 0) + drain
        tw = c.get("fills", 0) + c.get("updates", 0)
        same = abs(r - tr) < 0.5 and abs(w - tw) < 0.5
        why = "" if same else ("window (by design)" if t == window
                               else "DIFFERENT")
        bad += why == "DIFFERENT"
        print("%-10s %-8s %12.0f %12.0f %12.0f %12.0f %s" %
              (lv["level"], t, r, tr, w, tw, why))
sys.exit(1 if bad else 0)
