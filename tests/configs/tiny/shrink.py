"""Shrink published configs to tiny models of the same type and schedule
shape, for running every model type on real tensors (tests/e2e/models_run.sh).

Usage: shrink.py OUTDIR CONFIG.json...   writes OUTDIR/NAME.json
"""
import json
import os
import sys

SMALL = {"hidden_size": 32, "d_model": 32, "intermediate_size": 48, "moe_intermediate_size": 16,
 "shared_expert_intermediate_size": 16, "shared_intermediate_size": 16, "vocab_size": 50,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "attention_head_dim": 8,
 "q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
 "n_routed_experts": 4, "num_experts": 4, "num_local_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
 "mamba_d_state": 4, "state_size": 4, "ssm_state_size": 4, "mamba_num_heads": 8, "mamba_head_dim": 8,
 "mamba_n_heads": 8, "mamba_d_head": 8, "num_heads": 8, "n_mamba_heads": 8, "mamba_headdim": 8,
 "n_groups": 2, "mamba_n_groups": 2, "mamba_ngroups": 2, "mamba_d_ssm": 64, "mamba_dt_rank": 4, "time_step_rank": 4,
 "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
 "first_k_dense_replace": 1, "adapter_rank": 4, "sliding_window": None}
for p in sys.argv[2:]:
    c = json.load(open(p))
    t = c.get("text_config", c)
    for k, v in SMALL.items():
        if k in t: t[k] = v
    L = min(t.get("num_hidden_layers", t.get("n_layer", 4)), 8)
    for key in ("num_hidden_layers", "n_layer"):
        if key in t:
            t[key] = L
    for key in ("layers_block_type", "layer_types"):
        if isinstance(t.get(key), list): t[key] = t[key][:L]
    if "hybrid_override_pattern" in t: t["hybrid_override_pattern"] = t["hybrid_override_pattern"][:L]
    if "hybrid_layer_ids" in t: t["hybrid_layer_ids"] = [i for i in t["hybrid_layer_ids"] if i < L]
    if t.get("model_type") == "mistral":  # a window the tokens outgrow
        t["sliding_window"] = 4
    if t.get("model_type") == "zamba2":  # two hybrid layers of four
        t["layers_block_type"] = ["mamba", "hybrid", "mamba", "hybrid"]
        t["num_hidden_layers"] = 4
    json.dump(c, open(os.path.join(sys.argv[1], os.path.basename(p)), "w"))
