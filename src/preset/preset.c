#include "preset.h"

#include <stddef.h>
#include <string.h>

/* The parameters, as config.json spells them. Mamba-1 models set dt_rank
 * (ceil(d_model / 16)); Mamba-2 models set n_heads (d_inner / head_dim),
 * head_dim and ngroups. The rest size the blocks of whole models
 * (src/net/: attention, MLPs, mixtures of experts, multi-head latent
 * attention, Gated DeltaNet; docs/models.md). */
static const char *const params[] = {
    "d_model", "n_layer", "d_inner", "d_state", "dt_rank", "n_heads",
    "head_dim", "d_conv", "expand", "vocab", "ngroups",
    "n_kv_heads", "d_ff", "n_experts", "top_k", "d_ff_expert", "q_lora_rank", "kv_lora_rank",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_k_heads",
    "n_v_heads", "k_head_dim", "d_in", "d_out", "d_ff_shared", "ssm_heads", "ssm_head_dim"};

#define MAMBA1(name, d_model, n_layer, d_inner, dt_rank)                    \
  {{name, 8,                                                               \
    (const Setting[]){{"d_model", d_model}, {"n_layer", n_layer},          \
                      {"d_inner", d_inner}, {"d_state", 16},               \
                      {"dt_rank", dt_rank}, {"d_conv", 4},                 \
                      {"expand", 2}, {"vocab", 50280}}},                   \
   1}
#define MAMBA2(name, d_model, n_layer, d_inner, n_heads)                    \
  {{name, 10,                                                              \
    (const Setting[]){{"d_model", d_model}, {"n_layer", n_layer},          \
                      {"d_inner", d_inner}, {"d_state", 128},              \
                      {"n_heads", n_heads}, {"head_dim", 64},              \
                      {"d_conv", 4}, {"expand", 2}, {"vocab", 50288},      \
                      {"ngroups", 1}}},                                    \
   2}

/* From the published configs (state-spaces/mamba-*, mamba2-*); see
 * ../shared/reference/mamba-semantics.md. Vocabulary 50277 is padded to a
 * multiple of 8 (Mamba-1) or 16 (Mamba-2). */
static const Preset presets[] = {
    MAMBA1("mamba-130m", 768, 24, 1536, 48),
    MAMBA1("mamba-370m", 1024, 48, 2048, 64),
    MAMBA1("mamba-790m", 1536, 48, 3072, 96),
    MAMBA1("mamba-1.4b", 2048, 48, 4096, 128),
    MAMBA1("mamba-2.8b", 2560, 64, 5120, 160),
    MAMBA2("mamba2-130m", 768, 24, 1536, 24),
    MAMBA2("mamba2-370m", 1024, 48, 2048, 32),
    MAMBA2("mamba2-780m", 1536, 48, 3072, 48),
    MAMBA2("mamba2-1.3b", 2048, 48, 4096, 64),
    MAMBA2("mamba2-2.7b", 2560, 64, 5120, 80),
};
enum { NPRESETS = sizeof presets / sizeof presets[0] };

const Preset *preset_find(const char *name) {
  for (int i = 0; i < NPRESETS; i++)
    if (strcmp(presets[i].sizes.name, name) == 0)
      return &presets[i];
  return NULL;
}

const ModelSizes *preset_sizes(const char *name) {
  const Preset *p = preset_find(name);
  return p ? &p->sizes : NULL;
}

const Preset *preset_at(int i) {
  return i >= 0 && i < NPRESETS ? &presets[i] : NULL;
}

bool sizes_value(const ModelSizes *sizes, const char *name, double *value) {
  for (int i = 0; sizes && i < sizes->n; i++)
    if (strcmp(sizes->set[i].name, name) == 0) {
      *value = sizes->set[i].value;
      return true;
    }
  return false;
}

bool preset_is_param(const char *name) {
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
    if (strcmp(params[i], name) == 0)
      return true;
  return false;
}
