#!/bin/sh
# bench/validate.sh — regenerate docs/validation.md: `mambalaya validate`
# on every Vidur file of data/vidur (tensor-parallel degree 1, then 2, 4
# and 8), the tables of |error| per GPU, model and operator written
# between the prose of bench/validation.md.in. The figure goes to
# out/validate/ (SVG, PDF, PNG).
#
#     sh bench/validate.sh [build/mambalaya]
set -eu
M=${1:-build/mambalaya}
PY=${PYTHON:-python3}
D=data/vidur/compute
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p out/validate
"$M" validate $D --tp 1 --json --out out/validate --format svg,pdf,png \
  >"$tmp/tp1.json"
for t in 2 4 8; do
  "$M" validate $D --tp $t --json >"$tmp/tp$t.json"
done
# The SSD's five kernels against one (bench/plans/), per GPU and shape.
for a in a100 h100-sxm; do
  for b in 1 8; do
    for c in 4 16 64; do
      for p in five_kernels one_kernel; do
        "$M" eval mamba2_chunked --arch $a --model mamba2-2.7b --set B=$b \
          --set C=$c --plan bench/plans/ssd_$p.json --json \
          >"$tmp/ssd_${a}_${b}_${c}_$p.json"
      done
    done
  done
done
$PY - "$tmp" bench/validation.md.in docs/validation.md <<'PYEOF'
import json, math, sys
tmp, template, out = sys.argv[1:]
OPS = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope",
       "attn_post_proj", "post_attention_layernorm", "mlp_up_proj",
       "mlp_act", "mlp_down_proj", "add"]
GEMMS = [o for o in OPS if o.endswith("_proj")]
def stats(e, digits=0):
    e = sorted(abs(x) for x in e)
    n = len(e)
    if not n:
        return "–"
    med = e[n // 2] if n % 2 else (e[n // 2 - 1] + e[n // 2]) / 2
    return "%.*f / %.*f" % (digits, 100 * med, digits,
                            100 * e[math.ceil(0.9 * n) - 1])
def load(t):
    return json.load(open(f"{tmp}/tp{t}.json"))
tp1 = load(1)
recs = tp1["records"]
sets = {f["model"]: f["set"] for f in tp1["files"]}
files = sorted({(r["gpu"], r["model"]) for r in recs},
               key=lambda k: (sets[k[1]] != "tuning", k))
def table_per_operator():
    head = "| GPU | model | set | all | GEMMs | " + " | ".join(OPS) + " |"
    rows = [head, "|" + "---|" * (5 + len(OPS))]
    for g, m in files:
        rs = [r for r in recs if r["gpu"] == g and r["model"] == m]
        cells = [stats([r["error"] for r in rs]),
                 stats([r["error"] for r in rs if r["operator"] in GEMMS])]
        cells += [stats([r["error"] for r in rs if r["operator"] == o])
                  for o in OPS]
        rows.append(f"| {g} | {m} | {sets[m]} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
def table_per_gpu():
    rows = ["| GPU | set | rows | all operators | GEMMs | elementwise and norms |",
            "|---|---|---|---|---|---|"]
    for g in sorted({r["gpu"] for r in recs}):
        for s in ["tuning", "held out"]:
            rs = [r for r in recs if r["gpu"] == g and sets[r["model"]] == s]
            if not rs:
                continue
            rows.append("| %s | %s | %d | %s | %s | %s |" % (
                g, s, len(rs), stats([r["error"] for r in rs], 1),
                stats([r["error"] for r in rs if r["operator"] in GEMMS]),
                stats([r["error"] for r in rs if r["operator"] not in GEMMS])))
    return "\n".join(rows)
def table_tp():
    rows = ["| GPU | model | tp | rows | all operators | GEMMs |",
            "|---|---|---|---|---|---|"]
    for t in [2, 4, 8]:
        rt = load(t)["records"]
        for g, m in sorted({(r["gpu"], r["model"]) for r in rt}):
            rs = [r for r in rt if r["gpu"] == g and r["model"] == m]
            rows.append("| %s | %s | %d | %d | %s | %s |" % (
                g, m, t, len(rs), stats([r["error"] for r in rs]),
                stats([r["error"] for r in rs if r["operator"] in GEMMS])))
    return "\n".join(rows)
def table_worst():
    rows = ["| GPU | model | operator | tokens | predicted ms | measured ms | error |",
            "|---|---|---|---|---|---|---|"]
    seen = set()
    for r in sorted(recs, key=lambda r: -abs(r["error"])):
        key = (r["gpu"], r["model"], r["operator"], r["tokens"])
        if key in seen:
            continue
        seen.add(key)
        rows.append("| %s | %s | %s | %d | %.4f | %.4f | %+.0f %% |" % (
            r["gpu"], r["model"], r["operator"], r["tokens"],
            r["predicted_ms"], r["measured_ms"], 100 * r["error"]))
        if len(rows) == 12:
            break
    return "\n".join(rows)
def table_fusion():
    rows = ["| GPU | batch | tokens | five kernels (µs) | one kernel (µs) | predicted speedup |",
            "|---|---|---|---|---|---|"]
    for a in ["a100", "h100-sxm"]:
        for b in [1, 8]:
            for c in [4, 16, 64]:
                t = [json.load(open(f"{tmp}/ssd_{a}_{b}_{c}_{p}.json"))
                     ["totals"]["latency_s"] * 1e6
                     for p in ["five_kernels", "one_kernel"]]
                rows.append("| %s | %d | %d | %.1f | %.1f | %.2f× |" % (
                    a, b, 256 * c, t[0], t[1], t[0] / t[1]))
    return "\n".join(rows)
text = open(template).read()
for key, fn in [("PER_GPU", table_per_gpu), ("PER_OPERATOR", table_per_operator),
                ("TENSOR_PARALLEL", table_tp), ("WORST", table_worst),
                ("FUSION", table_fusion)]:
    text = text.replace("@" + key + "@", fn())
open(out, "w").write(text)
PYEOF
echo "docs/validation.md and out/validate/validate.{svg,pdf,png} written"
