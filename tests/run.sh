#!/bin/sh
# Run every test against the binaries in BUILD (default: build): the C unit
# tests and each end-to-end script under tests/e2e/, TEST_JOBS of them at
# a time (default 2: the machines have two cores, and each script is one
# process at a time; every script works in its own temporary directory),
# the slowest of the last run first (BUILD/test-times), so that no long
# job starts last. Each job's output is kept and printed whole, in the
# listed order, once all have run; a line per job says when it ends. Runs
# that several scripts read are made once per build, into
# BUILD/test-shared (lib/harness.sh's `shared`). Under the sanitizers
# (MAMBALAYA_SANITIZED=1), the scripts named in TESTS_OPTIMIZED_ONLY are
# left out, and named as such (the Makefile lists them, saying why).
#
# Then the slowest jobs, the sum of the jobs' times, and as the last line
# "N passed, M failed, K skipped" (each unit test and each script counts
# once; a script that cannot run here exits 77, harness.sh's skip: a skip,
# not a pass, and under CI=true a failure, since CI installs everything the
# tests need); the counts are also left in BUILD/test-counts for `make
# test`'s summary.
#
#   tests/run.sh [BUILD]
#   tests/run.sh --summary BUILD...   sum the counts of earlier runs, and
#                                     name their slowest jobs
#   tests/run.sh --one BUILD JOB      run one job (unit, or a script's path)
set -u

# Each job's seconds, name and build, for the runs in BUILD...
job_times() {
  for b in "$@"; do
    for f in "$b"/test-logs/*.time; do
      [ -e "$f" ] && echo "$(cat "$f") $(basename "$f" .time) $b"
    done
  done
}

# The slowest jobs of the runs in BUILD..., and the sum of each run's.
slowest() {
  echo "slowest:"
  job_times "$@" | sort -rn | head -n 8 | while read -r secs name b; do
    echo "  $secs s  $name ($b)"
  done
  for b in "$@"; do
    job_times "$b" | awk -v b="$b" '{ s += $1; n++ }
      END { printf "%d jobs, %d s in all (%s)\n", n, s, b }'
  done
}

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
  slowest "$@"
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
rm -rf "$BUILD/test-logs" "$BUILD/test-shared"
mkdir -p "$BUILD/test-logs" "$BUILD/test-shared"
MAMBALAYA_SHARED=$(cd "$BUILD/test-shared" && pwd)
export MAMBALAYA_SHARED

# The jobs: the unit tests and every script (under the sanitizers, less
# those named optimized-only).
all=unit
for t in tests/e2e/*.sh; do
  case " ${TESTS_OPTIMIZED_ONLY:-} " in
    *" $(basename "$t" .sh) "*) [ "${MAMBALAYA_SANITIZED:-}" = 1 ] && continue ;;
  esac
  all="$all $t"
done
# Slowest first, by the last run's times (a new job first of all).
for t in $all; do
  secs=$(sed -n "s|^\([0-9]*\) $t\$|\1|p" "$BUILD/test-times" 2>/dev/null)
  echo "${secs:-999999} $t"
done | sort -k1,1rn -s | cut -d' ' -f2 |
  xargs -P "$JOBS" -n 1 sh tests/run.sh --one "$BUILD"
passed=0
failed=0
skipped=0
: >"$BUILD/test-times"
for t in $all; do
  name=$(basename "$t" .sh)
  log="$BUILD/test-logs/$name"
  if [ "$t" = unit ]; then
    echo "== unit tests ($BUILD)"
  else
    echo "== $t ($BUILD)"
  fi
  cat "$log.log" 2>/dev/null
  echo "$(cat "$log.time" 2>/dev/null || echo 0) $t" >>"$BUILD/test-times"
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
for n in ${TESTS_OPTIMIZED_ONLY:-}; do
  [ -f "tests/e2e/$n.sh" ] && continue
  failed=$((failed + 1))
  echo "FAILED: TESTS_OPTIMIZED_ONLY names $n, and there is no tests/e2e/$n.sh"
done
if [ "${MAMBALAYA_SANITIZED:-}" = 1 ] && [ -n "${TESTS_OPTIMIZED_ONLY:-}" ]; then
  echo "not run under the sanitizers (the Makefile says why):" \
    $TESTS_OPTIMIZED_ONLY
fi
# Where the time goes.
slowest "$BUILD"
echo "$passed passed, $failed failed, $skipped skipped ($BUILD)"
echo "$passed $failed $skipped" >"$BUILD/test-counts"
[ "$failed" -eq 0 ]
