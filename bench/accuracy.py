#!/usr/bin/python3
"""accuracy.py — how far the executor's logits are from exact arithmetic.

    /usr/bin/python3 bench/accuracy.py --model DIR [--model DIR ...]
        [--mambalaya build/mambalaya] [--tokens 64] [--threads 2]
        [--strategy ri+rsb] [--llama-logits DIR]

For each model directory (config.json + model.safetensors, e.g. from
`mambalaya init-weights`), runs the same token ids ((i*7919+13) mod 50280,
as ../shared/bench/llamacpp/correctness.sh writes them) through

  prefill  `mambalaya run` (one pass, every position's logits), and
  decode   `mambalaya generate` (a quarter of the tokens as the prompt, the
           rest decoded one step at a time, its own argmax tokens),

and through the NumPy oracle (tests/oracle/mamba_ref.py: float64
throughout, on the stored weight values), and prints for each the largest
|difference| over every position relative to the largest |logit|, the
mean |difference|, and how often the argmax agrees; for the prefill
also how much of the largest difference an error in the final hidden
state explains (the difference's projection on the span of the tied
head's weights) and how much the head's own rounding does. Two fp32
implementations each carry their own rounding, so the distance between
them is bounded by the sum of their distances from this reference: the
yardstick of an implementation's accuracy is its distance from exact.
--llama-logits DIR compares llama.cpp's raw float32 [T, V] logits of the
same prefill tokens, DIR/ll-NAME.f32 for a model directory named NAME
(what correctness.sh leaves in /tmp/lc/logits), with the same oracle.
--float32-oracle adds a third fp32 implementation as a yardstick: the
oracle's own code run with its float64 made float32 (NumPy's and BLAS's
roundings, independent of both executors'), its distance from exact and
from each side: how far apart two fp32 implementations of this model
fall when neither copies the other's rounding.
Only /usr/bin/python3 with NumPy is needed; a 130m model takes about 20 s.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "oracle"))
import mamba_ref as ref  # noqa: E402


def read_logits(path):
    """[batch, T, V] F32 logits and the metadata of a mambalaya output."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        info = header["logits"]
        f.seek(8 + n + info["data_offsets"][0])
        count = int(np.prod(info["shape"]))
        a = np.frombuffer(f.read(4 * count), dtype=np.float32)
    shape = info["shape"]
    return a.reshape(-1, shape[-1]).astype(np.float64), header.get("__metadata__", {})


def distance(x, exact, basis=None):
    """X's distance from EXACT; with BASIS (an orthonormal basis of the
    head's weight columns), also split in two: the part an error in the
    final hidden state explains (its projection on the head's span) and
    the rest, the head's own rounding."""
    e = x - exact
    d = np.abs(e)
    scale = np.abs(exact).max()
    agree = (x.argmax(axis=1) == exact.argmax(axis=1)).mean()
    text = "max rel %.2e  mean |d| %.2e  argmax %.1f%%" % (
        d.max() / scale, d.mean(), agree * 100)
    if basis is not None:
        hidden = (e @ basis) @ basis.T
        text += " (hidden state %.2e, head %.2e)" % (
            np.abs(hidden).max() / scale, np.abs(e - hidden).max() / scale)
    return text


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def oracle_float32(params, cfg, ids):
    """The oracle's forward with float64 meaning float32 throughout (the
    module's NumPy swapped for one whose float64 is float32, the
    parameters rounded to float32): a third fp32 implementation."""
    np32 = type(np)("numpy_float32")
    np32.__dict__.update(np.__dict__)
    np32.float64 = np.float32

    def cast(o):
        if isinstance(o, np.ndarray):
            return o.astype(np.float32)
        if isinstance(o, dict):
            return {k: cast(v) for k, v in o.items()}
        if isinstance(o, list):
            return [cast(v) for v in o]
        return o

    saved, ref.np = ref.np, np32
    try:
        logits, _ = ref.forward(cast(params), cfg, np.array([ids]))
    finally:
        ref.np = saved
    return logits.reshape(-1, logits.shape[-1]).astype(np.float64)


def measure(args, model, tmp):
    cfg, params = ref.load_model(model)
    ids = [(i * 7919 + 13) % 50280 % cfg.vocab_size for i in range(args.tokens)]
    tokens = ",".join(map(str, ids))
    out = os.path.join(tmp, "prefill.safetensors")
    run([args.mambalaya, "run", "--model", model, "--tokens", tokens,
         "--strategy", args.strategy, "--threads", str(args.threads),
         "--out", out])
    exact, _ = ref.forward(params, cfg, np.array([ids]))
    exact = exact.reshape(-1, exact.shape[-1])
    got, _ = read_logits(out)
    basis = np.linalg.qr(params["embedding"])[0]  # the tied head's span
    print("%s prefill %d (%s): %s" % (model, len(ids), args.strategy,
                                      distance(got, exact, basis)))
    name = os.path.basename(os.path.normpath(model))
    dump = os.path.join(args.llama_logits or "", "ll-%s.f32" % name)
    if args.llama_logits and os.path.exists(dump):
        x = np.fromfile(dump, dtype=np.float32).reshape(exact.shape)
        x = x.astype(np.float64)
        print("%s prefill %d (llama.cpp): %s" % (
            model, len(ids), distance(x, exact, basis)))
        d = np.abs(got - x).max() / np.abs(exact).max()
        print("%s prefill %d: mambalaya to llama.cpp, max rel %.2e" % (
            model, len(ids), d))
    if args.float32_oracle:
        f32 = oracle_float32(params, cfg, ids)
        scale = np.abs(exact).max()
        print("%s prefill %d (the oracle in float32): %s" % (
            model, len(ids), distance(f32, exact, basis)))
        print("%s prefill %d: the float32 oracle to mambalaya, max rel %.2e"
              % (model, len(ids), np.abs(f32 - got).max() / scale))
        if args.llama_logits and os.path.exists(dump):
            print("%s prefill %d: the float32 oracle to llama.cpp, max rel "
                  "%.2e" % (model, len(ids), np.abs(f32 - x).max() / scale))
    prompt = max(1, len(ids) // 4)
    out = os.path.join(tmp, "decode.safetensors")
    run([args.mambalaya, "generate", "--model", model, "--tokens",
         ",".join(map(str, ids[:prompt])), "--max-new",
         str(len(ids) - prompt), "--threads", str(args.threads), "--out", out])
    got, meta = read_logits(out)
    seq = [int(t) for t in str(meta["tokens"]).split(",")][:got.shape[0]]
    exact, _ = ref.forward(params, cfg, np.array([seq]))
    exact = exact.reshape(-1, exact.shape[-1])
    print("%s decode path (%d prompt + %d steps): %s" % (
        model, prompt, got.shape[0] - prompt, distance(got, exact)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--mambalaya", default=os.path.join(HERE, "..", "build",
                                                        "mambalaya"))
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--strategy", default="ri+rsb")
    ap.add_argument("--llama-logits", metavar="DIR",
                    help="llama.cpp's prefill logits: DIR/ll-NAME.f32")
    ap.add_argument("--float32-oracle", action="store_true",
                    help="also the oracle run in float32, as a yardstick")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.model:
            measure(args, model, tmp)


if __name__ == "__main__":
    main()
