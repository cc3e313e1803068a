#!/bin/sh
# AccelForge's standalone example workloads load (docs/compat.md, the
# AccelForge section): every file under examples/workloads/ whose path
# has no part starting with `_` (those are included parts), as published at commit 1c1929c2, translated by
# `import accelforge` with the template variables it reads (from the list
# below: a setting the template does not read is refused, so it is
# dropped and the import retried) and the spec it writes loaded by
# `classify`. One line per file: loaded (its Einsums) or failed (the
# first error); then the count.
#   sh bench/accelforge_examples.sh GITDIR [BUILD] [COMMIT]
# GITDIR: a clone, bare or not, of github.com/Accelergy-Project/accelforge.
set -u
GITDIR=${1:?usage: sh bench/accelforge_examples.sh GITDIR [BUILD] [COMMIT]}
BUILD=${2:-build}
COMMIT=${3:-1c1929c2}
M=$(cd "$BUILD" && pwd)/mambalaya
SETS="BATCH_SIZE=1 N_NEW_TOKENS=16 DECODE=0 N_CACHED_TOKENS=1024
N_EINSUMS=2 ATTENTION_TYPE=grouped_query"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
git --git-dir="$GITDIR" archive "$COMMIT" examples/workloads |
  tar -x -C "$TMP" || { echo "cannot read $COMMIT from $GITDIR"; exit 2; }

# Import FILE (run in its folder: includes are relative) with the
# settings it reads; the spec in $TMP/out.yaml, the error in $TMP/err.
import_file() {
  sets=$SETS
  while :; do
    args=""
    for s in $sets; do args="$args --set $s"; done
    # shellcheck disable=SC2086
    (cd "$(dirname "$1")" && "$M" import accelforge "$(basename "$1")" \
      $args --out "$TMP/out.yaml") 2>"$TMP/err" && return 0
    if grep -q "the file is no template" "$TMP/err"; then
      sets=""
      continue
    fi
    unread=$(sed -n 's/.*error: --set \([A-Z_]*\): the template does not read it.*/\1/p' \
      "$TMP/err" | head -n 1)
    [ -n "$unread" ] || return 1
    # shellcheck disable=SC2086
    sets=$(printf '%s\n' $sets | grep -v "^$unread=")
  done
}

loaded=0
total=0
for f in $(cd "$TMP" && find examples/workloads -name '*.yaml' |
  grep -v '/_' | sort); do
  total=$((total + 1))
  if import_file "$TMP/$f" &&
    "$M" classify "$TMP/out.yaml" --json >"$TMP/c.json" 2>"$TMP/err"; then
    loaded=$((loaded + 1))
    n=$(grep -c '^    - "' "$TMP/out.yaml")
    echo "loaded  $f ($n Einsums)"
  else
    echo "failed  $f: $(grep -m 1 error "$TMP/err")"
  fi
done
echo "$loaded of $total loaded"
[ "$loaded" -eq "$total" ]
