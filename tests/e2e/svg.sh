#!/bin/sh
# SVG charts end to end: the svg unit tests write one chart of each kind
# into a directory (MAMBALAYA_SVG_OUT), svg_check.py checks the structure
# of every file, and broken copies of one chart must be rejected, so that
# the checker is known to catch what it claims to.
set -u
: "${BUILD:=build}"
PY=/usr/bin/python3
CHECK=tests/e2e/svg_check.py
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir "$tmp/svg"
MAMBALAYA_SVG_OUT="$tmp/svg" "$BUILD/unit_tests" svg >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "the svg unit tests"; }
n=$(find "$tmp/svg" -name '*.svg' | wc -l)
[ "$n" -ge 10 ] || fail "only $n SVG files written"
$PY "$CHECK" "$tmp"/svg/*.svg >"$tmp/check" ||
  { grep -v '^ok ' "$tmp/check"; fail "svg_check.py rejected a chart"; }
good="$tmp/svg/speedup_bars.svg"
$PY "$CHECK" --expect-series 'MARCA-like,Geens-like,Mambalaya' "$good" \
  >/dev/null || fail "--expect-series with the right names"
$PY "$CHECK" --expect-series 'MARCA-like,Mambalaya' "$good" >/dev/null &&
  fail "--expect-series accepted the wrong names"

# broken NAME SED-SCRIPT MESSAGE: a copy of the good chart edited by
# SED-SCRIPT must fail, saying MESSAGE.
broken() {
  sed "$2" "$good" >"$tmp/$1.svg"
  if $PY "$CHECK" "$tmp/$1.svg" >"$tmp/out" 2>&1; then
    fail "svg_check.py accepted $1"
  elif ! grep -q "$3" "$tmp/out"; then
    fail "svg_check.py on $1: expected '$3' in: $(cat "$tmp/out")"
  fi
}
broken no-title 's|\(<text class="title"[^>]*>\)[^<]*<|\1<|' 'non-empty title'
broken no-xlabel 's|\(<text class="xlabel"[^>]*>\)[^<]*<|\1<|' 'xlabel'
broken nan '0,/ x="[0-9.]*"/s// x="nan"/' 'not a finite number'
broken outside 's|\(class="bar" data-value="1"\) x="[0-9.]*"|\1 x="5000"|' \
  'outside the viewBox'
broken legend 's|<g class="legend-entry" data-name="Mambalaya">|<g>|' \
  'legend entries'
broken no-ticks 's|<text class="tick"[^>]*>[^<]*</text>||g' 'labelled ticks'
broken not-xml 's|</svg>||' 'not a readable XML'
broken script 's|</svg>|<script>alert(1)</script></svg>|' 'script'

echo "$n charts checked, $fails failures"
[ "$fails" -eq 0 ]
