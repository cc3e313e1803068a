#!/bin/sh
# The Python package (python/mambalaya, docs/python.md) with Debian's
# python3: every function against the CLI's --json (tests/python/
# test_api.py) and the worked example of docs/python.md (the install
# the page gives: python_install.sh). Under the sanitizers the library is the
# ASan build, loaded with the ASan runtime preloaded, for the tests of
# the entry point itself (eval, documents, exec, threads); the slow ones
# (sweep, reproduce) and the example are left to the optimized run.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3
MAMBALAYA_LIB=$(dirname "$M")/libmambalaya.so
MAMBALAYA=$M
export MAMBALAYA_LIB MAMBALAYA
[ -f "$MAMBALAYA_LIB" ] || fail "no $MAMBALAYA_LIB (make builds it)"

if [ "${MAMBALAYA_SANITIZED:-}" = 1 ]; then
  # Python itself leaks by design: only the library's errors count.
  LD_PRELOAD=$(${CC:-cc} -print-file-name=libasan.so) \
  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
    $PY -m unittest -q tests.python.test_api.EqualsCli.test_eval \
      tests.python.test_api.EqualsCli.test_run_any_command \
      tests.python.test_api.Documents tests.python.test_api.Exec \
      tests.python.test_api.InProcess.test_threads_take_turns \
      tests.python.test_api.NeverEndsTheHost \
      >"$tmp/unit.out" 2>&1 || fail "python tests under ASan: $(tail -n 20 "$tmp/unit.out")"
  finish python.sh
fi

$PY -m unittest -q tests/python/test_api.py >"$tmp/unit.out" 2>&1 ||
  fail "python tests: $(tail -n 30 "$tmp/unit.out")"

$PY tests/python/doc_example.py docs/python.md >"$tmp/doc.out" 2>&1 ||
  fail "docs/python.md's example: $(tail -n 20 "$tmp/doc.out")"
grep -q "^exec AV (1, 2, 8, 64) float32" "$tmp/doc.out" ||
  fail "docs/python.md's example did not reach exec: $(cat "$tmp/doc.out")"

# `import mambalaya` from the repository root, with nothing on stdout.
out=$(cd "$ROOT" && $PY -c "import mambalaya; mambalaya.eval('mamba1')")
[ -z "$out" ] || fail "import mambalaya printed: $out"

finish python.sh
