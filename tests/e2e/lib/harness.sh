# What an end-to-end script needs, sourced from the repository root
# (tests/run.sh runs each script there): $M is the binary as an absolute
# path, $ROOT the repository, $tmp a fresh directory removed on exit, in
# which the script then runs (unless it set HARNESS_CWD=root: then it
# stays in the repository), fail() counts failures, refused() checks a
# usage error, finish() ends the script with its count.
: "${MAMBALAYA:=build/mambalaya}"
M=$(cd "$(dirname "$MAMBALAYA")" && pwd)/$(basename "$MAMBALAYA")
ROOT=$(pwd)
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ "${HARNESS_CWD:-}" = root ] || cd "$tmp" || exit 1

# Run the command, which must exit 2 with one line on stderr containing
# TEXT (a grep pattern) and print nothing on stdout.
refused() {
  text=$1
  shift
  "$@" >out 2>err
  st=$?
  [ "$st" -eq 2 ] || fail "$* exited $st, expected 2: $(cat err)"
  [ -s out ] && fail "$* printed on stdout"
  [ "$(wc -l <err)" -eq 1 ] || fail "$*: not one line: $(cat err)"
  grep -q -e "$text" err || fail "$*: expected '$text', got: $(cat err)"
}

# The names a command's option accepts, from its own refusal of a wrong
# one ("unknown design 'x' (expected a, b or c)"): the tool's table, so
# that a new design or strategy is tested without editing a list here.
#   choices eval --design [ARGS...]  ->  "unfused ideal ... full best"
choices() {
  cmd=$1
  opt=$2
  shift 2
  "$M" "$cmd" "$@" "$opt" not-a-choice 2>&1 >/dev/null |
    sed -n "s/.*(expected \(.*\))$/\1/p" | sed 's/,//g; s/ or / /'
}

# One run shared by the scripts that read it, made once per build:
#   shared NAME ARGS...   runs "$M" ARGS --out DIR/out from the repository
# root, whichever script asks first (the others wait for it), and sets
# SHARED to DIR: DIR/out what it wrote, DIR/stdout, DIR/stderr, DIR/rc its
# exit status. tests/run.sh names the builds' folder, MAMBALAYA_SHARED; a
# script run alone makes its own in $tmp. NAME is always asked with the
# same ARGS (a script that asks it otherwise fails). The files are only
# read: other scripts read them too.
shared() {
  name=$1
  shift
  base=${MAMBALAYA_SHARED:-$tmp/shared}
  SHARED=$base/$name
  mkdir -p "$base" || exit 1
  flock "$SHARED.lock" sh -c '
    d=$1 root=$2
    shift 2
    [ -e "$d/rc" ] && exit 0
    rm -rf "$d" && mkdir "$d" && printf "%s\n" "$@" >"$d/args" &&
      cd "$root" || exit 1
    "$@" --out "$d/out" >"$d/stdout" 2>"$d/stderr"
    echo $? >"$d/rc"' sh "$SHARED" "$ROOT" "$M" "$@" ||
    fail "shared $name: could not run"
  printf '%s\n' "$M" "$@" | cmp -s - "$SHARED/args" ||
    fail "shared $name asked with other arguments than: $(tr '\n' ' ' <"$SHARED/args")"
}

# A script that cannot run here (a missing tool): says why and exits 77,
# which tests/run.sh counts as skipped, never passed (a failure in CI).
skip() {
  echo "SKIPPED: $*"
  exit 77
}

# The script's last line: its name and failure count; exits non-zero on a
# failure.
finish() {
  echo "$1: $fails failures"
  [ "$fails" -eq 0 ]
  exit
}
