#!/bin/sh
# Every malformed spec under tests/specs/bad/ must be rejected with
#   FILE:LINE:COL: error: MESSAGE
# on stderr, exit status 2 and nothing on stdout. The first line of each
# file says what is expected:  # expect: LINE:COL: part of the message
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
n=0
bad=0
for f in tests/specs/bad/*.yaml; do
  n=$((n + 1))
  want=$(sed -n '1s/^# expect: //p' "$f")
  loc=${want%%: *}
  msg=${want#*: }
  "$MAMBALAYA" classify "$f" >"$tmp/out" 2>"$tmp/err"
  status=$?
  err=$(cat "$tmp/err")
  if [ "$status" -ne 2 ]; then
    echo "FAIL $f: exit status $status, expected 2 ($err)"
    bad=$((bad + 1))
  elif [ -s "$tmp/out" ]; then
    echo "FAIL $f: printed on stdout"
    bad=$((bad + 1))
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    echo "FAIL $f: expected one line on stderr, got: $err"
    bad=$((bad + 1))
  else
    case "$err" in
    "$f:$loc: error: "*"$msg"*) ;;
    *)
      echo "FAIL $f: expected '$f:$loc: error: ...$msg...', got: $err"
      bad=$((bad + 1))
      ;;
    esac
  fi
done
echo "$n malformed specs, $bad failures"
[ "$n" -ge 25 ] || { echo "FAIL: fewer than 25 malformed specs"; exit 1; }
[ "$bad" -eq 0 ]
