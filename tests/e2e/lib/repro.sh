# What reproduce.sh and reproduce_setups.sh share: the paper's figures
# (FIGURES, each written as DIR/NAME.svg, .pdf, .png) and the check of a
# setup's labels.
FIGURES="roofline roofline_decode utilization_prefill utilization_decode
utilization_strategies utilization_designs_prefill utilization_designs_decode
traffic_prefill traffic_prefill_fused traffic_decode speedup_e2e
speedup_e2e_pipelined sota sweep_370m sweep_2.8b ski_slope energy"

# labels DIR WORD...: every SVG's title or subtitle, the index and the
# table (DIR.table) name each WORD.
labels() {
  dir=$1
  shift
  for w in "$@"; do
    for f in "$dir"/*.svg; do
      grep -q "class=\"\(stack-\)\?\(sub\)\?title\"[^>]*>[^<]*$w" "$f" ||
        fail "$f: no title or subtitle names $w"
    done
    grep -q "$w" "$dir/index.html" || fail "$dir/index.html does not name $w"
    grep -q "$w" "$dir.table" || fail "the table of $dir does not name $w"
  done
}
