#!/bin/sh
# `mambalaya tensors FILE` on safetensors files: every malformed file must
# be rejected with one line
#   FILE: error: MESSAGE
# on stderr, exit status 2 and nothing on stdout; valid files are listed.
# The files are made here, byte by byte, by a Python snippet that uses only
# the standard library (struct, json); it prints one line per malformed
# file: NAME<TAB>part of the expected message.
set -u
HARNESS_CWD=root
. "$(dirname "$0")/lib/harness.sh"

/usr/bin/python3 - "$tmp" >"$tmp/cases" <<'EOF' || { echo "FAIL: generator"; exit 1; }
import json, struct, sys

out = sys.argv[1]

def raw(name, data, expect):
    with open("%s/%s.safetensors" % (out, name), "wb") as f:
        f.write(data)
    if expect is not None:
        print("%s\t%s" % (name, expect))

def framed(name, header, data, expect):
    """HEADER (bytes, or text, or a dict dumped as JSON) framed by its
    length, then DATA."""
    if isinstance(header, dict):
        header = json.dumps(header)
    if isinstance(header, str):
        header = header.encode()
    raw(name, struct.pack("<Q", len(header)) + header + data, expect)

def entry(dtype, shape, begin, end, **extra):
    e = {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}
    e.update(extra)
    return e

f32 = struct.pack("<3f", 1.0, -2.0, 0.5)

raw("empty", b"", "file is 0 bytes, too short for the 8-byte header length")
raw("truncated", b"\x10\x00\x00", "file is 3 bytes, too short")
raw("past_end", struct.pack("<Q", 100) + b"{}",
    "header length 100 runs past the end of the file (10 bytes)")
raw("huge_length", struct.pack("<Q", 2**63) + b"{}",
    "header length 9223372036854775808 is absurdly large")
framed("not_json", "{tensor: 1}", b"", "the header is not valid JSON")
framed("bad_utf8", b'{"\xff\xfe": 1}', b"", "the header is not valid JSON")
framed("not_object", "[]", b"", "the header is an array, not a JSON object")
framed("leading_space", ' {"a": %s}' % json.dumps(entry("F32", [3], 0, 12)),
       f32, "header must start with '{', found ' '")
framed("duplicate_key",
       '{"a": %s, "a": %s}' % (json.dumps(entry("F32", [3], 0, 12)),
                               json.dumps(entry("F32", [3], 0, 12))),
       f32, "the header has a duplicate key")
framed("unknown_dtype", {"a": entry("Q7", [3], 0, 12)}, f32,
       "tensor 'a': unknown dtype 'Q7'")
framed("dtype_i64", {"a": entry("I64", [1], 0, 8)}, struct.pack("<q", 7),
       "tensor 'a': unsupported dtype 'I64'")
framed("dtype_number", {"a": entry(32, [3], 0, 12)}, f32,
       "tensor 'a': dtype is a number, not a string")
framed("negative_dim", {"a": entry("F32", [-3], 0, 12)}, f32,
       "tensor 'a': shape[0] is not a non-negative integer")
framed("too_many_dims", {"a": entry("F32", [1] * 17, 0, 4)}, f32[:4],
       "tensor 'a': shape has 17 dimensions (at most 16)")
framed("size_mismatch", {"a": entry("F32", [3], 0, 8)}, f32[:8],
       "tensor 'a': data_offsets [0, 8] hold 8 bytes but F32 [3] needs 12")
framed("out_of_range", {"a": entry("F32", [3], 4, 16)}, f32,
       "tensor 'a': data_offsets [4, 16] run past the end of the data "
       "section (12 bytes)")
framed("reversed_offsets", {"a": entry("F32", [0], 8, 4)}, b"",
       "tensor 'a': data_offsets [8, 4] end before they begin")
framed("overlap", {"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)},
       f32, "tensors 'a' [0, 8) and 'b' [4, 12) overlap")
framed("hole", {"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 8, 12)},
       f32, "bytes [4, 8) of the data section belong to no tensor")
framed("trailing", {"a": entry("F32", [2], 0, 8)}, f32,
       "4 trailing bytes: the data section is 12 bytes but the tensors end "
       "at 8")
framed("missing_offsets", {"a": {"dtype": "F32", "shape": [3]}}, f32,
       "tensor 'a': missing \"data_offsets\"")
framed("extra_field", {"a": entry("F32", [3], 0, 12, extra=1)}, f32,
       "tensor 'a': unexpected field 'extra'")
framed("entry_not_object", {"a": [0, 12]}, f32,
       "tensor 'a': entry is an array, not an object")
framed("metadata_number",
       {"__metadata__": {"format": "pt", "version": 2},
        "a": entry("F32", [3], 0, 12)},
       f32, "__metadata__ 'version' is a number, not a string")
framed("metadata_array", {"__metadata__": ["pt"]}, b"",
       "__metadata__ is an array, not an object of strings")

# Valid files: written the way the reference writer does (compact JSON,
# padded with spaces to 8 bytes) but with the header out of data order,
# and one with no tensors at all.
header = json.dumps({"b": entry("BF16", [], 16, 18),
                     "__metadata__": {"format": "pt"},
                     "w": entry("F32", [3], 0, 12),
                     "h": entry("F16", [2, 1], 12, 16)},
                    separators=(",", ":")).encode()
header += b" " * (-len(header) % 8)
framed("valid", header, f32 + struct.pack("<2e", 1.0, -2.5) + b"\x80\x3f",
       None)
framed("no_tensors", "{}      ", b"", None)
EOF

n=0
bad=0
fail() {
  echo "FAIL $*"
  bad=$((bad + 1))
}
tab=$(printf '\t')
while IFS=$tab read -r name msg; do
  n=$((n + 1))
  f="$tmp/$name.safetensors"
  "$MAMBALAYA" tensors "$f" >"$tmp/out" 2>"$tmp/err"
  status=$?
  err=$(cat "$tmp/err")
  if [ "$status" -ne 2 ]; then
    fail "$name: exit status $status, expected 2 ($err)"
  elif [ -s "$tmp/out" ]; then
    fail "$name: printed on stdout"
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
    fail "$name: expected one line on stderr, got: $err"
  else
    case "$err" in
    "$f: error: "*"$msg"*) ;;
    *) fail "$name: expected '$f: error: ...$msg...', got: $err" ;;
    esac
  fi
done <"$tmp/cases"
echo "$n malformed safetensors files, $bad failures"
[ "$n" -ge 14 ] || { echo "FAIL: fewer than 14 malformed files"; exit 1; }

# A valid file: every tensor in the order of its data, with its dtype, shape and
# byte range, and the metadata.
f="$tmp/valid.safetensors"
if "$MAMBALAYA" tensors "$f" >"$tmp/out" 2>"$tmp/err"; then
  grep -q "^$f: 3 tensors, 18 data bytes, header 200 bytes$" "$tmp/out" ||
    fail "valid: summary line: $(head -1 "$tmp/out")"
  grep -q "^  format: pt$" "$tmp/out" || fail "valid: metadata"
  grep -q "^w  *F32  *\[3\]  *\[0, 12)$" "$tmp/out" || fail "valid: w"
  grep -q "^h  *F16  *\[2, 1\]  *\[12, 16)$" "$tmp/out" || fail "valid: h"
  grep -q "^b  *BF16  *\[\]  *\[16, 18)$" "$tmp/out" || fail "valid: b"
  rows=$(grep '\[' "$tmp/out" | cut -d' ' -f1 | tr '\n' ' ')
  [ "$rows" = "w h b " ] || fail "valid: rows in data order: $rows"
  [ -s "$tmp/err" ] && fail "valid: printed on stderr"
else
  fail "valid: exit status $? ($(cat "$tmp/err"))"
fi

# The same as JSON, checked by a JSON parser.
if "$MAMBALAYA" tensors "$f" --json >"$tmp/json" 2>"$tmp/err"; then
  /usr/bin/python3 - "$tmp/json" <<'EOF' || fail "valid --json: $(cat "$tmp/json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["metadata"] == {"format": "pt"}, j["metadata"]
assert j["header_bytes"] == 200 and j["data_bytes"] == 18, j
assert [(t["name"], t["dtype"], t["shape"], t["data_offsets"])
        for t in j["tensors"]] == [("w", "F32", [3], [0, 12]),
                                   ("h", "F16", [2, 1], [12, 16]),
                                   ("b", "BF16", [], [16, 18])], j["tensors"]
EOF
else
  fail "valid --json: exit status $?"
fi

f="$tmp/no_tensors.safetensors"
out=$("$MAMBALAYA" tensors "$f" 2>&1) || fail "no_tensors: exit status $?"
[ "$out" = "$f: 0 tensors, 0 data bytes, header 8 bytes" ] ||
  fail "no_tensors: got: $out"

# Usage: --help, a missing FILE, an unreadable file.
"$MAMBALAYA" tensors --help | grep -q "^usage: mambalaya tensors FILE" ||
  fail "--help"
"$MAMBALAYA" tensors >/dev/null 2>&1
[ $? -eq 2 ] || fail "no FILE: expected exit status 2"
err=$("$MAMBALAYA" tensors "$tmp/absent.safetensors" 2>&1 >/dev/null)
[ $? -eq 2 ] || fail "absent file: expected exit status 2"
case "$err" in
"$tmp/absent.safetensors: error: cannot read: "*) ;;
*) fail "absent file: got: $err" ;;
esac

[ "$bad" -eq 0 ]
