#include "preset.h"

#include <stddef.h>
#include <string.h>

/* From the published configs (state-spaces/mamba-*, mamba2-*); see
 * ../shared/reference/mamba-semantics.md. Vocabulary 50277 is padded to a
 * multiple of 8 (Mamba-1) or 16 (Mamba-2). */
static const Preset presets[] = {
    {"mamba-130m", 1, 768, 24, 1536, 16, 48, 0, 0, 4, 2, 50280, 0},
    {"mamba-370m", 1, 1024, 48, 2048, 16, 64, 0, 0, 4, 2, 50280, 0},
    {"mamba-790m", 1, 1536, 48, 3072, 16, 96, 0, 0, 4, 2, 50280, 0},
    {"mamba-1.4b", 1, 2048, 48, 4096, 16, 128, 0, 0, 4, 2, 50280, 0},
    {"mamba-2.8b", 1, 2560, 64, 5120, 16, 160, 0, 0, 4, 2, 50280, 0},
    {"mamba2-130m", 2, 768, 24, 1536, 128, 0, 24, 64, 4, 2, 50288, 1},
    {"mamba2-370m", 2, 1024, 48, 2048, 128, 0, 32, 64, 4, 2, 50288, 1},
    {"mamba2-780m", 2, 1536, 48, 3072, 128, 0, 48, 64, 4, 2, 50288, 1},
    {"mamba2-1.3b", 2, 2048, 48, 4096, 128, 0, 64, 64, 4, 2, 50288, 1},
    {"mamba2-2.7b", 2, 2560, 64, 5120, 128, 0, 80, 64, 4, 2, 50288, 1},
};

const char *const preset_param_names[] = {
    "d_model", "n_layer", "d_inner", "d_state", "dt_rank", "n_heads",
    "head_dim", "d_conv", "expand", "vocab", "ngroups", NULL};

const Preset *preset_find(const char *name) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcmp(presets[i].name, name) == 0)
      return &presets[i];
  return NULL;
}

const Preset *preset_at(int i) {
  if (i < 0 || (size_t)i >= sizeof presets / sizeof presets[0])
    return NULL;
  return &presets[i];
}

bool preset_param(const Preset *p, const char *param, double *value) {
  const int fields[] = {p->d_model, p->n_layer, p->d_inner, p->d_state,
                        p->dt_rank, p->n_heads, p->head_dim, p->d_conv,
                        p->expand,  p->vocab,   p->ngroups};
  for (int i = 0; preset_param_names[i]; i++)
    if (strcmp(preset_param_names[i], param) == 0) {
      *value = fields[i];
      return true;
    }
  return false;
}
