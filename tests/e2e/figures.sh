#!/bin/sh
# Figures a reviewer accepts (issue 17): every figure of `reproduce` (the
# paper's setup, and a cascade that names no model) and of every shipped
# study, rendered as SVG, PDF and PNG: each SVG well formed with a legend
# entry per series (svg_check.py), each PDF and PNG the same figure
# (render_check.py), and no text over other text (figure_check.py: the
# boxes the layout gave the texts). Broken copies must be rejected, so the
# overlap check is known to catch what it claims to.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3
FMT=svg,pdf,png

# reproduce's runs, shared with reproduce.sh (lib/harness.sh).
shared paper reproduce --format $FMT
[ "$(cat "$SHARED/rc")" = 0 ] ||
  fail "reproduce exited $(cat "$SHARED/rc"): $(cat "$SHARED/stderr")"
paper=$SHARED/out
shared rwkv24 reproduce --spec tests/specs/good/rwkv6_shift.yaml --arch h100 \
  --layers 24 --format $FMT
[ "$(cat "$SHARED/rc")" = 0 ] ||
  fail "reproduce rwkv6_shift exited $(cat "$SHARED/rc"): $(cat "$SHARED/stderr")"
dirs="$paper $SHARED/out"
for s in studies/*.yaml; do
  n=$(basename "$s" .yaml)
  "$MAMBALAYA" sweep "$s" --format $FMT --out "$tmp/$n" >/dev/null \
    2>"$tmp/err" || fail "sweep $s exited $?: $(cat "$tmp/err")"
  dirs="$dirs $tmp/$n"
done

n=0
for d in $dirs; do
  for f in "$d"/*.svg; do
    n=$((n + 1))
    [ -s "${f%.svg}.png" ] || fail "${f%.svg}.png not written"
  done
  for c in svg_check render_check figure_check; do
    $PY tests/e2e/$c.py "$d"/*.svg >"$tmp/out" ||
      { grep -v '^ok ' "$tmp/out"; fail "$c.py rejected a figure of $d"; }
  done
done
[ "$n" -ge 30 ] || fail "only $n figures rendered"

# A text moved onto another must be caught: the title onto the subtitle.
good="$paper/sota.svg"
sed 's|\(<text class="subtitle" x="[0-9.]*" y="\)[0-9.]*|\124|' "$good" \
  >"$tmp/overlap.svg"
if $PY tests/e2e/figure_check.py "$tmp/overlap.svg" >"$tmp/out" 2>&1; then
  fail "figure_check.py accepted a subtitle over the title"
elif ! grep -q "overlaps" "$tmp/out"; then
  fail "figure_check.py: expected 'overlaps' in: $(cat "$tmp/out")"
fi

echo "$n figures checked, $fails failures"
[ "$fails" -eq 0 ]
