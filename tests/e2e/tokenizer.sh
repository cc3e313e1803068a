#!/bin/sh
# The byte-level BPE tokenizer against the Python reference of
# tests/tokenizer/bpe_ref.py: the reference trains a small tokenizer.json
# (GPT-NeoX's layout; merges as "a b" and as ["a", "b"]) and encodes 400
# strings (UTF-8 of many scripts, emoji, white space of every kind,
# contractions, added tokens); `mambalaya tokenize` must give the same ids
# and decode them back to the same text. Then run/generate --prompt on a
# tiny model with that tokenizer: the tokens are the reference's, and the
# streamed text is the prompt followed by the generated ids' text.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"
PY=/usr/bin/python3
REF=tests/tokenizer/bpe_ref.py

if ! $PY -c 'import json, unicodedata' 2>/dev/null; then
  skip "tokenizer: no $PY"
fi
if ! $PY $REF make "$tmp" >"$tmp/make.log" 2>&1; then
  echo "FAIL: the reference failed: $(cat "$tmp/make.log")"
  exit 1
fi
# The reference checks its pre-tokenizer against the pattern when the
# `regex` module is there, and says it skipped the check otherwise: that
# note is expected then, and asserted here rather than shown in the log.
if $PY -c 'import regex' 2>/dev/null; then
  grep -q "; pre-tokenizer equals the pattern on [0-9]* strings$" \
    "$tmp/make.log" || fail "the pattern check: $(cat "$tmp/make.log")"
else
  grep -q "; regex module absent: pattern check skipped$" "$tmp/make.log" ||
    fail "no regex module, yet: $(cat "$tmp/make.log")"
fi
echo "tokenizer reference: $(sed 's/; regex module absent.*//' "$tmp/make.log")"

# ---- encoding and decoding, string by string ----
for tok in tokenizer.json tokenizer_pairs.json; do
  if ! "$MAMBALAYA" tokenize --tokenizer "$tmp/$tok" --lines "$tmp/strings.jsonl" \
      >"$tmp/got.jsonl" 2>"$tmp/err"; then
    fail "$tok: tokenize exited $?: $(cat "$tmp/err")"
    continue
  fi
  if ! cmp -s "$tmp/got.jsonl" "$tmp/expected.jsonl"; then
    diff "$tmp/got.jsonl" "$tmp/expected.jsonl" | head -6
    fail "$tok: ids differ from the reference's"
  fi
done
n=$(wc -l <"$tmp/strings.jsonl")
[ "$n" -ge 300 ] || fail "only $n test strings"

"$MAMBALAYA" tokenize --tokenizer "$tmp/tokenizer.json" \
  --decode-lines "$tmp/expected.jsonl" >"$tmp/decoded.jsonl" 2>"$tmp/err" ||
  fail "decode exited $?: $(cat "$tmp/err")"
$PY - "$tmp/decoded.jsonl" "$tmp/strings.jsonl" <<'EOF' || fail "decoding does not give the strings back"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
b = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
bad = [(x, y) for x, y in zip(a, b) if x != y]
if len(a) != len(b) or bad:
    sys.exit("decoded %d of %d lines; first difference: %r" % (len(a), len(b), bad[:1]))
EOF

# --text and --ids, against the reference's command line
text="Ça va? It's 3.14 —  fine  <|endoftext|>日本"
want=$($PY $REF encode "$tmp/tokenizer.json" "$text")
got=$("$MAMBALAYA" tokenize --tokenizer "$tmp/tokenizer.json" --text "$text")
[ "$got" = "$want" ] || fail "--text: $got, expected $want"
back=$("$MAMBALAYA" tokenize --tokenizer "$tmp/tokenizer.json" --ids "$got")
[ "$back" = "$text" ] || fail "--ids gives '$back', expected '$text'"

# ---- prompts through a model ----
vocab=$($PY -c "import json,sys; print(len(json.load(open(sys.argv[1]))['model']['vocab']))" "$tmp/tokenizer.json")
model=$tmp/model
"$MAMBALAYA" init-weights --model mamba-130m --set d_model=32 --set n_layer=2 \
  --set vocab="$vocab" --dtype F16 --seed 3 --out "$model" >/dev/null ||
  fail "init-weights exited $?"
cp "$tmp/tokenizer.json" "$model/"
prompt="The quick brown fox jumps over  the lazy dog."
want=$($PY $REF encode "$tmp/tokenizer.json" "$prompt")
"$MAMBALAYA" run --model "$model" --prompt "$prompt" --json >"$tmp/run.json" \
  2>"$tmp/err" || fail "run --prompt exited $?: $(cat "$tmp/err")"
got=$($PY -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" "$tmp/run.json")
[ "$got" = "$want" ] || fail "run --prompt tokens $got, expected $want"

"$MAMBALAYA" generate --model "$model" --prompt "$prompt" --max-new 12 \
  >"$tmp/stream.txt" 2>"$tmp/err" || fail "generate --prompt exited $?: $(cat "$tmp/err")"
"$MAMBALAYA" generate --model "$model" --prompt "$prompt" --max-new 12 --json \
  >"$tmp/gen.json" 2>"$tmp/err" || fail "generate --json exited $?: $(cat "$tmp/err")"
$PY - "$tmp/gen.json" "$tmp/stream.txt" "$tmp/tokenizer.json" "$prompt" "$want" <<EOF || fail "generate --prompt: the text does not round-trip"
import json, sys
sys.argv[0] = "$REF"
exec(open("$REF", encoding="utf-8").read().replace("\nmain()\n", "\n"))
gen = json.load(open(sys.argv[1]))
stream = open(sys.argv[2], encoding="utf-8").read()
bpe = Bpe.load(sys.argv[3])
prompt, want = sys.argv[4], sys.argv[5]
ids = gen["generated"][0]
assert ",".join(map(str, gen["tokens"])) == want, gen["tokens"]
assert bpe.decode(gen["tokens"]) == prompt
assert len(ids) == 12, ids
assert gen["text"][0] == bpe.decode(ids), (gen["text"], bpe.decode(ids))
assert stream == prompt + bpe.decode(ids) + "\n", (stream, prompt, ids)
assert gen["peak_activation_bytes"] > 0 and gen["weight_bytes"] > 0
EOF

# ---- errors: exit 2, a message, nothing on stdout ----
expect_error() { # NAME PATTERN COMMAND...
  name=$1 pattern=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
  [ "$status" -eq 2 ] || fail "$name: exit status $status, expected 2"
  [ -s "$tmp/out" ] && fail "$name: wrote to stdout"
  grep -q -- "$pattern" "$tmp/err" || fail "$name: no '$pattern' in: $(cat "$tmp/err")"
}
expect_error "bad UTF-8" "not valid UTF-8" \
  "$MAMBALAYA" run --model "$model" --prompt "$(printf 'ab\377')" --json
expect_error "no tokenizer" "tokenizer.json" \
  "$MAMBALAYA" tokenize --model "$tmp/none" --text hi
sed 's/"type": "BPE"/"type": "WordPiece"/' "$tmp/tokenizer.json" >"$tmp/wp.json"
expect_error "WordPiece" "model of type WordPiece is not supported" \
  "$MAMBALAYA" tokenize --tokenizer "$tmp/wp.json" --text hi
expect_error "tokens and prompt" "needs one of --tokens, --tokens-file and --prompt" \
  "$MAMBALAYA" run --model "$model" --prompt hi --tokens 1,2 --json
expect_error "an empty prompt" "has no tokens" \
  "$MAMBALAYA" generate --model "$model" --prompt "" --max-new 2

if [ "$fails" -ne 0 ]; then
  echo "tokenizer: $fails failures"
  exit 1
fi
echo "tokenizer: 0 failures"
