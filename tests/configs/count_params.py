#!/usr/bin/env python3
"""Independent parameter-count oracle for Hugging Face config.json files.

Usage:
    python3 count_params.py CONFIG.json [CONFIG.json ...]
    python3 count_params.py --mtp CONFIG.json      # also count MTP modules
    python3 count_params.py --breakdown CONFIG.json
    python3 count_params.py --check params.tsv      # computed vs published

Prints one line per file:  file<TAB>total<TAB>active

Python 3 standard library only (json, sys).  Nothing here imports or runs
the Transformers library: every tensor shape below was written by hand from
the Transformers modeling code of each `model_type` (and, for nemotron_h, the
remote code shipped with the checkpoint), read as reference.

Convention
----------
* total  = number of elements of every weight tensor the Transformers
           modeling class creates for the checkpoint (nn.Parameter tensors,
           including biases, norm weights, A_log, D, dt_bias, conv1d
           weights and biases).  A tensor shared by several modules (tied
           embeddings / LM head, Zamba2's shared transformer blocks) is
           counted ONCE.  Two small non-parameter tensors that checkpoints
           store are also counted: DeepSeek-V3's router
           e_score_correction_bias (a buffer in Transformers, a tensor in the
           safetensors files).  Rotary tables and other derived buffers are
           not counted.
* active = parameters used for one token: everything in `total` except the
           routed experts that are not selected; i.e. only top-k
           (num_experts_per_tok) routed experts per MoE layer, plus all
           shared experts, routers, attention/SSM mixers, norms.  The input
           embedding table and the LM head are counted in BOTH totals (the
           whole table, as model cards do), a tied table once.
* Multi-token-prediction (MTP) modules are NOT part of the Transformers
  model (Transformers drops them on load), so they are excluded by default.
  `--mtp` adds them as they are stored in the checkpoint (DeepSeek-V3:
  num_nextn_predict_layers full decoder layers with enorm/hnorm/eh_proj/
  shared_head.norm and, as stored in the safetensors, their own copy of
  embed_tokens and shared_head.head; Qwen3-Next: one gated-attention + MoE
  layer with fc/pre_fc norms/norm, embedding and head shared).

Per model_type the layer schedule follows the config the way the modeling
code does: first_k_dense_replace / moe_layer_freq (deepseek_v3),
decoder_sparse_step / mlp_only_layers (qwen3_moe, qwen3_next),
attn_layer_period/offset + expert_layer_period/offset (jamba),
layers_block_type (zamba2), hybrid_override_pattern (nemotron_h:
M = Mamba-2 mixer, * = attention, - = MLP, E = MoE), layer_types
(granitemoehybrid, qwen3_next), every layer hybrid (falcon_h1).
"""

import json
import sys


def ceil_div(a, b):
    return -(-a // b)


def get(cfg, key, default=None):
    v = cfg.get(key, default)
    return default if v is None else v


class Counter:
    """Accumulates (total, active) parameter counts by component."""

    def __init__(self):
        self.parts = {}

    def add(self, name, total, active=None):
        if active is None:
            active = total
        t, a = self.parts.get(name, (0, 0))
        self.parts[name] = (t + total, a + active)

    @property
    def total(self):
        return sum(t for t, _ in self.parts.values())

    @property
    def active(self):
        return sum(a for _, a in self.parts.values())


# ---------------------------------------------------------------- building blocks

def linear(n_in, n_out, bias=False):
    return n_in * n_out + (n_out if bias else 0)


def gated_mlp(h, inter, bias=False):
    """gate_proj + up_proj (h -> inter) and down_proj (inter -> h)."""
    return 2 * linear(h, inter, bias) + linear(inter, h, bias)


def plain_mlp(h, inter, bias=False):
    """up_proj (h -> inter) and down_proj (inter -> h), no gate (relu2)."""
    return linear(h, inter, bias) + linear(inter, h, bias)


def gqa_attention(h, heads, kv_heads, head_dim, qkv_bias=False, o_bias=False,
                  qk_norm=False, q_gate=False, in_dim=None):
    """q/k/v/o projections.  q_gate doubles q_proj (Qwen3-Next output gate);
    in_dim is the input width of q/k/v when it is not h (Zamba2: 2h)."""
    d_in = h if in_dim is None else in_dim
    q_out = heads * head_dim * (2 if q_gate else 1)
    n = linear(d_in, q_out, qkv_bias)
    n += 2 * linear(d_in, kv_heads * head_dim, qkv_bias)
    n += linear(heads * head_dim, h, o_bias)
    if qk_norm:
        n += 2 * head_dim
    return n


def mamba1_mixer(h, d_inner, d_state, d_conv, dt_rank, use_bias=False,
                 conv_bias=True, inner_norms=False):
    """Mamba-1 (modeling_mamba.MambaMixer, modeling_jamba.JambaMambaMixer)."""
    n = linear(h, 2 * d_inner, use_bias)                 # in_proj
    n += d_inner * d_conv + (d_inner if conv_bias else 0)  # depthwise conv1d
    n += linear(d_inner, dt_rank + 2 * d_state)          # x_proj (no bias)
    n += linear(dt_rank, d_inner, True)                  # dt_proj (bias)
    n += d_inner * d_state                               # A_log
    n += d_inner                                         # D
    n += linear(d_inner, h, use_bias)                    # out_proj
    if inner_norms:                                      # Jamba dt/b/c RMSNorms
        n += dt_rank + 2 * d_state
    return n


def mamba2_mixer(h, d_inner, n_heads, n_groups, d_state, d_conv,
                 proj_bias=False, out_bias=None, conv_bias=True, gated_norm=True):
    """Mamba-2 / SSD mixer (Mamba2Mixer, NemotronHMamba2Mixer, Zamba2MambaMixer,
    GraniteMoeHybridMambaLayer, FalconH1Mixer)."""
    if out_bias is None:
        out_bias = proj_bias
    conv_dim = d_inner + 2 * n_groups * d_state
    n = linear(h, d_inner + conv_dim + n_heads, proj_bias)   # in_proj: z, xBC, dt
    n += conv_dim * d_conv + (conv_dim if conv_bias else 0)  # depthwise conv1d
    n += 3 * n_heads                                         # dt_bias, A_log, D
    if gated_norm:
        n += d_inner                                         # gated RMSNorm weight
    n += linear(d_inner, h, out_bias)                        # out_proj
    return n


def moe_block(c, name, h, n_experts, top_k, expert_params, router_params,
              shared_params=0):
    """Routed experts (top_k active) + router + always-on shared experts."""
    c.add(name + ".experts", n_experts * expert_params, top_k * expert_params)
    c.add(name + ".router", router_params)
    if shared_params:
        c.add(name + ".shared", shared_params)


def embeddings_and_head(c, cfg, h, vocab, tie_default):
    tie = cfg.get("tie_word_embeddings")
    if tie is None:
        tie = tie_default
    c.add("embed_tokens", vocab * h)
    if not tie:
        c.add("lm_head", vocab * h)


# ---------------------------------------------------------------- model types

def count_llama_like(cfg, c, qkv_bias=None, qk_norm=False):
    """llama, mistral, qwen2, qwen3 (dense decoder, gated MLP, RMSNorm)."""
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    hd = get(cfg, "head_dim", h // heads)
    L = cfg["num_hidden_layers"]
    inter = cfg["intermediate_size"]
    attn_bias = bool(cfg.get("attention_bias", False))
    qb = attn_bias if qkv_bias is None else qkv_bias
    ob = attn_bias
    mlp_bias = bool(cfg.get("mlp_bias", False))
    c.add("attention", L * gqa_attention(h, heads, kv, hd, qb, ob, qk_norm))
    c.add("mlp", L * gated_mlp(h, inter, mlp_bias))
    c.add("norms", L * 2 * h + h)                      # input/post-attn + final
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)


def count_llama(cfg, c, mtp):
    count_llama_like(cfg, c)


def count_mistral(cfg, c, mtp):
    count_llama_like(cfg, c, qkv_bias=False)


def count_qwen2(cfg, c, mtp):
    # Qwen2Attention: q/k/v with bias=True, o_proj without bias (no config key).
    count_llama_like(cfg, c, qkv_bias=True)


def count_qwen3(cfg, c, mtp):
    # Qwen3Attention: bias=config.attention_bias, per-head q_norm/k_norm.
    count_llama_like(cfg, c, qk_norm=True)


def count_mixtral(cfg, c, mtp):
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    hd = get(cfg, "head_dim", h // heads)
    L = cfg["num_hidden_layers"]
    E = cfg["num_local_experts"]
    k = cfg["num_experts_per_tok"]
    c.add("attention", L * gqa_attention(h, heads, kv, hd))
    for _ in range(L):
        moe_block(c, "moe", h, E, k, gated_mlp(h, cfg["intermediate_size"]),
                  linear(h, E))
    c.add("norms", L * 2 * h + h)
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)


def qwen_sparse_layer(cfg, i):
    """Qwen2MoE/Qwen3MoE/Qwen3Next rule for a sparse (MoE) MLP at layer i."""
    mlp_only = cfg.get("mlp_only_layers") or []
    step = get(cfg, "decoder_sparse_step", 1)
    return (i not in mlp_only) and get(cfg, "num_experts", 0) > 0 and (i + 1) % step == 0


def count_qwen3_moe(cfg, c, mtp):
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    hd = get(cfg, "head_dim", h // heads)
    L = cfg["num_hidden_layers"]
    E = cfg["num_experts"]
    k = cfg["num_experts_per_tok"]
    attn_bias = bool(cfg.get("attention_bias", False))
    c.add("attention", L * gqa_attention(h, heads, kv, hd, attn_bias, attn_bias, qk_norm=True))
    for i in range(L):
        if qwen_sparse_layer(cfg, i):
            moe_block(c, "moe", h, E, k, gated_mlp(h, cfg["moe_intermediate_size"]), linear(h, E))
        else:
            c.add("dense_mlp", gated_mlp(h, cfg["intermediate_size"]))
    c.add("norms", L * 2 * h + h)
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)


def qwen3_next_layer_types(cfg):
    lt = cfg.get("layer_types")
    if lt:
        return lt
    interval = get(cfg, "full_attention_interval", 4)
    return ["full_attention" if (i + 1) % interval == 0 else "linear_attention"
            for i in range(cfg["num_hidden_layers"])]


def gated_deltanet(cfg, h):
    """Qwen3NextGatedDeltaNet."""
    nk = cfg["linear_num_key_heads"]
    nv = cfg["linear_num_value_heads"]
    dk = cfg["linear_key_head_dim"]
    dv = cfg["linear_value_head_dim"]
    kernel = cfg["linear_conv_kernel_dim"]
    key_dim, value_dim = nk * dk, nv * dv
    conv_dim = 2 * key_dim + value_dim
    n = linear(h, 2 * key_dim + 2 * value_dim)   # in_proj_qkvz
    n += linear(h, 2 * nv)                        # in_proj_ba
    n += conv_dim * kernel                        # conv1d, bias=False
    n += 2 * nv                                   # dt_bias, A_log
    n += dv                                       # norm (gated RMSNorm over head_v_dim)
    n += linear(value_dim, h)                     # out_proj
    return n


def count_qwen3_next(cfg, c, mtp):
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    hd = get(cfg, "head_dim", h // heads)
    E = get(cfg, "num_experts", 0)
    k = get(cfg, "num_experts_per_tok", 0)
    attn_bias = bool(cfg.get("attention_bias", False))
    for i, t in enumerate(qwen3_next_layer_types(cfg)):
        if t == "full_attention":
            c.add("attention", gqa_attention(h, heads, kv, hd, attn_bias, attn_bias,
                                             qk_norm=True, q_gate=True))
        else:
            c.add("gated_deltanet", gated_deltanet(cfg, h))
        if qwen_sparse_layer(cfg, i):
            shared_i = get(cfg, "shared_expert_intermediate_size", 0)
            shared = gated_mlp(h, shared_i) + linear(h, 1) if shared_i else 0
            moe_block(c, "moe", h, E, k, gated_mlp(h, cfg["moe_intermediate_size"]),
                      linear(h, E), shared)
        else:
            c.add("dense_mlp", gated_mlp(h, cfg["intermediate_size"]))
        c.add("norms", 2 * h)
    c.add("norms", h)
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)
    if mtp:
        # Checkpoint tensors mtp.*: fc (2h -> h), pre_fc_norm_embedding,
        # pre_fc_norm_hidden, one full-attention + MoE decoder layer per MTP
        # layer, and a final norm; embedding and LM head are shared (not stored
        # again).  The published config.json has no key for the number of MTP
        # layers; the released checkpoints carry one.
        n_mtp = get(cfg, "num_nextn_predict_layers", get(cfg, "mtp_num_hidden_layers", 1))
        for _ in range(n_mtp):
            c.add("mtp.attention", gqa_attention(h, heads, kv, hd, attn_bias, attn_bias,
                                                 qk_norm=True, q_gate=True))
            shared_i = get(cfg, "shared_expert_intermediate_size", 0)
            shared = gated_mlp(h, shared_i) + linear(h, 1) if shared_i else 0
            moe_block(c, "mtp.moe", h, E, k, gated_mlp(h, cfg["moe_intermediate_size"]),
                      linear(h, E), shared)
            c.add("mtp.norms", 2 * h)
        c.add("mtp.extra", linear(2 * h, h) + 2 * h + h)


def mla_attention(cfg, h):
    """DeepseekV3Attention (multi-head latent attention)."""
    heads = cfg["num_attention_heads"]
    q_lora = cfg.get("q_lora_rank")
    kv_lora = cfg["kv_lora_rank"]
    nope = cfg["qk_nope_head_dim"]
    rope = cfg["qk_rope_head_dim"]
    vdim = cfg["v_head_dim"]
    bias = bool(cfg.get("attention_bias", False))
    qk_head = nope + rope
    if q_lora:
        n = linear(h, q_lora, bias) + q_lora + linear(q_lora, heads * qk_head)  # q_a, q_a_norm, q_b
    else:
        n = linear(h, heads * qk_head)                                          # q_proj
    n += linear(h, kv_lora + rope, bias)                 # kv_a_proj_with_mqa
    n += kv_lora                                         # kv_a_layernorm
    n += linear(kv_lora, heads * (nope + vdim))          # kv_b_proj
    n += linear(heads * vdim, h, bias)                   # o_proj
    return n


def deepseek_moe_layer(cfg, i):
    return (get(cfg, "n_routed_experts", 0) > 0
            and i >= get(cfg, "first_k_dense_replace", 0)
            and i % get(cfg, "moe_layer_freq", 1) == 0)


def deepseek_decoder_layer(c, cfg, h, i, prefix=""):
    E = cfg["n_routed_experts"]
    k = cfg["num_experts_per_tok"]
    c.add(prefix + "attention", mla_attention(cfg, h))
    if deepseek_moe_layer(cfg, i):
        mi = cfg["moe_intermediate_size"]
        n_shared = get(cfg, "n_shared_experts", 0)
        router = E * h + E          # gate.weight + e_score_correction_bias
        moe_block(c, prefix + "moe", h, E, k, gated_mlp(h, mi), router,
                  gated_mlp(h, mi * n_shared) if n_shared else 0)
    else:
        c.add(prefix + "dense_mlp", gated_mlp(h, cfg["intermediate_size"]))
    c.add(prefix + "norms", 2 * h)


def count_deepseek_v3(cfg, c, mtp):
    h = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    for i in range(L):
        deepseek_decoder_layer(c, cfg, h, i)
    c.add("norms", h)
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)
    if mtp:
        V = cfg["vocab_size"]
        for j in range(get(cfg, "num_nextn_predict_layers", 0)):
            deepseek_decoder_layer(c, cfg, h, L + j, prefix="mtp.")
            # enorm, hnorm, eh_proj (2h -> h), shared_head.norm,
            # and the checkpoint's own copies of embed_tokens and shared_head.head
            c.add("mtp.extra", 2 * h + linear(2 * h, h) + h + 2 * V * h)


def jamba_layer_is_attention(cfg, i):
    return i % cfg["attn_layer_period"] == cfg["attn_layer_offset"]


def jamba_layer_num_experts(cfg, i):
    if i % cfg["expert_layer_period"] == cfg["expert_layer_offset"]:
        return cfg["num_experts"]
    return 1


def count_jamba(cfg, c, mtp):
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    hd = h // heads
    L = cfg["num_hidden_layers"]
    inter = cfg["intermediate_size"]
    d_inner = cfg["mamba_expand"] * h
    dt_rank = cfg.get("mamba_dt_rank", "auto")
    if dt_rank == "auto" or dt_rank is None:
        dt_rank = ceil_div(h, 16)
    k = cfg["num_experts_per_tok"]
    for i in range(L):
        if jamba_layer_is_attention(cfg, i):
            c.add("attention", gqa_attention(h, heads, kv, hd))
        else:
            c.add("mamba", mamba1_mixer(h, d_inner, cfg["mamba_d_state"], cfg["mamba_d_conv"],
                                        dt_rank, bool(cfg.get("mamba_proj_bias", False)),
                                        bool(cfg.get("mamba_conv_bias", True)), inner_norms=True))
        E = jamba_layer_num_experts(cfg, i)
        if E > 1:
            moe_block(c, "moe", h, E, k, gated_mlp(h, inter), linear(h, E))
        else:
            c.add("dense_mlp", gated_mlp(h, inter))
        c.add("norms", 2 * h)          # input_layernorm, pre_ff_layernorm
    c.add("norms", h)                  # final_layernorm
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)


def count_mamba(cfg, c, mtp):
    h = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    d_inner = get(cfg, "intermediate_size", get(cfg, "expand", 2) * h)
    dt_rank = cfg.get("time_step_rank", "auto")
    if dt_rank == "auto" or dt_rank is None:
        dt_rank = ceil_div(h, 16)
    c.add("mamba", L * mamba1_mixer(h, d_inner, cfg["state_size"], cfg["conv_kernel"], dt_rank,
                                    bool(cfg.get("use_bias", False)),
                                    bool(cfg.get("use_conv_bias", True))))
    c.add("norms", L * h + h)          # per-block norm + norm_f
    # MambaConfig has no tie_word_embeddings default of its own: PretrainedConfig's True.
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], True)


def count_mamba2(cfg, c, mtp):
    h = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    d_inner = int(get(cfg, "expand", 2) * h)
    n_heads = cfg["num_heads"]
    c.add("mamba2", L * mamba2_mixer(h, d_inner, n_heads, get(cfg, "n_groups", 1),
                                     cfg["state_size"], cfg["conv_kernel"],
                                     bool(cfg.get("use_bias", False)), None,
                                     bool(cfg.get("use_conv_bias", True))))
    c.add("norms", L * h + h)
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)


def count_zamba2(cfg, c, mtp):
    h = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    attn_hidden = 2 * h
    hd = attn_hidden // heads
    inter = get(cfg, "intermediate_size", 4 * h)
    r = get(cfg, "adapter_rank", 128)
    n_mem = get(cfg, "num_mem_blocks", 1)
    bias = bool(cfg.get("add_bias_linear", False))
    d_inner = int(get(cfg, "mamba_expand", 2) * h)
    n_mheads = get(cfg, "n_mamba_heads", 8)
    lbt = cfg.get("layers_block_type")
    n_hybrid = lbt.count("hybrid")
    # every layer owns a Mamba-2 decoder layer (mixer + input_layernorm)
    mixer = mamba2_mixer(h, d_inner, n_mheads, get(cfg, "mamba_ngroups", 1),
                         cfg["mamba_d_state"], get(cfg, "mamba_d_conv", 4), bias, None, True)
    c.add("mamba2", L * mixer)
    c.add("norms", L * h)
    # hybrid layers: own Linear(h, h) bridge each
    c.add("hybrid_linear", n_hybrid * linear(h, h))
    # shared transformer blocks: counted once (num_mem_blocks copies)
    block = gqa_attention(h, heads, kv, hd, in_dim=attn_hidden)
    block += linear(h, 2 * inter, bias) + linear(inter, h, bias)     # gate_up_proj, down_proj
    block += attn_hidden + h                                        # input_layernorm(2h), pre_ff_layernorm(h)
    c.add("shared_blocks", min(n_mem, n_hybrid) * block)
    # per-use LoRA adapters (one per hybrid invocation, untied)
    mlp_adapter = linear(h, r) + linear(r, 2 * inter)
    c.add("mlp_adapters", n_hybrid * mlp_adapter)
    if cfg.get("use_shared_attention_adapter"):
        attn_adapter = 3 * (linear(attn_hidden, r) + linear(r, attn_hidden))
        c.add("attn_adapters", n_hybrid * attn_adapter)
    c.add("norms", h)                   # final_layernorm
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], True)


def count_nemotron_h(cfg, c, mtp):
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    hd = get(cfg, "attention_head_dim", get(cfg, "head_dim", h // heads))
    pattern = cfg["hybrid_override_pattern"]
    m_heads = cfg["mamba_num_heads"]
    d_inner = m_heads * cfg["mamba_head_dim"]
    attn_bias = bool(cfg.get("attention_bias", False))
    mlp_bias = bool(cfg.get("mlp_bias", False))
    for ch in pattern:
        if ch == "M":
            c.add("mamba2", mamba2_mixer(h, d_inner, m_heads, get(cfg, "n_groups", 1),
                                         cfg["ssm_state_size"], get(cfg, "conv_kernel", 4),
                                         bool(cfg.get("use_bias", False)), None,
                                         bool(cfg.get("use_conv_bias", True))))
        elif ch == "*":
            c.add("attention", gqa_attention(h, heads, kv, hd, attn_bias, attn_bias))
        elif ch == "-":
            c.add("mlp", plain_mlp(h, cfg["intermediate_size"], mlp_bias))
        elif ch == "E":
            E = cfg["n_routed_experts"]
            k = cfg["num_experts_per_tok"]
            mi = cfg["moe_intermediate_size"]
            si = get(cfg, "moe_shared_expert_intermediate_size", 0)
            moe_block(c, "moe", h, E, k, plain_mlp(h, mi), E * h + E,
                      plain_mlp(h, si) if si else 0)
        else:
            raise ValueError("unknown hybrid_override_pattern character %r" % ch)
        c.add("norms", h)                 # per-block RMSNorm
    c.add("norms", h)                     # norm_f
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)


def count_falcon_h1(cfg, c, mtp):
    h = cfg["hidden_size"]
    L = cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    hd = get(cfg, "head_dim", h // heads)
    d_ssm = cfg.get("mamba_d_ssm")
    d_inner = d_ssm if d_ssm else int(get(cfg, "mamba_expand", 2) * h)
    attn_bias = bool(cfg.get("attention_bias", False))
    per_layer = mamba2_mixer(h, d_inner, cfg["mamba_n_heads"], get(cfg, "mamba_n_groups", 1),
                             cfg["mamba_d_state"], get(cfg, "mamba_d_conv", 4),
                             bool(cfg.get("mamba_proj_bias", False)),
                             bool(cfg.get("projectors_bias", False)),
                             bool(cfg.get("mamba_conv_bias", True)),
                             gated_norm=bool(cfg.get("mamba_rms_norm", False)))
    c.add("mamba2", L * per_layer)
    c.add("attention", L * gqa_attention(h, heads, kv, hd, attn_bias, attn_bias))
    c.add("mlp", L * gated_mlp(h, cfg["intermediate_size"], bool(cfg.get("mlp_bias", False))))
    c.add("norms", L * 2 * h + h)         # input_layernorm, pre_ff_layernorm, final_layernorm
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], False)


def count_granitemoehybrid(cfg, c, mtp):
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = get(cfg, "num_key_value_heads", heads)
    hd = h // heads
    L = cfg["num_hidden_layers"]
    lt = cfg.get("layer_types") or ["mamba"] * L
    d_inner = int(get(cfg, "mamba_expand", 2) * h)
    E = get(cfg, "num_local_experts", 0)
    k = get(cfg, "num_experts_per_tok", 0)
    inter = cfg["intermediate_size"]
    shared_i = get(cfg, "shared_intermediate_size", 0)
    attn_bias = bool(cfg.get("attention_bias", False))
    for t in lt:
        if t == "mamba":
            c.add("mamba2", mamba2_mixer(h, d_inner, cfg["mamba_n_heads"],
                                         get(cfg, "mamba_n_groups", 1), cfg["mamba_d_state"],
                                         get(cfg, "mamba_d_conv", 4),
                                         bool(cfg.get("mamba_proj_bias", False)), None,
                                         bool(cfg.get("mamba_conv_bias", True))))
        else:
            c.add("attention", gqa_attention(h, heads, kv, hd, attn_bias, attn_bias))
        if E > 0:
            # ParallelExperts input_linear (E, 2*inter, h), output_linear (E, h, inter); router
            moe_block(c, "moe", h, E, k, 2 * inter * h + inter * h, linear(h, E),
                      linear(h, 2 * shared_i) + linear(shared_i, h) if shared_i else 0)
        elif shared_i:
            c.add("shared_mlp", linear(h, 2 * shared_i) + linear(shared_i, h))
        c.add("norms", 2 * h)             # input_layernorm, post_attention_layernorm
    c.add("norms", h)
    embeddings_and_head(c, cfg, h, cfg["vocab_size"], True)


COUNTERS = {
    "llama": count_llama,
    "mistral": count_mistral,
    "qwen2": count_qwen2,
    "qwen3": count_qwen3,
    "qwen3_moe": count_qwen3_moe,
    "qwen3_next": count_qwen3_next,
    "mixtral": count_mixtral,
    "deepseek_v3": count_deepseek_v3,
    "jamba": count_jamba,
    "mamba": count_mamba,
    "mamba2": count_mamba2,
    "zamba2": count_zamba2,
    "nemotron_h": count_nemotron_h,
    "falcon_h1": count_falcon_h1,
    "granitemoehybrid": count_granitemoehybrid,
}


def load_config(path):
    # Python's json accepts the bare `Infinity` that Transformers writes
    # (e.g. "time_step_limit": [0.0, Infinity]).
    with open(path) as f:
        cfg = json.load(f)
    if "text_config" in cfg and "hidden_size" not in cfg:
        merged = dict(cfg["text_config"])
        merged.setdefault("tie_word_embeddings", cfg.get("tie_word_embeddings"))
        cfg = merged
    return cfg


def count(path, mtp=False):
    cfg = load_config(path)
    mt = cfg.get("model_type")
    if mt not in COUNTERS:
        raise SystemExit("%s: unsupported model_type %r" % (path, mt))
    c = Counter()
    COUNTERS[mt](cfg, c, mtp)
    return c


def check(tsv_path, mtp=False):
    """Compare computed counts with the published ones in params.tsv
    (columns: file, total, active, source; file relative to the tsv)."""
    import os
    base = os.path.dirname(os.path.abspath(tsv_path))
    print("file\tcomputed_total\tpublished_total\trel_diff_total\t"
          "computed_active\tpublished_active\trel_diff_active")
    with open(tsv_path) as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        for line in f:
            if not line.strip():
                continue
            row = line.rstrip("\n").split("\t")
            name = row[col["file"]]
            pub_t = float(row[col["total"]])
            pub_a = float(row[col["active"]])
            c = count(os.path.join(base, name), mtp)
            print("%s\t%d\t%.0f\t%+.2f%%\t%d\t%.0f\t%+.2f%%" % (
                name, c.total, pub_t, 100.0 * (c.total - pub_t) / pub_t,
                c.active, pub_a, 100.0 * (c.active - pub_a) / pub_a))
    return 0


def main(argv):
    mtp = "--mtp" in argv
    breakdown = "--breakdown" in argv
    if "--check" in argv:
        i = argv.index("--check")
        return check(argv[i + 1], mtp)
    paths = [a for a in argv if not a.startswith("--")]
    if not paths:
        sys.stderr.write(__doc__)
        return 2
    for p in paths:
        c = count(p, mtp)
        print("%s\t%d\t%d" % (p, c.total, c.active))
        if breakdown:
            for name in sorted(c.parts):
                t, a = c.parts[name]
                print("  %-24s %16d %16d" % (name, t, a))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
