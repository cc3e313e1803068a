"""An independent reference for a whole hybrid model: Granite 4.0's
decoder (Hugging Face's GraniteMoeHybridForCausalLM, modeling_granitemoehybrid)
written in NumPy (float64) from its published formulas: Mamba-2 mixers
with groups, grouped-query attention with rotary embeddings, a mixture of
experts (top-k of the router's logits, softmaxed among themselves) with a
shared MLP beside it, RMSNorms, a tied head.

It reads a folder `mambalaya init-weights --config` wrote: config.json
and model.safetensors, whose tensors are keyed by where each block runs
(src/net/forward.c: "layers.I.K.NAME", "embed.WE", "head.WN") and laid out
as the block's spec declares them (specs/layers/*.yaml). Those layouts
are the file format; the computation below is the published model's,
written from its formulas, not from the specs' Einsums.

Usage: net_ref.py DIR TOKENS LOGITS
  TOKENS: "1,2,3;4,5,6" (the prompt, one row per sequence) followed by the
  tokens mambalaya generated; LOGITS: the safetensors file `generate
  --out` wrote. Runs the whole sequence at once (causal: every position's
  logits are the incremental ones) and prints the largest absolute
  difference from mambalaya's logits; exits 1 above 1e-5.
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1 + np.exp(-x))


def softplus(x):
    return np.log1p(np.exp(x))


def mamba2(x, W, cfg, eps):
    """Mamba2Mixer on the normed input x [T, D] (one sequence), from zero
    state: in_proj -> z, xBC, dt; a causal depthwise conv over xBC with
    its bias and SiLU; the selective scan per head, each group's B and C
    shared by its heads; y + D x; RMSNormGated(y, z) per group; out_proj."""
    G = cfg["mamba_n_groups"]
    H = cfg["mamba_n_heads"]
    P = cfg["mamba_d_head"]
    N = cfg["mamba_d_state"]
    K = cfg["mamba_d_conv"]
    R = H // G
    T = x.shape[0]
    z = np.einsum("td,grqd->tgrq", x, W["WRX"])
    xs = np.einsum("td,grqd->tgrq", x, W["WTX"])
    Bm = np.einsum("td,gnd->tgn", x, W["WTB"])
    Cm = np.einsum("td,gnd->tgn", x, W["WTC"])
    dt = np.einsum("td,grd->tgr", x, W["WTDelta"])

    def conv(u, w, b):  # u [T, ...], w [..., K], causal
        out = np.zeros_like(u)
        for t in range(T):
            for j in range(K):
                s = t - (K - 1) + j
                if s >= 0:
                    out[t] += w[..., j] * u[s]
        return silu(out + b)

    xs = conv(xs, W["WTTX"], W["BTTX"])
    Bm = conv(Bm, W["WTTB"], W["BTTB"])
    Cm = conv(Cm, W["WTTC"], W["BTTC"])
    dt = softplus(dt + W["BDelta"])
    A = W["A"]  # the decay rate itself, negative (A = -exp(A_log))
    h = np.zeros((G, R, P, N))
    y = np.zeros((T, G, R, P))
    for t in range(T):
        decay = np.exp(dt[t] * A)[:, :, None, None]
        upd = (dt[t][:, :, None, None] * xs[t][:, :, :, None]
               * Bm[t][:, None, None, :])
        h = decay * h + upd
        y[t] = np.einsum("grpn,gn->grp", h, Cm[t])
    y = y + W["D"][None, :, :, None] * xs
    g = y * silu(z)
    var = np.mean(g * g, axis=(2, 3), keepdims=True)
    g = g / np.sqrt(var + eps) * W["WNLLY"]
    return np.einsum("tgrq,dgrq->td", g, W["WEY"])


def rope(x, pos, theta):
    """rotate_half RoPE over the last axis (the head dimension)."""
    hd = x.shape[-1]
    inv = theta ** (-np.arange(0, hd // 2) * 2.0 / hd)
    ang = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    rot = np.concatenate([-x2, x1], axis=-1)
    return x * cos + rot * sin


def attention(x, W, cfg):
    """Causal grouped-query attention on the normed input x [T, D]."""
    Hq = cfg["num_attention_heads"]
    Hk = cfg["num_key_value_heads"]
    D = cfg["hidden_size"]
    hd = D // Hq
    T = x.shape[0]
    wq = W["WQ"].reshape(D, Hq * hd)      # [D, G, R, C, U] -> heads g*R + r
    wk = W["WK"].reshape(D, Hk * hd)
    wv = W["WV"].reshape(D, Hk * hd)
    q = (x @ wq).reshape(T, Hq, hd).transpose(1, 0, 2)
    k = (x @ wk).reshape(T, Hk, hd).transpose(1, 0, 2)
    v = (x @ wv).reshape(T, Hk, hd).transpose(1, 0, 2)
    pos = np.arange(T, dtype=np.float64)
    theta = cfg.get("rope_theta", 10000.0)
    q, k = rope(q, pos, theta), rope(k, pos, theta)
    rep = Hq // Hk  # query head g*R + r reads key-value head g
    k = np.repeat(k, rep, axis=0)
    v = np.repeat(v, rep, axis=0)
    scale = cfg.get("attention_multiplier", 1.0)
    s = np.einsum("htc,hsc->hts", q, k) * scale
    s = np.where(np.tril(np.ones((T, T), bool))[None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("hts,hsc->thc", p, v).reshape(T, Hq * hd)
    return o @ W["WO"].reshape(Hq * hd, D)


def moe(x, W, cfg):
    """GraniteMoeHybridMoE and the shared MLP on the normed input x [T, D]:
    top-k of the router's logits, softmaxed among themselves."""
    k = cfg["num_experts_per_tok"]
    logits = x @ W["WR"]
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        top = np.argsort(-logits[t], kind="stable")[:k]
        w = np.exp(logits[t, top] - logits[t, top].max())
        w /= w.sum()
        for e, we in zip(top, w):
            h = silu(x[t] @ W["WG"][e]) * (x[t] @ W["WU"][e])
            out[t] += we * (h @ W["WD"][e])
    shared = silu(x @ W["WSG"]) * (x @ W["WSU"])
    return out + shared @ W["WSD"]


def forward(cfg, W, tokens):
    eps = cfg.get("rms_norm_eps", 1e-6)
    x = W["embed.WE"][tokens]
    for i, kind in enumerate(cfg["layer_types"]):
        def block(k):
            p = "layers.%d.%d." % (i, k)
            return {n[len(p):]: a for n, a in W.items() if n.startswith(p)}
        b = block(0)
        if kind == "mamba":
            x = x + mamba2(rmsnorm(x, b["WEX"], eps), b, cfg, eps)
        else:
            x = x + attention(rmsnorm(x, b["WN"], eps), b, cfg)
        b = block(1)
        x = x + moe(rmsnorm(x, b["WN"], eps), b, cfg)
    x = rmsnorm(x, W["head.WN"], eps)
    return x @ W["embed.WE"].T


def main(argv):
    d, tokens_text, logits_path = argv[1:4]
    cfg = json.load(open(os.path.join(d, "config.json")))
    W, _, _ = safetensors_io.load(os.path.join(d, "model.safetensors"))
    W = {n: a.astype(np.float64) for n, a in W.items()}
    ours, _, _ = safetensors_io.load(logits_path)
    ours = ours["logits"]
    worst = 0.0
    for s, row in enumerate(tokens_text.split(";")):
        toks = np.array([int(t) for t in row.split(",")])
        ref = forward(cfg, W, toks[:ours.shape[1]])
        worst = max(worst, float(np.max(np.abs(ref - ours[s]))))
    print("max |logits - reference| = %.3g" % worst)
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
