#!/bin/sh
# Run every test against the binaries in BUILD (default: build): the C unit
# tests, then each end-to-end script under tests/e2e/. The last line is
# "N passed, M failed" (each unit test and each script counts once); the
# counts are also left in BUILD/test-counts for `make test`'s summary.
#
#   tests/run.sh [BUILD]
#   tests/run.sh --summary BUILD...   sum the counts of earlier runs
set -u
if [ "${1:-}" = "--summary" ]; then
  shift
  passed=0
  failed=0
  for b in "$@"; do
    read -r p f <"$b/test-counts" || { echo "no counts in $b"; exit 1; }
    passed=$((passed + p))
    failed=$((failed + f))
  done
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
fi
BUILD=${1:-build}
MAMBALAYA="$BUILD/mambalaya"
export MAMBALAYA BUILD
passed=0
failed=0
echo "== unit tests ($BUILD)"
"$BUILD/unit_tests" >"$BUILD/unit.out" 2>&1
status=$?
cat "$BUILD/unit.out"
# "113 unit tests, 2 failed"
set -- $(tail -n 1 "$BUILD/unit.out")
if [ "${2:-}" = "unit" ]; then
  passed=$((passed + $1 - $4))
  failed=$((failed + $4))
fi
[ "$status" -eq 0 ] || [ "$failed" -gt 0 ] || failed=$((failed + 1))
for t in tests/e2e/*.sh; do
  echo "== $t ($BUILD)"
  if ! grep -q 'lib/harness.sh' "$t"; then
    echo "FAILED: $t does not use tests/e2e/lib/harness.sh"
    failed=$((failed + 1))
  elif sh "$t"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $t"
  fi
done
echo "$passed $failed" >"$BUILD/test-counts"
echo "$passed passed, $failed failed ($BUILD)"
[ "$failed" -eq 0 ]
