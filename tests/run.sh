#!/bin/sh
# Run every test against the binaries in BUILD (default: build): the C unit
# tests and each end-to-end script under tests/e2e/, TEST_JOBS of them at
# a time (default 2: the machines have two cores, and each script is one
# process at a time; every script works in its own temporary directory).
# Each job's output is kept and printed whole, in the listed order, once
# all have run; a line per job says when it ends. The last line is
# "N passed, M failed, K skipped" (each unit test and each script counts
# once; a script that cannot run here exits 77, harness.sh's skip: a skip,
# not a pass, and under CI=true a failure, since CI installs everything the
# tests need); the counts are also left in BUILD/test-counts for `make
# test`'s summary.
#
#   tests/run.sh [BUILD]
#   tests/run.sh --summary BUILD...   sum the counts of earlier runs
#   tests/run.sh --one BUILD JOB      run one job (unit, or a script's path)
set -u
if [ "${1:-}" = "--summary" ]; then
  shift
  passed=0
  failed=0
  skipped=0
  for b in "$@"; do
    read -r p f k <"$b/test-counts" || { echo "no counts in $b"; exit 1; }
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + ${k:-0}))
  done
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" -eq 0 ]
  exit
fi

# One job: its output into BUILD/test-logs/NAME.log, its exit status into
# NAME.rc, and a line when it ends.
if [ "${1:-}" = "--one" ]; then
  BUILD=$2
  MAMBALAYA="$BUILD/mambalaya"
  export MAMBALAYA BUILD
  name=$(basename "$3" .sh)
  log="$BUILD/test-logs/$name"
  start=$(date +%s)
  if [ "$3" = unit ]; then
    "$BUILD/unit_tests" >"$log.log" 2>&1
  elif ! grep -q 'lib/harness.sh' "$3"; then
    echo "FAILED: $3 does not use tests/e2e/lib/harness.sh" >"$log.log"
    false
  else
    sh "$3" >"$log.log" 2>&1
  fi
  echo $? >"$log.rc"
  echo "$(($(date +%s) - start))" >"$log.time"
  echo "-- $3 ($BUILD): exit $(cat "$log.rc"), $(cat "$log.time") s"
  exit 0
fi

BUILD=${1:-build}
JOBS=${TEST_JOBS:-2}
rm -rf "$BUILD/test-logs"
mkdir -p "$BUILD/test-logs"
# The unit tests first: the longest job, so the other lane takes the
# scripts meanwhile.
printf '%s\n' unit tests/e2e/*.sh |
  xargs -P "$JOBS" -n 1 sh tests/run.sh --one "$BUILD"
passed=0
failed=0
skipped=0
for t in unit tests/e2e/*.sh; do
  name=$(basename "$t" .sh)
  log="$BUILD/test-logs/$name"
  if [ "$t" = unit ]; then
    echo "== unit tests ($BUILD)"
  else
    echo "== $t ($BUILD)"
  fi
  cat "$log.log" 2>/dev/null
  status=$(cat "$log.rc" 2>/dev/null || echo 1)
  if [ "$t" = unit ]; then
    # "113 unit tests, 2 failed"
    set -- $(tail -n 1 "$log.log")
    if [ "${2:-}" = "unit" ]; then
      passed=$((passed + $1 - $4))
      failed=$((failed + $4))
    fi
    [ "$status" -eq 0 ] || [ "$failed" -gt 0 ] || failed=$((failed + 1))
  elif [ "$status" -eq 0 ]; then
    passed=$((passed + 1))
  elif [ "$status" -eq 77 ] && [ "${CI:-}" != true ]; then
    skipped=$((skipped + 1))
    echo "SKIPPED: $t"
  elif [ "$status" -eq 77 ]; then
    failed=$((failed + 1))
    echo "FAILED: $t skipped, and CI installs everything the tests need"
  else
    failed=$((failed + 1))
    echo "FAILED: $t"
  fi
done
# The slowest jobs, where the time goes.
echo "slowest ($BUILD):"
for f in "$BUILD"/test-logs/*.time; do
  echo "$(cat "$f") $(basename "$f" .time)"
done | sort -rn | head -n 5 | while read -r secs name; do
  echo "  $secs s  $name"
done
echo "$passed passed, $failed failed, $skipped skipped ($BUILD)"
echo "$passed $failed $skipped" >"$BUILD/test-counts"
[ "$failed" -eq 0 ]
