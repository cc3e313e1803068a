#!/bin/sh
# Run every test against the binaries in BUILD (default: build):
# the C unit tests, then each end-to-end script under tests/e2e/.
set -u
BUILD=${1:-build}
MAMBALAYA="$BUILD/mambalaya"
export MAMBALAYA BUILD
failed=0
echo "== unit tests ($BUILD)"
"$BUILD/unit_tests" || failed=1
for t in tests/e2e/*.sh; do
  echo "== $t ($BUILD)"
  sh "$t" || failed=1
done
if [ "$failed" -ne 0 ]; then
  echo "FAILED ($BUILD)"
  exit 1
fi
echo "all tests passed ($BUILD)"
