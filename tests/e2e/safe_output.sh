#!/bin/sh
# Outputs are never lost nor half-written (util.h, "writing outputs"):
# concurrent writers of one --out, an --out that names an input, a
# user's X.tmp (a symlink), init-weights that fails or is killed, and
# output paths that cannot be used (exit 2, before anything runs).
set -u
. tests/e2e/lib/harness.sh

"$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=2 \
  --set vocab=64 --out m >/dev/null || fail "init-weights"
cp m/model.safetensors model.orig
cp m/config.json config.orig

# The value of metadata KEY of safetensors FILE (the file must be valid).
meta() {
  "$M" tensors --json "$1" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"][sys.argv[1]])' "$2"
}

# Two runs writing one --out at once (49 MB of logits each, so that their
# writes overlap): each exits 0 (its file landed whole), and the file left
# is valid and is one of the two.
"$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=1 \
  --set vocab=4096 --out wide >/dev/null || fail "init-weights wide"
ta=$(python3 -c 'print(",".join(["1"] * 3000))')
tb=$(python3 -c 'print(",".join(["2"] * 3000))')
for trial in 1 2 3 4; do
  rm -f res.safetensors
  "$M" run --model wide --tokens "$ta" --out res.safetensors 2>/dev/null &
  a=$!
  "$M" run --model wide --tokens "$tb" --out res.safetensors 2>/dev/null &
  b=$!
  wait $a; sa=$?
  wait $b; sb=$?
  [ "$sa" -eq 0 ] && [ "$sb" -eq 0 ] ||
    fail "concurrent runs exited $sa and $sb (trial $trial)"
  t=$(meta res.safetensors tokens)
  [ "$t" = "$ta" ] || [ "$t" = "$tb" ] ||
    fail "concurrent runs left tokens '$(echo "$t" | cut -c1-20)...'"
  left=$(ls -A | grep -v -x -e m -e wide -e model.orig -e config.orig \
    -e res.safetensors)
  [ -z "$left" ] || fail "concurrent runs left $left (trial $trial)"
done
rm -rf wide res.safetensors

# --out naming an input, however it is spelled: refused with exit 2, the
# input intact.
ln -s m/model.safetensors link.safetensors
for out in m/model.safetensors ./m/../m/model.safetensors link.safetensors \
  m/config.json; do
  "$M" run --model m --tokens 1,2 --out "$out" 2>err
  st=$?
  [ "$st" -eq 2 ] || fail "--out $out (an input) exited $st, expected 2"
  grep -q "refusing to write" err || fail "--out $out: $(cat err)"
done
cmp -s m/model.safetensors model.orig || fail "the model changed"
cmp -s m/config.json config.orig || fail "the config changed"
rm link.safetensors
cp "$ROOT/specs/mamba1.yaml" s.yaml
cp s.yaml s.orig
"$M" fuse s.yaml --strategy full --dot s.yaml >/dev/null 2>&1
st=$?
[ "$st" -eq 2 ] || fail "fuse --dot SPEC exited $st, expected 2"
cmp -s s.yaml s.orig || fail "fuse --dot overwrote the spec"
rm -f s.yaml s.orig

# A user's res.safetensors.tmp, a symlink to their file: neither written
# through nor removed.
echo precious >mine
ln -s "$tmp/mine" res.safetensors.tmp
"$M" run --model m --tokens 1,2 --out res.safetensors 2>/dev/null ||
  fail "run beside a .tmp symlink"
[ "$(cat mine)" = precious ] || fail "the .tmp symlink's target was written"
[ -L res.safetensors.tmp ] || fail "the .tmp symlink was removed"
[ "$(meta res.safetensors tokens)" = "1,2" ] || fail "res.safetensors"
rm -f res.safetensors.tmp mine res.safetensors

# Output paths that cannot be used: exit 2 before running, nothing made.
"$M" run --model m --tokens 1,2 --out nodir/r.safetensors 2>err
[ $? -eq 2 ] || fail "--out in a missing directory: not exit 2"
"$M" run --model m --tokens 1,2 --out m 2>err
[ $? -eq 2 ] || fail "--out a directory: not exit 2"
grep -q "is a directory" err || fail "--out a directory: $(cat err)"
: >afile
"$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=1 \
  --set vocab=64 --out afile/sub >/dev/null 2>err
[ $? -eq 2 ] || fail "init-weights --out under a file: not exit 2"
rm afile

# init-weights that fails leaves the previous model: a directory where
# config.json must go, or the output being the model it reads.
mkdir bad && cp model.orig bad/model.safetensors && mkdir bad/config.json
"$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=3 \
  --set vocab=64 --out bad >/dev/null 2>err
st=$?
[ "$st" -eq 2 ] || fail "init-weights over a config.json directory: $st"
cmp -s bad/model.safetensors model.orig || fail "bad/model.safetensors changed"
[ "$(ls -A bad | tr '\n' ' ')" = "config.json model.safetensors " ] ||
  fail "init-weights left $(ls -A bad)"
"$M" init-weights --model m --set n_layer=3 --out m >/dev/null 2>err
st=$?
[ "$st" -eq 2 ] || fail "init-weights --model m --out m exited $st"
grep -q "is the input" err || fail "init-weights --out m: $(cat err)"
cmp -s m/model.safetensors model.orig || fail "m/model.safetensors changed"
cmp -s m/config.json config.orig || fail "m/config.json changed"
# ... and one that is refused leaves no directory behind.
"$M" init-weights --model mamba-130m --set n_layer=16777216 \
  --out fresh/dir >/dev/null 2>&1
[ -e fresh ] && fail "a refused init-weights created its directory"

# Two init-weights into one directory at once (3 and 5 layers): one whole
# model is left, its config and checkpoint from the same run.
for trial in 1 2 3; do
  rm -rf two
  "$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=3 \
    --set vocab=64 --out two >/dev/null 2>&1 &
  a=$!
  "$M" init-weights --model mamba-130m --set d_model=16 --set n_layer=5 \
    --set vocab=64 --out two >/dev/null 2>&1 &
  b=$!
  wait $a; sa=$?
  wait $b; sb=$?
  [ "$sa" -eq 0 ] && [ "$sb" -eq 0 ] ||
    fail "concurrent init-weights exited $sa and $sb"
  "$M" run --model two --tokens 1,2 --out two.safetensors 2>err ||
    fail "concurrent init-weights left a mixed model: $(cat err)"
  [ "$(ls -A two | tr '\n' ' ')" = "config.json model.safetensors " ] ||
    fail "concurrent init-weights left $(ls -A two)"
done
rm -rf two two.safetensors

# kill -9 at points spread over an init-weights of about 40 MB: no
# temporary is ever left, and what is there is a whole model. Where the
# file system has no O_TMPFILE, temporaries have names and SIGKILL cannot
# remove them: then only the whole-model check applies.
anon=$(python3 -c 'import os,sys
try:
    os.close(os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, 0o600)); print(1)
except OSError: print(0)' .)
for delay in 0.05 0.15 0.3 0.5 0.8; do
  rm -rf big
  "$M" init-weights --model mamba-130m --set n_layer=2 --set vocab=8192 \
    --out big >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  if [ -d big ]; then
    names=$(ls -A big | tr '\n' ' ')
    case "$names" in
    "" | "config.json model.safetensors ") ;;
    *)
      if [ "$anon" = 1 ]; then
        fail "kill -9 after ${delay}s left: $names"
      fi
      ;;
    esac
    if [ -f big/model.safetensors ]; then
      "$M" tensors big/model.safetensors >/dev/null 2>&1 ||
        fail "kill -9 after ${delay}s left a broken model"
    fi
  fi
  left=$(ls -A | grep '\.tmp$')
  [ -z "$left" ] || [ "$anon" = 0 ] || fail "kill -9 left $left"
done
[ "$anon" = 1 ] || echo "note: no O_TMPFILE here; debris checks skipped"

# SIGTERM and SIGINT remove what was staged.
for sig in TERM INT; do
  rm -rf big
  "$M" init-weights --model mamba-130m --set n_layer=2 --set vocab=8192 \
    --out big >/dev/null 2>&1 &
  pid=$!
  sleep 0.3
  kill -s $sig $pid 2>/dev/null
  wait $pid 2>/dev/null
  names=$(ls -A big 2>/dev/null | tr '\n' ' ')
  case "$names" in
  "" | "config.json model.safetensors ") ;;
  *) fail "SIG$sig left: $names" ;;
  esac
  left=$(ls -A | grep '\.tmp$')
  [ -z "$left" ] || fail "SIG$sig left $left"
done

echo "safe_output: $fails failures"
[ "$fails" -eq 0 ]
