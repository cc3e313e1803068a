#!/usr/bin/env python3
"""A small byte-level BPE, written from the published algorithm (GPT-2's
encoder.py, the GPT-2 pre-tokenizer pattern, Hugging Face's tokenizer.json
layout), as the reference for mambalaya's tokenizer. Standard library only.

    bpe_ref.py make DIR      train a tokenizer on a small corpus and write
                             DIR/tokenizer.json (merges as "a b"),
                             DIR/tokenizer_pairs.json (merges as ["a", "b"]),
                             DIR/strings.jsonl (a few hundred test strings,
                             one JSON string per line) and DIR/expected.jsonl
                             (their ids, one JSON array per line)
    bpe_ref.py encode TOKENIZER TEXT   print TEXT's ids, comma-separated
    bpe_ref.py decode TOKENIZER IDS    print the text of ids 1,2,3

The pre-tokenizer is the pattern
    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
written out by hand (Python's re has no \\p{L}); when the third-party
`regex` module is there, `make` checks it against the pattern itself.
"""
import json
import random
import sys
import unicodedata

# Unicode's White_Space property: \s of the pattern.
WHITE = set(
    [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028,
     0x2029, 0x202F, 0x205F, 0x3000] + list(range(0x2000, 0x200B)))


def char_class(c):
    if ord(c) in WHITE:
        return "space"
    cat = unicodedata.category(c)[0]
    return "letter" if cat == "L" else "number" if cat == "N" else "other"


def pretokenize(text):
    """The pattern's matches, left to right."""
    out, i, n = [], 0, len(text)
    classes = [char_class(c) for c in text]
    while i < n:
        # 's 't 're 've 'm 'll 'd
        if text[i] == "'" and i + 1 < n:
            if text[i + 1] in "stmd":
                out.append(text[i:i + 2])
                i += 2
                continue
            if text[i + 1:i + 3] in ("re", "ve", "ll"):
                out.append(text[i:i + 3])
                i += 3
                continue
        # an optional space, then a run of letters, numbers or others
        j = i + 1 if text[i] == " " and i + 1 < n else i
        if classes[j] != "space":
            k = j + 1
            while k < n and classes[k] == classes[j]:
                k += 1
            out.append(text[i:k])
            i = k
            continue
        # white space: all of it at the end; before a non-space, all but
        # the last character (which goes with what follows), at least one
        k = i + 1
        while k < n and classes[k] == "space":
            k += 1
        if k < n and k - i > 1:
            k -= 1
        out.append(text[i:k])
        i = k
    return out


def bytes_to_unicode():
    """Byte b -> a printable character (GPT-2's alphabet)."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs, extra = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = bytes_to_unicode()
U2B = {u: b for b, u in B2U.items()}


def to_alphabet(s):
    return "".join(B2U[b] for b in s.encode("utf-8"))


class Bpe:
    def __init__(self, vocab, merges, added):
        self.vocab = vocab                      # alphabet string -> id
        self.ranks = {}
        for r, m in enumerate(merges):
            self.ranks.setdefault(m, r)
        self.added = sorted(added, key=lambda a: -len(a[0]))  # (text, id)
        self.text = {i: bytes(U2B[c] for c in s) for s, i in vocab.items()}
        for s, i in added:
            self.text[i] = s.encode("utf-8")

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                  for m in j["model"]["merges"]]
        added = [(a["content"], a["id"]) for a in j.get("added_tokens") or []]
        return Bpe(j["model"]["vocab"], merges, added)

    def bpe(self, word):
        """GPT-2's encoder.py bpe(): merge the lowest-ranked pair, all its
        occurrences left to right, until no pair is a merge."""
        word = list(word)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            new, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    new.append(word[i] + word[i + 1])
                    i += 2
                else:
                    new.append(word[i])
                    i += 1
            word = new
        return word

    def encode(self, text):
        ids, start, i = [], 0, 0
        while i <= len(text):
            hit = None
            if i < len(text):
                for s, tid in self.added:
                    if text.startswith(s, i):
                        hit = (s, tid)
                        break
                if hit is None:
                    i += 1
                    continue
            for piece in pretokenize(text[start:i]):
                ids += [self.vocab[s] for s in self.bpe(to_alphabet(piece))]
            if hit is None:
                break
            ids.append(hit[1])
            i += len(hit[0])
            start = i
        return ids

    def decode(self, ids):
        return b"".join(self.text[i] for i in ids).decode("utf-8")


def train(corpus, nmerges):
    """Merges learned from CORPUS: the most frequent adjacent pair (ties:
    the first met), over and over."""
    words = {}
    for line in corpus:
        for piece in pretokenize(line):
            w = tuple(to_alphabet(piece))
            words[w] = words.get(w, 0) + 1
    merges = []
    for _ in range(nmerges):
        counts = {}
        for w, c in words.items():
            for p in zip(w, w[1:]):
                counts[p] = counts.get(p, 0) + c
        if not counts:
            break
        best = max(counts, key=lambda p: counts[p])
        merges.append(best)
        merged = {}
        for w, c in words.items():
            new, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    new.append(w[i] + w[i + 1])
                    i += 2
                else:
                    new.append(w[i])
                    i += 1
            merged[tuple(new)] = merged.get(tuple(new), 0) + c
        words = merged
    return merges


CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "It's a state-space model; we'll see what they've done, and I'm sure "
    "you'd like it.",
    "Mamba runs in linear time: 1024 tokens, 2048 tokens, 4096 tokens.",
    "  Indented lines\tand tabs\nand new lines\n\nand blank ones.",
    "Ça va très bien, merci ! Où est la gare ? Être ou ne pas être.",
    "Straße, Übermaß, Fußgänger; über alles.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.",
    "日本語のテキストと中文文本，還有한국어 텍스트。",
    "Emoji: 😀😃😄 👍🏽 ❤️ 🇫🇷 and a ZWJ family 👨‍👩‍👧.",
    "Numbers: 3.14159, 2,718, ١٢٣, ½ and Ⅻ.",
    "<|endoftext|> marks the end of a text.",
    "def f(x):\n    return x * 2  # comment\n",
    "Ends with spaces   ",
]


def test_strings(rng):
    fixed = [
        "", " ", "  ", "   ", "\n", "\n\n", "\t", " \t\n", "a", " a", "a ",
        "  a", "a  b", "a   b", "a\tb", "a\nb", "a\n\nb", "a \nb", "a\n b",
        "a\r\nb", "word\u00a0word", "word\u3000word", "x\u2003y",
        "it's", "It'S", "it 's", "we'll've", "'s", "''s", "x'yz", "don't",
        "I'm here, you're there, they'd go.", "3.14", "1,000,000", "12ab",
        "ab12", "½", "١٢٣", "Ⅻ", "<|endoftext|>", "a<|endoftext|>b",
        "<|endoftext|><|endoftext|>", " <|endoftext|> ", "<|endoftext",
        "<|padding|>x", "héllo wörld", "日本語", "😀", "👨‍👩‍👧", "🇫🇷",
        "é", "naïve café", "Straße", "ﬁne",
        "!!!???", " !!", "  !!", "a!b", "(x)", "[1, 2]", "{'a': 1}",
        "tab\tseparated\tvalues", "trailing newline\n", "\nleading",
        "mixed   \t  spaces", "ÿ", "\u0085x", "x\u2028y",
    ]
    pieces = ["the", " the", "The", "ing", " a", "s", "'s", "'ll", " ", "  ",
              "\t", "\n", "\r\n", ",", ".", "!", "?", "'", "\"", "-", "_",
              "0", "42", "3.5", "é", "ñ", "ü", "ß", "Ж", "λ", "中", "文",
              "日本", "한", "😀", "👍🏽", "\u00a0", "\u3000", "<|endoftext|>",
              "fox", " dog", "Mamba", " tokens", "ä", "ø", "x", "y", "z",
              "Ⅻ", "½", "١", "—", "…", "€", "$", "%", "\\", "/"]
    out = list(fixed)
    while len(out) < 400:
        k = rng.randint(1, 12)
        out.append("".join(rng.choice(pieces) for _ in range(k)))
    for s in out:
        assert unicodedata.normalize("NFC", s) == s, repr(s)
    return out


def check_against_regex(strings):
    """The hand-written pre-tokenizer against the pattern itself, when the
    `regex` module is installed (it is not needed otherwise)."""
    try:
        import regex
    except ImportError:
        return "regex module absent: pattern check skipped"
    pat = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
    for s in strings:
        want = pat.findall(s)
        got = pretokenize(s)
        if want != got:
            sys.exit("pre-tokenizer differs from the pattern on %r: %r vs %r"
                     % (s, got, want))
    return "pre-tokenizer equals the pattern on %d strings" % len(strings)


def make(out):
    rng = random.Random(7)
    merges = train(CORPUS * 3, 300)
    vocab = {}
    added = [("<|endoftext|>", 0), ("<|padding|>", 1)]
    for s, i in added:
        vocab[to_alphabet(s)] = i  # as GPT-NeoX's vocabulary has them
    for b in range(256):
        vocab.setdefault(B2U[b], len(vocab))
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    strings = test_strings(rng)
    note = check_against_regex(strings + CORPUS)
    bpe = Bpe(vocab, merges, added)
    for pairs in (False, True):
        tok = {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [
                {"id": i, "content": s, "single_word": False,
                 "lstrip": False, "rstrip": False, "normalized": False,
                 "special": True} for s, i in added],
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": True, "use_regex": True},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": False,
                               "trim_offsets": True, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": False,
                        "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False,
                      "vocab": vocab,
                      "merges": [[a, b] if pairs else a + " " + b
                                 for a, b in merges]},
        }
        name = "tokenizer_pairs.json" if pairs else "tokenizer.json"
        with open(f"{out}/{name}", "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False, indent=1)
    with open(f"{out}/strings.jsonl", "w", encoding="utf-8") as f:
        for s in strings:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    with open(f"{out}/expected.jsonl", "w", encoding="utf-8") as f:
        for s in strings:
            ids = bpe.encode(s)
            assert bpe.decode(ids) == s, repr(s)
            f.write(json.dumps(ids) + "\n")
    print("%d merges, vocabulary %d, %d strings; %s"
          % (len(merges), len(vocab), len(strings), note))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "encode":
        print(",".join(map(str, Bpe.load(sys.argv[2]).encode(sys.argv[3]))))
    elif len(sys.argv) == 4 and sys.argv[1] == "decode":
        ids = [int(x) for x in sys.argv[3].split(",") if x]
        sys.stdout.write(Bpe.load(sys.argv[2]).decode(ids))
    else:
        sys.exit(__doc__)


main()
