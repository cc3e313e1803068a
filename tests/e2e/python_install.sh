#!/bin/sh
# The install docs/python.md gives, run as written: its `python3 -m venv`
# and `venv/bin/pip install` lines, taken from the page, in a copy of the
# repository's python/ beside a copy of build/libmambalaya.so, into a
# fresh venv of Debian's python3 (/usr/bin first on PATH), offline
# (PIP_NO_INDEX: pip must find everything on the machine); then `import mambalaya` from another directory, with no
# MAMBALAYA_LIB, finds the library the install copied into the venv and
# prices as the CLI does. The packages the build needs are in the
# README's apt list and .ci/run's: pip builds a wheel, and Debian 12's
# setuptools (66) builds one only with python3-wheel. Not run under the
# sanitizers (no C code of its own runs here but an eval: the Makefile's
# OPTIMIZED_ONLY).
set -u
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3
LIB=$(dirname "$M")/libmambalaya.so
[ -f "$LIB" ] || fail "no $LIB (make builds it)"

for list in README.md .ci/run; do
  for pkg in python3-venv python3-wheel python3-yaml; do
    grep -q "apt-get install.*$pkg\|^  .*$pkg" "$ROOT/$list" ||
      fail "$list's apt-get install lacks $pkg"
  done
done

# The page's two lines, verbatim (the first sh block of docs/python.md).
steps=$(sed -n '/^```sh/,/^```/p' "$ROOT/docs/python.md" |
  grep -e '^python3 -m venv' -e '^venv/bin/pip install' | sed 's/ *#.*//')
[ "$(printf '%s\n' "$steps" | wc -l)" -eq 2 ] ||
  fail "docs/python.md: expected its venv and pip lines, got: $steps"

mkdir -p repo/build elsewhere
cp -r "$ROOT/python" repo/python
rm -rf repo/python/build repo/python/*.egg-info
cp "$LIB" repo/build/libmambalaya.so
(cd repo && PATH=/usr/bin:$PATH PIP_NO_INDEX=1 \
  PIP_DISABLE_PIP_VERSION_CHECK=1 sh -ec "$steps") >install.out 2>&1 ||
  fail "docs/python.md's install: $(tail -n 20 install.out)"

got=$(cd elsewhere && env -u MAMBALAYA_LIB "$tmp/repo/venv/bin/python" -c '
import mambalaya
print(mambalaya.library_path().startswith("'"$tmp"'/repo/venv/"),
      mambalaya.eval("mamba1", design="full")["totals"]["latency_s"])' 2>&1)
want=$("$M" eval mamba1 --design full --json | $PY -c \
  'import json, sys; print(True, json.load(sys.stdin)["totals"]["latency_s"])')
[ "$got" = "$want" ] || fail "import from another directory: got '$got', want '$want'"
finish python_install.sh
