#!/bin/sh
# Charts end to end: the svg unit tests write one chart of each kind, as
# SVG, PDF and PNG, into a directory (MAMBALAYA_SVG_OUT); svg_check.py
# checks the structure of every SVG and render_check.py that the PDF and
# PNG beside it hold the same figure; broken copies must be rejected, so
# that the checkers are known to catch what they claim to.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
: "${BUILD:=build}"
PY=/usr/bin/python3
CHECK=tests/e2e/svg_check.py
RENDER=tests/e2e/render_check.py

mkdir "$tmp/svg"
MAMBALAYA_SVG_OUT="$tmp/svg" "$BUILD/unit_tests" svg >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "the svg unit tests"; }
n=$(find "$tmp/svg" -name '*.svg' | wc -l)
[ "$n" -ge 10 ] || fail "only $n SVG files written"
$PY "$CHECK" "$tmp"/svg/*.svg >"$tmp/check" ||
  { grep -v '^ok ' "$tmp/check"; fail "svg_check.py rejected a chart"; }
np=$(find "$tmp/svg" -name '*.pdf' | wc -l)
[ "$np" -eq "$n" ] || fail "$np PDF files for $n SVG files"
$PY "$RENDER" "$tmp"/svg/*.svg >"$tmp/render" ||
  { grep -v '^ok ' "$tmp/render"; fail "render_check.py rejected a chart"; }
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
# Two series in two near-identical blues (issue 36: "Best unfused" and
# "best (searched)" were #0072B2 and #56B4E9).
broken look-alike 's|#E69F00|#56B4E9|g' 'look alike'

# rbroken NAME EXT PYTHON MESSAGE: a copy of the good chart whose EXT file
# is edited by PYTHON (d: the bytes) must fail render_check.py, saying
# MESSAGE.
rbroken() {
  for e in svg pdf png; do cp "$tmp/svg/speedup_bars.$e" "$tmp/$1.$e"; done
  $PY -c "import sys, zlib, struct
p = sys.argv[1]; d = open(p, 'rb').read()
$3
open(p, 'wb').write(d)" "$tmp/$1.$2"
  if $PY "$RENDER" "$tmp/$1.svg" >"$tmp/out" 2>&1; then
    fail "render_check.py accepted $1"
  elif ! grep -q "$4" "$tmp/out"; then
    fail "render_check.py on $1: expected '$4' in: $(cat "$tmp/out")"
  fi
}
rbroken pdf-cut pdf 'd = d[:len(d) // 2]' 'trailer'
rbroken pdf-size pdf "d = d.replace(b'/MediaBox [ 0 0 ', b'/MediaBox [ 0 0 1')" 'MediaBox'
rbroken png-sig png 'd = b"GIF89a" + d[6:]' 'signature'
rbroken png-crc png 'd = d[:20] + bytes([d[20] ^ 1]) + d[21:]' 'CRC'
rbroken png-blank png "
w, h = struct.unpack('>II', d[16:24])
def chunk(k, b): return struct.pack('>I', len(b)) + k + b + struct.pack('>I', zlib.crc32(k + b))
d = d[:8] + chunk(b'IHDR', d[16:29]) + chunk(b'IDAT', zlib.compress((b'\\x02' + bytes(3 * w)) * h)) + chunk(b'IEND', b'')" 'blank'

echo "$n charts checked, $fails failures"
[ "$fails" -eq 0 ]
