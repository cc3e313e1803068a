#!/bin/sh
# Every command's --help comes from its option table (src/cli/opts.c):
# a usage line, every option once, an example of the command itself; and
# the table drives parsing: each option --help lists is accepted, and the
# engine's refusals (unknown option, missing value, flag given a value,
# a number out of range, an unknown name, a missing argument) exit 2 with
# one line naming the option.
set -u
. tests/e2e/lib/harness.sh

cmds=$("$M" --help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 {print $1}')
[ "$(echo "$cmds" | wc -l)" -eq 17 ] || fail "17 commands, got: $cmds"
for c in $cmds; do
  "$M" "$c" --help >h 2>err || fail "$c --help exited $?"
  [ -s err ] && fail "$c --help wrote on stderr"
  head -n 1 h | grep -q "^usage: mambalaya $c .*\[options\]$" ||
    fail "$c --help: usage line: $(head -n 1 h)"
  grep -q "^examples\{0,1\}:$" h || fail "$c --help: no example section"
  sed -n '/^examples\{0,1\}:$/,$p' h | grep -q "^  mambalaya $c " ||
    fail "$c --help: no example of $c"
  # Wrapped at 78 columns (the examples are commands, kept whole).
  sed '/^examples\{0,1\}:$/,$d' h | awk 'length > 78 {exit 1}' ||
    fail "$c --help: a line over 78 columns"
  "$M" help "$c" | cmp -s - h || fail "mambalaya help $c differs"
  # Each option once, and each accepted: the parse stops at its value or
  # at --zz (never running the command), not at the option.
  opts=$(grep -o '^  --[a-z-]*' h | sort)
  [ "$(echo "$opts" | uniq -d)" = "" ] ||
    fail "$c --help lists twice: $(echo "$opts" | uniq -d)"
  for o in $opts; do
    "$M" "$c" "$o" --zz --zz >/dev/null 2>err </dev/null
    st=$?
    [ "$st" -eq 2 ] || fail "$c $o --zz --zz exited $st"
    grep -q "unknown option '$o'" err && fail "$c $o: $(cat err)"
  done
done

# The engine's refusals.
refused "unknown option '--frob' (see mambalaya eval --help)" \
  "$M" eval mamba1 --frob
refused "option --arch needs a value (see mambalaya eval --help)" \
  "$M" eval mamba1 --arch
refused "option --csv takes no value" "$M" eval mamba1 --csv=yes
refused "--spill-distance expects 0 to 1000000, got '-1'" \
  "$M" eval mamba1 --spill-distance -1
refused "--threads expects 1 to 1024, got '2.5'" "$M" sweep x --threads 2.5
refused "--reserve-share expects a number in (0, 1\], got '0'" \
  "$M" eval mamba1 --reserve-share 0
refused "--tolerance expects a number in \[0, 1), got '1'" \
  "$M" diff a.json b.json --tolerance 1
refused "--tolerance expects a number >= 0, got 'nan'" \
  "$M" exec mamba1 --tolerance nan
refused "--max-memory expects a size in bytes (e.g. 2MiB), got '0'" \
  "$M" init-weights --model mamba-130m --out m --max-memory 0
refused "--seed expects a non-negative integer (decimal digits), got '-3'" \
  "$M" init-weights --model mamba-130m --out m --seed -3
# The designs and strategies are the tool's tables (a new row must not
# need this test edited): the names come from the tool, the message's form
# and its fixed ends are checked here.
as_list() { # "a b c" -> "a, b or c", as the messages write a list
  echo "$*" | awk '{ for (i = 1; i <= NF; i++)
    printf "%s%s", i == 1 ? "" : i == NF ? " or " : ", ", $i }'
}
designs=$(choices eval --design mamba1)
strategies=$(choices fuse --strategy mamba1)
case "$designs" in unfused\ ideal\ *\ full\ best) ;;
*) fail "eval --design's choices: '$designs'" ;; esac
case "$strategies" in unfused\ ri\ *\ full\ all) ;;
*) fail "fuse --strategy's choices: '$strategies'" ;; esac
refused "unknown design 'fused' (expected $(as_list $designs))" \
  "$M" eval mamba1 --design fused
refused "unknown strategy 'x' (expected $(as_list interpreter $strategies | sed 's/ or all$/ or best/'))" \
  "$M" exec mamba1 --strategy x
refused "unknown strategy 'x' (expected $(as_list $strategies))" \
  "$M" fuse mamba1 --strategy x
refused "unknown phase 'warm' (expected prefill or decode)" \
  "$M" eval mamba1 --phase warm
refused "unknown dtype 'F8' (expected F32, F16 or BF16)" \
  "$M" init-weights --model mamba-130m --out m --dtype F8
refused "--pipelined: reproduce prices every design both sequential" \
  "$M" reproduce --pipelined
refused "missing SPEC (see mambalaya classify --help)" "$M" classify
refused "missing B.json (see mambalaya diff --help)" "$M" diff a.json
refused "unexpected argument 'c' (see mambalaya diff --help)" \
  "$M" diff a b c
refused "needs --max-new (see mambalaya generate --help)" \
  "$M" generate --model m --tokens 1
refused "needs --out (see mambalaya init-weights --help)" \
  "$M" init-weights --model mamba-130m
refused "--out expects a path, got ''" "$M" exec mamba1 --out ""
# A value may start with '-'; --help is an option's value when it takes one.
refused "--range expects \[NAME=\]LO:HI with LO <= HI, got '--help'" \
  "$M" exec mamba1 --range --help
# The options before --help are parsed first.
refused "unknown option '--frob'" "$M" fuse --frob --help
"$M" fuse mamba1 --json --help | head -n 1 | grep -q "^usage: mambalaya fuse" ||
  fail "fuse --json --help is not the help"

echo "cli_help: $fails failures"
[ "$fails" -eq 0 ]
