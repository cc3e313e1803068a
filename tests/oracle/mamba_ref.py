#!/usr/bin/python3
"""NumPy reference ("oracle") for Mamba-1 and Mamba-2 language models.

Written from tests/../shared/reference/mamba-semantics.md and the published
state-spaces/mamba reference code (selective_scan_ref, Mamba.step, Mamba2,
ssd_minimal_discrete, rms_norm_ref).  It is independent of the C executor.
All arithmetic is float64; weights are float32 values (optionally rounded to
F16/BF16 first, so the oracle computes with exactly the stored values).

Model (both versions, tied embeddings, RMSNorm eps 1e-5):

    residual = E[token]
    for each layer i:
        if i > 0: residual = hidden + residual
        hidden = mixer_i( rmsnorm(residual) * layers.i.norm.weight )
    h = rmsnorm(hidden + residual) * norm_f.weight
    logits = h @ E^T

Mamba-1 mixer and Mamba-2 mixer: see mamba1_mixer / mamba2_mixer below; each
line cites the formula from the semantics document.

Decode state per layer (the layout written to expected.safetensors):

    conv_state   Mamba-1: [batch, d_inner, d_conv-1]
                 Mamba-2: [batch, d_inner + 2*N, d_conv-1]   (channels x, B, C)
                 the last d_conv-1 *pre-convolution* inputs of the conv (x for
                 Mamba-1, xBC for Mamba-2), in time order: [..., 0] is the
                 oldest, [..., d_conv-2] the most recent token.  Positions
                 before the first token are zeros.
    ssm_state    Mamba-1: [batch, d_inner, N]            h[d, n]
                 Mamba-2: [batch, nheads, headdim, N]    state[h, p, n]
                 (channel d = h*headdim + p)

Command line (writes DIR/config.json, DIR/model.safetensors,
DIR/expected.safetensors):

    /usr/bin/python3 tests/oracle/mamba_ref.py --version {1,2} --d-model 64
        --n-layer 2 --vocab 128 --d-state 16 --expand 2 --d-conv 4
        [--dt-rank R] [--headdim 16] --tokens 1,2,3,4 [--batch 1] [--seed 0]
        [--dtype F32|F16|BF16] [--prefill K] [--ssd-chunk C] [--layer-only]
        [--init realistic|strong] [--expected-dtype F32|F64] --out DIR
    /usr/bin/python3 tests/oracle/mamba_ref.py --self-check

expected.safetensors (all F32 unless --expected-dtype F64):

    logits                    [batch, seq, vocab]     (not in --layer-only)
    step_logits               [batch, seq, vocab]     (with --prefill K; prefill of
                                                       K tokens, then decode steps)
    layers.{i}.conv_state     see above, state after the last token
    layers.{i}.ssm_state      see above, state after the last token
    layers.{i}.mixer_input    [batch, seq, d_model]   rmsnorm(residual)*norm.weight
    layers.{i}.mixer_output   [batch, seq, d_model]   mixer output ("hidden")
    layers.0.step_mixer_output [batch, seq, d_model]  (--layer-only with --prefill)
    __metadata__: version, tokens ("1,2;3,4": rows separated by ';'), batch,
                  seq_len, seed, dtype, init, prefill, ssd_chunk, layer_only,
                  step_max_abs_diff (float64 difference, as text)

--layer-only computes layer 0 only (its mixer_input, mixer_output and states),
no logits; use it for a 130m-shaped single-layer check.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io as st  # noqa: E402

EPS = 1e-5  # RMSNorm epsilon (block norms, norm_f, Mamba-2 gated norm)


# ===========================================================================
# Configuration
# ===========================================================================

class Config:
    """Model shape.  version 1: d_inner = expand*d_model, dt_rank.
    version 2: nheads = d_inner/headdim, ngroups = 1 (only G = 1 is modelled)."""

    def __init__(self, version, d_model, n_layer, vocab_size, d_state=16,
                 d_conv=4, expand=2, dt_rank=None, headdim=16, ngroups=1):
        if version not in (1, 2):
            raise ValueError("version must be 1 or 2")
        self.version = version
        self.d_model = int(d_model)
        self.n_layer = int(n_layer)
        self.vocab_size = int(vocab_size)
        self.d_state = int(d_state)
        self.d_conv = int(d_conv)
        self.expand = int(expand)
        self.d_inner = self.expand * self.d_model
        if self.d_conv < 1:
            raise ValueError("d_conv must be >= 1")
        if version == 1:
            self.dt_rank = int(dt_rank) if dt_rank else math.ceil(self.d_model / 16)
            self.headdim = None
            self.ngroups = None
        else:
            if ngroups != 1:
                raise ValueError("only ngroups = 1 is supported")
            self.dt_rank = None
            self.headdim = int(headdim)
            self.ngroups = 1
            if self.d_inner % self.headdim:
                raise ValueError("d_inner %d not divisible by headdim %d" % (self.d_inner, self.headdim))

    @property
    def nheads(self):
        return self.d_inner // self.headdim

    @property
    def conv_dim(self):
        """Channels of the causal conv: x (Mamba-1) or xBC (Mamba-2)."""
        if self.version == 1:
            return self.d_inner
        return self.d_inner + 2 * self.ngroups * self.d_state

    def to_json(self):
        """state-spaces config.json layout."""
        if self.version == 1:
            ssm = {"layer": "Mamba1", "d_state": self.d_state, "d_conv": self.d_conv,
                   "expand": self.expand, "dt_rank": self.dt_rank}
        else:
            ssm = {"layer": "Mamba2", "d_state": self.d_state, "d_conv": self.d_conv,
                   "expand": self.expand, "headdim": self.headdim, "ngroups": self.ngroups}
        return {"d_model": self.d_model, "n_layer": self.n_layer,
                "vocab_size": self.vocab_size, "ssm_cfg": ssm, "rms_norm": True,
                "residual_in_fp32": True, "fused_add_norm": True,
                "pad_vocab_size_multiple": 1, "tie_embeddings": True}

    @staticmethod
    def from_json(d):
        ssm = d.get("ssm_cfg", {})
        version = 2 if ssm.get("layer") == "Mamba2" else 1
        dt_rank = ssm.get("dt_rank", "auto")
        mult = d.get("pad_vocab_size_multiple", 1)
        vocab = d["vocab_size"]
        vocab += (-vocab) % mult  # padded vocabulary as in MambaLMHeadModel
        return Config(version, d["d_model"], d["n_layer"], vocab,
                      d_state=ssm.get("d_state", 16 if version == 1 else 128),
                      d_conv=ssm.get("d_conv", 4), expand=ssm.get("expand", 2),
                      dt_rank=None if dt_rank == "auto" else dt_rank,
                      headdim=ssm.get("headdim", 64), ngroups=ssm.get("ngroups", 1))


# ===========================================================================
# Elementwise functions
# ===========================================================================

def softplus(v):
    """softplus(v) = v if v > 20 else log1p(exp(v))   (torch threshold 20)."""
    v = np.asarray(v, dtype=np.float64)
    return np.where(v > 20.0, v, np.log1p(np.exp(np.minimum(v, 20.0))))


def inv_softplus(y):
    """Inverse of softplus: x = y + log(-expm1(-y))   (y > 0)."""
    y = np.asarray(y, dtype=np.float64)
    return y + np.log(-np.expm1(-y))


def sigmoid(v):
    # 0.5*(1+tanh(v/2)) == 1/(1+exp(-v)), without overflow warnings.
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(v, dtype=np.float64)))


def silu(v):
    """silu(v) = v * sigmoid(v)."""
    return v * sigmoid(v)


def rmsnorm(x, w=None, eps=EPS):
    """rmsnorm over the last axis: x / sqrt(mean(x^2) + eps) (* w)."""
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


# ===========================================================================
# Weights
# ===========================================================================

def _dt_bias(rng, n, dt_min=1e-3, dt_max=0.1, floor=1e-4):
    """softplus^-1 of a log-uniform dt in [dt_min, dt_max] (Mamba dt init)."""
    dt = np.exp(rng.uniform(size=n) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
    dt = np.maximum(dt, floor)
    return inv_softplus(dt)


def generate_weights(cfg, seed=0, dtype="F32", init="realistic"):
    """Random weights with realistic statistics, HF key names, insertion order
    = file order.  Values are float32 arrays already rounded to `dtype`.

    embeddings            N(0, 0.02)
    in_proj               N(0, 0.02)
    out_proj              N(0, 0.02/sqrt(2*n_layer))
    conv1d.weight/bias    U(-1/sqrt(d_conv), 1/sqrt(d_conv))   (torch Conv1d default)
    norm weights          1 + N(0, 0.1)
    D                     1 + N(0, 0.1)
    Mamba-1 x_proj        U(-1/sqrt(d_inner), 1/sqrt(d_inner)) (torch Linear default)
    Mamba-1 dt_proj.weight U(-dt_rank^-0.5, dt_rank^-0.5)      (dt_init "random")
    dt bias               softplus^-1(log-uniform [1e-3, 0.1])
    Mamba-1 A_log         log(1..N) for every channel, [d_inner, N]
    Mamba-2 A_log         log(U(1, 16)), [nheads]

    init="strong" changes only in_proj to N(0, 1/sqrt(d_model)) and out_proj to
    N(0, 1/sqrt(d_inner)) (activations of order 1, as in trained models): with
    the initialisation statistics above the Mamba-1 mixer output is ~1/15 of
    the residual stream and errors inside the scan hardly move the logits.
    """
    rng = np.random.default_rng(seed)
    D, di, N, K, L = cfg.d_model, cfg.d_inner, cfg.d_state, cfg.d_conv, cfg.n_layer
    if init == "realistic":
        in_std, out_std = 0.02, 0.02 / math.sqrt(2 * L)
    elif init == "strong":
        in_std, out_std = 1.0 / math.sqrt(D), 1.0 / math.sqrt(di)
    else:
        raise ValueError("init must be 'realistic' or 'strong'")
    cb = 1.0 / math.sqrt(K)  # depthwise conv: fan_in = 1 * d_conv
    w = {}
    w["backbone.embeddings.weight"] = rng.normal(0.0, 0.02, (cfg.vocab_size, D))
    for i in range(L):
        p = "backbone.layers.%d." % i
        w[p + "norm.weight"] = 1.0 + rng.normal(0.0, 0.1, D)
        m = p + "mixer."
        if cfg.version == 1:
            R = cfg.dt_rank
            w[m + "in_proj.weight"] = rng.normal(0.0, in_std, (2 * di, D))
            w[m + "conv1d.weight"] = rng.uniform(-cb, cb, (di, 1, K))
            w[m + "conv1d.bias"] = rng.uniform(-cb, cb, di)
            xb = 1.0 / math.sqrt(di)
            w[m + "x_proj.weight"] = rng.uniform(-xb, xb, (R + 2 * N, di))
            db = R ** -0.5
            w[m + "dt_proj.weight"] = rng.uniform(-db, db, (di, R))
            w[m + "dt_proj.bias"] = _dt_bias(rng, di)
            w[m + "A_log"] = np.tile(np.log(np.arange(1, N + 1, dtype=np.float64)), (di, 1))
            w[m + "D"] = 1.0 + rng.normal(0.0, 0.1, di)
            w[m + "out_proj.weight"] = rng.normal(0.0, out_std, (D, di))
        else:
            H = cfg.nheads
            w[m + "in_proj.weight"] = rng.normal(0.0, in_std, (2 * di + 2 * N + H, D))
            w[m + "conv1d.weight"] = rng.uniform(-cb, cb, (cfg.conv_dim, 1, K))
            w[m + "conv1d.bias"] = rng.uniform(-cb, cb, cfg.conv_dim)
            w[m + "dt_bias"] = _dt_bias(rng, H)
            w[m + "A_log"] = np.log(rng.uniform(1.0, 16.0, H))
            w[m + "D"] = 1.0 + rng.normal(0.0, 0.1, H)
            w[m + "norm.weight"] = 1.0 + rng.normal(0.0, 0.1, di)
            w[m + "out_proj.weight"] = rng.normal(0.0, out_std, (D, di))
    w["backbone.norm_f.weight"] = 1.0 + rng.normal(0.0, 0.1, D)
    return {k: st.round_to_dtype(v, dtype).astype(np.float32) for k, v in w.items()}


def expected_weight_shapes(cfg):
    """name -> shape, for validating a loaded file."""
    D, di, N, K = cfg.d_model, cfg.d_inner, cfg.d_state, cfg.d_conv
    s = {"backbone.embeddings.weight": (cfg.vocab_size, D), "backbone.norm_f.weight": (D,)}
    for i in range(cfg.n_layer):
        p = "backbone.layers.%d." % i
        m = p + "mixer."
        s[p + "norm.weight"] = (D,)
        if cfg.version == 1:
            R = cfg.dt_rank
            s.update({m + "in_proj.weight": (2 * di, D), m + "conv1d.weight": (di, 1, K),
                      m + "conv1d.bias": (di,), m + "x_proj.weight": (R + 2 * N, di),
                      m + "dt_proj.weight": (di, R), m + "dt_proj.bias": (di,),
                      m + "A_log": (di, N), m + "D": (di,), m + "out_proj.weight": (D, di)})
        else:
            H, C = cfg.nheads, cfg.conv_dim
            s.update({m + "in_proj.weight": (2 * di + 2 * N + H, D), m + "conv1d.weight": (C, 1, K),
                      m + "conv1d.bias": (C,), m + "dt_bias": (H,), m + "A_log": (H,),
                      m + "D": (H,), m + "norm.weight": (di,), m + "out_proj.weight": (D, di)})
    return s


def params_from_weights(cfg, w):
    """HF-named weights -> nested float64 parameters used by the forward code."""
    w = dict(w)
    if "backbone.embeddings.weight" not in w and "backbone.embedding.weight" in w:
        w["backbone.embeddings.weight"] = w["backbone.embedding.weight"]  # original key
    for name, shape in expected_weight_shapes(cfg).items():
        if name not in w:
            raise KeyError("missing weight %s" % name)
        if tuple(w[name].shape) != shape:
            raise ValueError("%s: shape %s, expected %s" % (name, w[name].shape, shape))
    f = lambda k: np.asarray(w[k], dtype=np.float64)  # noqa: E731
    layers = []
    for i in range(cfg.n_layer):
        p = "backbone.layers.%d." % i
        m = p + "mixer."
        lp = {"norm": f(p + "norm.weight"), "in_proj": f(m + "in_proj.weight"),
              "conv_w": f(m + "conv1d.weight"), "conv_b": f(m + "conv1d.bias"),
              "A_log": f(m + "A_log"), "D": f(m + "D"), "out_proj": f(m + "out_proj.weight")}
        if cfg.version == 1:
            lp.update({"x_proj": f(m + "x_proj.weight"), "dt_proj_w": f(m + "dt_proj.weight"),
                       "dt_proj_b": f(m + "dt_proj.bias")})
        else:
            lp.update({"dt_bias": f(m + "dt_bias"), "norm_gated": f(m + "norm.weight")})
        layers.append(lp)
    return {"embedding": f("backbone.embeddings.weight"), "layers": layers,
            "norm_f": f("backbone.norm_f.weight")}


def load_model(directory):
    """Read DIR/config.json + DIR/model.safetensors -> (cfg, params)."""
    with open(os.path.join(directory, "config.json")) as fh:
        cfg = Config.from_json(json.load(fh))
    w, _, _ = st.load(os.path.join(directory, "model.safetensors"))
    return cfg, params_from_weights(cfg, w)


# ===========================================================================
# Causal depthwise convolution
# ===========================================================================

def causal_conv1d(x, w, b, conv_state=None):
    """Causal depthwise conv with bias, no kernel flip, zero padding.

        y[t, c] = b[c] + sum_k w[c, 0, k] * x[t-(K-1)+k, c]     (x[<0] = 0)

    x [B, L, C], w [C, 1, K], b [C].  conv_state [B, C, K-1] supplies x[-(K-1)..-1]
    (time order; None = zeros).  Returns the pre-activation y [B, L, C] and the
    new conv_state (the last K-1 inputs).
    """
    Bt, L, C = x.shape
    K = w.shape[2]
    if conv_state is None:
        prev = np.zeros((Bt, K - 1, C))
    else:
        prev = np.transpose(conv_state, (0, 2, 1))
    xp = np.concatenate([prev, x], axis=1)  # xp[:, j] = x[j - (K-1)]
    y = np.broadcast_to(b, (Bt, L, C)).copy()
    for k in range(K):
        y += w[:, 0, k] * xp[:, k:k + L, :]
    new_state = np.transpose(xp[:, xp.shape[1] - (K - 1):, :], (0, 2, 1)).copy()
    return y, new_state


def conv_step(x_t, w, b, conv_state):
    """One decode step of the conv (as Mamba.step): window = [state, x_t].
    x_t [B, C], conv_state [B, C, K-1] -> (pre-activation [B, C], new state)."""
    window = np.concatenate([conv_state, x_t[:, :, None]], axis=2)  # [B, C, K]
    y = np.sum(window * w[:, 0, :], axis=-1) + b
    return y, window[:, :, 1:].copy()


# ===========================================================================
# Mamba-1
# ===========================================================================

def selective_scan(u, delta, A, Bm, Cm, D, h0=None):
    """Sequential selective scan (selective_scan_ref, real B/C, no z).

    u, delta [B, L, d]; A [d, N]; Bm, Cm [B, L, N]; D [d]; h0 [B, d, N].
        h[d,n] = exp(delta[d]*A[d,n]) * h[d,n] + delta[d]*B[n]*u[d]
        y[d]   = sum_n h[d,n]*C[n] + D[d]*u[d]
    Returns y [B, L, d] and the last h.
    """
    Bt, L, d = u.shape
    h = np.zeros((Bt, d, A.shape[1])) if h0 is None else h0.copy()
    y = np.empty((Bt, L, d))
    for t in range(L):
        dA = np.exp(delta[:, t, :, None] * A)                                   # [B, d, N]
        dBu = delta[:, t, :, None] * Bm[:, t, None, :] * u[:, t, :, None]      # [B, d, N]
        h = dA * h + dBu
        y[:, t] = np.einsum("bdn,bn->bd", h, Cm[:, t])
    return y + u * D, h


def mamba1_mixer(lp, cfg, u, state=None, chunk=None):
    """Mamba-1 mixer over a sequence.  u [B, L, d_model] -> out [B, L, d_model],
    (conv_state, ssm_state).  state = (conv_state, ssm_state) to continue from."""
    di, N, R = cfg.d_inner, cfg.d_state, cfg.dt_rank
    xz = u @ lp["in_proj"].T                               # x, z = split(in_proj.W @ u)
    x, z = xz[..., :di], xz[..., di:]
    xc, conv_state = causal_conv1d(x, lp["conv_w"], lp["conv_b"],
                                   None if state is None else state[0])
    xc = silu(xc)                                          # xc = silu(conv(x) + bias)
    x_dbl = xc @ lp["x_proj"].T                            # dt_lr, B, C = split(x_proj.W @ xc)
    dt_lr, Bm, Cm = x_dbl[..., :R], x_dbl[..., R:R + N], x_dbl[..., R + N:]
    delta = softplus(dt_lr @ lp["dt_proj_w"].T + lp["dt_proj_b"])   # softplus(dt_proj + bias)
    A = -np.exp(lp["A_log"])                               # A = -exp(A_log), [d_inner, N]
    y, h = selective_scan(xc, delta, A, Bm, Cm, lp["D"], None if state is None else state[1])
    y = y * silu(z)                                        # gate
    return y @ lp["out_proj"].T, (conv_state, h)


def mamba1_step(lp, cfg, u, state):
    """One decode step (Mamba.step).  u [B, d_model] -> out [B, d_model], state."""
    di, N, R = cfg.d_inner, cfg.d_state, cfg.dt_rank
    conv_state, h = state
    xz = u @ lp["in_proj"].T
    x, z = xz[:, :di], xz[:, di:]
    xc, conv_state = conv_step(x, lp["conv_w"], lp["conv_b"], conv_state)
    xc = silu(xc)
    x_db = xc @ lp["x_proj"].T
    dt_lr, Bm, Cm = x_db[:, :R], x_db[:, R:R + N], x_db[:, R + N:]
    dt = softplus(dt_lr @ lp["dt_proj_w"].T + lp["dt_proj_b"])   # [B, d]
    A = -np.exp(lp["A_log"])
    dA = np.exp(dt[:, :, None] * A)                             # [B, d, N]
    dB = dt[:, :, None] * Bm[:, None, :]                        # [B, d, N]
    h = h * dA + xc[:, :, None] * dB
    y = np.einsum("bdn,bn->bd", h, Cm) + lp["D"] * xc
    y = y * silu(z)
    return y @ lp["out_proj"].T, (conv_state, h)


# ===========================================================================
# Mamba-2
# ===========================================================================

def ssd_sequential(x, dt, A, Bm, Cm, h0=None):
    """Sequential SSD recurrence (no D term).

    x [B, L, H, P]; dt [B, L, H] (after softplus); A [H]; Bm, Cm [B, L, N];
    h0 [B, H, P, N].
        state[h,p,n] = state[h,p,n]*exp(dt[h]*A[h]) + dt[h]*x[h,p]*B[n]
        y[h,p]       = sum_n state[h,p,n]*C[n]
    Returns y [B, L, H, P] and the last state.
    """
    Bt, L, H, P = x.shape
    N = Bm.shape[-1]
    h = np.zeros((Bt, H, P, N)) if h0 is None else h0.copy()
    y = np.empty((Bt, L, H, P))
    for t in range(L):
        dA = np.exp(dt[:, t] * A)                                          # [B, H]
        h = h * dA[:, :, None, None] + (dt[:, t, :, None, None] * x[:, t, :, :, None]
                                        * Bm[:, t, None, None, :])
        y[:, t] = np.einsum("bhpn,bn->bhp", h, Cm[:, t])
    return y, h


def segsum(a):
    """Stable segment sum: out[..., i, j] = sum_{k=j+1..i} a[..., k] for j <= i,
    -inf for j > i.  a [..., T] -> [..., T, T]."""
    T = a.shape[-1]
    ar = np.repeat(a[..., :, None], T, axis=-1)          # ar[..., i, j] = a[i]
    ar = np.where(np.tril(np.ones((T, T), bool), -1), ar, 0.0)
    s = np.cumsum(ar, axis=-2)
    return np.where(np.tril(np.ones((T, T), bool), 0), s, -np.inf)


def ssd_chunked(x, dt, A, Bm, Cm, chunk, h0=None):
    """Chunked (blockwise) SSD, as ssd_minimal_discrete with X = x*dt, A = dt*A.
    Same arguments/results as ssd_sequential.  The sequence is zero-padded to a
    multiple of `chunk` (padding has decay 1 and no input, so it changes nothing)."""
    Bt, L, H, P = x.shape
    N = Bm.shape[-1]
    pad = (-L) % chunk
    X = x * dt[..., None]                     # input scaled by dt
    Ad = dt * A                               # log decay per step [B, L, H]
    if pad:
        X = np.concatenate([X, np.zeros((Bt, pad, H, P))], axis=1)
        Ad = np.concatenate([Ad, np.zeros((Bt, pad, H))], axis=1)
        Bm = np.concatenate([Bm, np.zeros((Bt, pad, N))], axis=1)
        Cm = np.concatenate([Cm, np.zeros((Bt, pad, N))], axis=1)
    nc = (L + pad) // chunk
    X = X.reshape(Bt, nc, chunk, H, P)
    Bc = Bm.reshape(Bt, nc, chunk, N)
    Cc = Cm.reshape(Bt, nc, chunk, N)
    Ac = Ad.reshape(Bt, nc, chunk, H).transpose(0, 3, 1, 2)     # [B, H, c, l]
    A_cum = np.cumsum(Ac, axis=-1)

    # 1. Intra-chunk output (diagonal blocks): y_l = sum_{s<=l} C_l.B_s exp(sum A(s,l]) X_s
    Lmat = np.exp(segsum(Ac))                                   # [B, H, c, l, s]
    Y_diag = np.einsum("bcln,bcsn,bhcls,bcshp->bclhp", Cc, Bc, Lmat, X, optimize=True)

    # 2. State at the end of each chunk from that chunk's inputs alone.
    decay_states = np.exp(A_cum[..., -1:] - A_cum)              # [B, H, c, l]
    states = np.einsum("bcln,bhcl,bclhp->bchpn", Bc, decay_states, X, optimize=True)

    # 3. Inter-chunk recurrence over chunk boundaries (with the initial state).
    init = np.zeros((Bt, 1, H, P, N)) if h0 is None else h0[:, None]
    states = np.concatenate([init, states], axis=1)             # [B, c+1, H, P, N]
    chunk_decay = np.concatenate([np.zeros((Bt, H, 1)), A_cum[..., -1]], axis=-1)
    decay_chunk = np.exp(segsum(chunk_decay))                   # [B, H, c+1, c+1]
    new_states = np.einsum("bhzc,bchpn->bzhpn", decay_chunk, states, optimize=True)
    states, final = new_states[:, :-1], new_states[:, -1]       # state entering each chunk

    # 4. Contribution of the incoming state to each position of the chunk.
    Y_off = np.einsum("bcln,bchpn,bhcl->bclhp", Cc, states, np.exp(A_cum), optimize=True)

    Y = (Y_diag + Y_off).reshape(Bt, nc * chunk, H, P)[:, :L]
    return Y, final


def _mamba2_split(cfg, zxbcdt):
    di, N = cfg.d_inner, cfg.d_state
    z = zxbcdt[..., :di]
    xBC = zxbcdt[..., di:2 * di + 2 * N]
    dt = zxbcdt[..., 2 * di + 2 * N:]
    return z, xBC, dt


def _mamba2_out(lp, cfg, y, z):
    """y = rmsnorm(y * silu(z)) * norm.weight over all d_inner; out_proj."""
    y = rmsnorm(y * silu(z), lp["norm_gated"])
    return y @ lp["out_proj"].T


def mamba2_mixer(lp, cfg, u, state=None, chunk=None):
    """Mamba-2 mixer over a sequence.  u [B, L, d_model] -> out, (conv_state, ssm_state).
    chunk: None = sequential recurrence, else chunked SSD with this chunk size."""
    Bt, L, _ = u.shape
    di, N, H, P = cfg.d_inner, cfg.d_state, cfg.nheads, cfg.headdim
    z, xBC, dt = _mamba2_split(cfg, u @ lp["in_proj"].T)     # rows z, x, B, C, dt
    xBC, conv_state = causal_conv1d(xBC, lp["conv_w"], lp["conv_b"],
                                    None if state is None else state[0])
    xBC = silu(xBC)                                          # silu(conv(xBC) + bias)
    x = xBC[..., :di].reshape(Bt, L, H, P)
    Bm, Cm = xBC[..., di:di + N], xBC[..., di + N:]
    dt = softplus(dt + lp["dt_bias"])                        # [B, L, H]
    A = -np.exp(lp["A_log"])                                 # [H]
    h0 = None if state is None else state[1]
    if chunk is None:
        y, h = ssd_sequential(x, dt, A, Bm, Cm, h0)
    else:
        y, h = ssd_chunked(x, dt, A, Bm, Cm, chunk, h0)
    y = y + lp["D"][:, None] * x                             # + D[h]*x[h,p]
    return _mamba2_out(lp, cfg, y.reshape(Bt, L, di), z), (conv_state, h)


def mamba2_step(lp, cfg, u, state):
    """One decode step (Mamba2.step).  u [B, d_model] -> out [B, d_model], state."""
    Bt = u.shape[0]
    di, N, H, P = cfg.d_inner, cfg.d_state, cfg.nheads, cfg.headdim
    conv_state, h = state
    z, xBC, dt = _mamba2_split(cfg, u @ lp["in_proj"].T)
    xBC, conv_state = conv_step(xBC, lp["conv_w"], lp["conv_b"], conv_state)
    xBC = silu(xBC)
    x = xBC[:, :di].reshape(Bt, H, P)
    Bm, Cm = xBC[:, di:di + N], xBC[:, di + N:]
    dt = softplus(dt + lp["dt_bias"])                        # [B, H]
    dA = np.exp(dt * -np.exp(lp["A_log"]))                   # [B, H]
    dBx = np.einsum("bh,bn,bhp->bhpn", dt, Bm, x)
    h = h * dA[:, :, None, None] + dBx
    y = np.einsum("bhpn,bn->bhp", h, Cm) + lp["D"][:, None] * x
    return _mamba2_out(lp, cfg, y.reshape(Bt, di), z), (conv_state, h)


# ===========================================================================
# Language model
# ===========================================================================

def _mixer(cfg):
    return mamba1_mixer if cfg.version == 1 else mamba2_mixer


def _mixer_step(cfg):
    return mamba1_step if cfg.version == 1 else mamba2_step


def init_state(cfg, batch):
    """Zero decode state: list over layers of (conv_state, ssm_state)."""
    if cfg.version == 1:
        ssm = (batch, cfg.d_inner, cfg.d_state)
    else:
        ssm = (batch, cfg.nheads, cfg.headdim, cfg.d_state)
    return [(np.zeros((batch, cfg.conv_dim, cfg.d_conv - 1)), np.zeros(ssm))
            for _ in range(cfg.n_layer)]


def forward(params, cfg, tokens, state=None, chunk=None, n_layers=None, record=None):
    """Full pass.  tokens [B, L] -> (logits [B, L, V] or None, final state).

    state: per-layer (conv_state, ssm_state) to continue from (None = zeros).
    chunk: Mamba-2 SSD chunk size (None = sequential recurrence).
    n_layers: compute only the first n layers and return logits None.
    record: optional dict, filled with layers.{i}.mixer_input / mixer_output.
    """
    tokens = np.asarray(tokens)
    mixer = _mixer(cfg)
    nl = cfg.n_layer if n_layers is None else n_layers
    residual = params["embedding"][tokens]                 # [B, L, d_model]
    hidden = None
    new_state = []
    for i in range(nl):
        lp = params["layers"][i]
        if hidden is not None:
            residual = hidden + residual                   # residual add (fp32+ here fp64)
        normed = rmsnorm(residual, lp["norm"])
        hidden, s = mixer(lp, cfg, normed, None if state is None else state[i], chunk)
        new_state.append(s)
        if record is not None:
            record["layers.%d.mixer_input" % i] = normed
            record["layers.%d.mixer_output" % i] = hidden
    if nl < cfg.n_layer:
        return None, new_state
    h = rmsnorm(hidden + residual, params["norm_f"])
    return h @ params["embedding"].T, new_state            # tied logits


def step(params, cfg, token, state):
    """One decode step for the whole model.  token [B] -> (logits [B, V], state)."""
    mstep = _mixer_step(cfg)
    residual = params["embedding"][np.asarray(token)]      # [B, d_model]
    hidden = None
    new_state = []
    for i, lp in enumerate(params["layers"]):
        if hidden is not None:
            residual = hidden + residual
        hidden, s = mstep(lp, cfg, rmsnorm(residual, lp["norm"]), state[i])
        new_state.append(s)
    h = rmsnorm(hidden + residual, params["norm_f"])
    return h @ params["embedding"].T, new_state


def prefill_then_step(params, cfg, tokens, k, chunk=None):
    """Prefill the first k tokens in one pass, then decode the rest one step
    at a time.  Returns (logits [B, L, V] for every position, final state)."""
    tokens = np.asarray(tokens)
    Bt, L = tokens.shape
    out = []
    if k > 0:
        lg, state = forward(params, cfg, tokens[:, :k], chunk=chunk)
        out.append(lg)
    else:
        state = init_state(cfg, Bt)
    for t in range(k, L):
        lg, state = step(params, cfg, tokens[:, t], state)
        out.append(lg[:, None, :])
    return np.concatenate(out, axis=1), state


def mixer_prefill_then_step(lp, cfg, u, k, chunk=None):
    """Same as prefill_then_step for a single mixer on inputs u [B, L, d_model]."""
    Bt, L, _ = u.shape
    out = []
    if k > 0:
        o, s = _mixer(cfg)(lp, cfg, u[:, :k], None, chunk)
        out.append(o)
    else:
        s = init_state(cfg, Bt)[0]
    for t in range(k, L):
        o, s = _mixer_step(cfg)(lp, cfg, u[:, t], s)
        out.append(o[:, None])
    return np.concatenate(out, axis=1), s


# ===========================================================================
# Self-checks
# ===========================================================================

def _require(ok, msg):
    if not ok:  # explicit, so the checks also run under python -O
        raise AssertionError(msg)


def _max_state_diff(s1, s2):
    return max(max(np.max(np.abs(a[0] - b[0]), initial=0.0), np.max(np.abs(a[1] - b[1])))
               for a, b in zip(s1, s2))


def tiny_config(version, **kw):
    base = dict(d_model=32, n_layer=2, vocab_size=50, d_state=8, d_conv=4, expand=2)
    if version == 1:
        base["dt_rank"] = None
    else:
        base["headdim"] = 8
    base.update(kw)
    return Config(version, **base)


def check_prefill_step(version, seed=0, batch=2, seq=9, ks=(0, 1, 3, 9), tol=1e-10, **kw):
    """Prefill of k tokens then steps == one pass over all tokens (logits and
    final states), and a continued prefill (forward with a state) == one pass.
    Returns the largest difference seen; raises AssertionError above tol."""
    cfg = tiny_config(version, **kw)
    params = params_from_weights(cfg, generate_weights(cfg, seed))
    tokens = np.random.default_rng(seed + 1).integers(0, cfg.vocab_size, (batch, seq))
    full, full_state = forward(params, cfg, tokens)
    worst = 0.0
    for k in ks:
        lg, s = prefill_then_step(params, cfg, tokens, k)
        d = max(np.max(np.abs(lg - full)), _max_state_diff(s, full_state))
        _require(d < tol, "version %d prefill %d: diff %g" % (version, k, d))
        worst = max(worst, d)
        if 0 < k < seq:  # two-part prefill through the state
            lg1, s1 = forward(params, cfg, tokens[:, :k])
            lg2, s2 = forward(params, cfg, tokens[:, k:], state=s1)
            d = max(np.max(np.abs(np.concatenate([lg1, lg2], 1) - full)),
                    _max_state_diff(s2, full_state))
            _require(d < tol, "version %d continued prefill %d: diff %g" % (version, k, d))
            worst = max(worst, d)
    return worst


def check_ssd_chunked(seed=0, tol=1e-10):
    """Chunked SSD == sequential recurrence, for raw inputs (with an initial
    state, sequence not a multiple of the chunk) and for the whole model."""
    rng = np.random.default_rng(seed)
    Bt, L, H, P, N = 2, 11, 3, 4, 5
    x = rng.normal(size=(Bt, L, H, P))
    dt = softplus(rng.normal(-1.0, 1.0, (Bt, L, H)))
    A = -rng.uniform(0.5, 4.0, H)
    Bm, Cm = rng.normal(size=(Bt, L, N)), rng.normal(size=(Bt, L, N))
    h0 = rng.normal(size=(Bt, H, P, N))
    y_ref, h_ref = ssd_sequential(x, dt, A, Bm, Cm, h0)
    worst = 0.0
    for c in (1, 2, 3, 4, 11, 16):
        y, h = ssd_chunked(x, dt, A, Bm, Cm, c, h0)
        d = max(np.max(np.abs(y - y_ref)), np.max(np.abs(h - h_ref)))
        _require(d < tol, "ssd chunk %d: diff %g" % (c, d))
        worst = max(worst, d)
    cfg = tiny_config(2)
    params = params_from_weights(cfg, generate_weights(cfg, seed))
    tokens = rng.integers(0, cfg.vocab_size, (2, 10))
    ref, s_ref = forward(params, cfg, tokens)
    for c in (1, 4, 16):
        lg, s = forward(params, cfg, tokens, chunk=c)
        d = max(np.max(np.abs(lg - ref)), _max_state_diff(s, s_ref))
        _require(d < tol, "model ssd chunk %d: diff %g" % (c, d))
        worst = max(worst, d)
    return worst


def self_check():
    r = {"mamba1 prefill+step": check_prefill_step(1),
         "mamba2 prefill+step": check_prefill_step(2),
         "mamba2 prefill+step d_conv=1": check_prefill_step(2, d_conv=1),
         "mamba2 ssd chunked": check_ssd_chunked()}
    for k, v in r.items():
        print("%-32s max abs diff %.3g" % (k, v))
    return r


# ===========================================================================
# Command line
# ===========================================================================

def parse_tokens(text, batch, vocab, seed):
    """'1,2,3,4' (reshaped to [batch, -1]), '1,2;3,4' (one row per ';'),
    or 'random:L' (random [batch, L] from the seed)."""
    text = text.strip()
    if text.startswith("random:"):
        L = int(text.split(":", 1)[1])
        return np.random.default_rng(seed + 7919).integers(0, vocab, (batch, L))
    rows = [r for r in text.split(";") if r.strip()]
    vals = [[int(t) for t in r.replace(" ", "").split(",") if t != ""] for r in rows]
    if len(rows) > 1:
        if len({len(r) for r in vals}) != 1:
            raise ValueError("token rows have different lengths")
        if batch not in (1, len(rows)):
            raise ValueError("--batch %d but %d token rows" % (batch, len(rows)))
        tok = np.array(vals, dtype=np.int64)
    else:
        flat = np.array(vals[0], dtype=np.int64)
        if flat.size == 0 or flat.size % batch:
            raise ValueError("%d tokens do not split into batch %d" % (flat.size, batch))
        tok = flat.reshape(batch, -1)
    if tok.min() < 0 or tok.max() >= vocab:
        raise ValueError("token out of range [0, %d)" % vocab)
    return tok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--version", type=int, choices=(1, 2), default=1)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--d-state", type=int, default=16)
    ap.add_argument("--expand", type=int, default=2)
    ap.add_argument("--d-conv", type=int, default=4)
    ap.add_argument("--dt-rank", type=int, default=None, help="Mamba-1; default ceil(d_model/16)")
    ap.add_argument("--headdim", type=int, default=16, help="Mamba-2 head dimension")
    ap.add_argument("--tokens", default="1,2,3,4",
                    help="'1,2,3,4' (split into --batch rows), '1,2;3,4', or 'random:L'")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=("F32", "F16", "BF16"), default="F32",
                    help="dtype of model.safetensors (the oracle uses the rounded values)")
    ap.add_argument("--init", choices=("realistic", "strong"), default="realistic",
                    help="weight statistics (see generate_weights); 'strong' makes the "
                         "mixers dominate the residual stream so errors show in the logits")
    ap.add_argument("--expected-dtype", choices=("F32", "F64"), default="F32")
    ap.add_argument("--prefill", type=int, default=None,
                    help="also write step_logits: prefill K tokens, then decode steps")
    ap.add_argument("--ssd-chunk", type=int, default=None,
                    help="Mamba-2: compute the pass with the chunked SSD of this chunk size")
    ap.add_argument("--layer-only", action="store_true",
                    help="compute layer 0's mixer only (no logits)")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--self-check", action="store_true", help="run the self-checks and exit")
    a = ap.parse_args(argv)

    if a.self_check:
        self_check()
        return 0
    if not a.out:
        ap.error("--out is required")
    if a.ssd_chunk is not None and (a.version != 2 or a.ssd_chunk < 1):
        ap.error("--ssd-chunk needs --version 2 and a positive size")

    cfg = Config(a.version, a.d_model, a.n_layer, a.vocab, d_state=a.d_state, d_conv=a.d_conv,
                 expand=a.expand, dt_rank=a.dt_rank, headdim=a.headdim)
    tokens = parse_tokens(a.tokens, a.batch, cfg.vocab_size, a.seed)
    Bt, L = tokens.shape
    if a.prefill is not None and not 0 <= a.prefill <= L:
        ap.error("--prefill must be in [0, %d]" % L)

    weights = generate_weights(cfg, a.seed, a.dtype, a.init)
    params = params_from_weights(cfg, weights)

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as fh:
        json.dump(cfg.to_json(), fh, indent=2)
        fh.write("\n")
    st.save(os.path.join(a.out, "model.safetensors"), weights, dtype=a.dtype,
            metadata={"format": "pt"})

    # expected.safetensors, in this order: logits, step_logits, per layer
    # conv_state, ssm_state, mixer_input, mixer_output, then step_mixer_output.
    exp = {}
    record = {}
    extra = {}
    step_diff = None
    if a.layer_only:
        _, state = forward(params, cfg, tokens, chunk=a.ssd_chunk, n_layers=1, record=record)
        if a.prefill is not None:
            so, s = mixer_prefill_then_step(params["layers"][0], cfg,
                                            record["layers.0.mixer_input"], a.prefill, a.ssd_chunk)
            extra["layers.0.step_mixer_output"] = so
            step_diff = max(np.max(np.abs(so - record["layers.0.mixer_output"])),
                            _max_state_diff([s], state))
    else:
        logits, state = forward(params, cfg, tokens, chunk=a.ssd_chunk, record=record)
        exp["logits"] = logits
        if a.prefill is not None:
            slog, s = prefill_then_step(params, cfg, tokens, a.prefill, a.ssd_chunk)
            exp["step_logits"] = slog
            step_diff = max(np.max(np.abs(slog - logits)), _max_state_diff(s, state))
    for i, (cs, ss) in enumerate(state):
        exp["layers.%d.conv_state" % i] = cs
        exp["layers.%d.ssm_state" % i] = ss
        exp["layers.%d.mixer_input" % i] = record["layers.%d.mixer_input" % i]
        exp["layers.%d.mixer_output" % i] = record["layers.%d.mixer_output" % i]
    exp.update(extra)

    meta = {"version": str(cfg.version),
            "tokens": ";".join(",".join(str(int(t)) for t in row) for row in tokens),
            "batch": str(Bt), "seq_len": str(L), "seed": str(a.seed), "dtype": a.dtype, "init": a.init,
            "prefill": "" if a.prefill is None else str(a.prefill),
            "ssd_chunk": "" if a.ssd_chunk is None else str(a.ssd_chunk),
            "layer_only": "1" if a.layer_only else "0"}
    if step_diff is not None:
        meta["step_max_abs_diff"] = repr(float(step_diff))
    st.save(os.path.join(a.out, "expected.safetensors"), exp, dtype=a.expected_dtype,
            metadata=meta)

    print("wrote %s/{config.json,model.safetensors,expected.safetensors}: mamba%d "
          "d_model=%d n_layer=%d vocab=%d tokens=[%d,%d] dtype=%s"
          % (a.out, cfg.version, cfg.d_model, cfg.n_layer, cfg.vocab_size, Bt, L, a.dtype))
    if step_diff is not None:
        print("prefill %d + steps vs full pass: max abs diff %.3g" % (a.prefill, step_diff))
        if step_diff > 1e-10:
            print("ERROR: decode path disagrees with the full pass", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
