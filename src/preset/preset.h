/* preset.h — the published Mamba model configurations.
 *
 * A preset is a set of named model parameters, spelled as in the models'
 * config.json (d_model, n_layer, d_inner, d_state, ...). A cascade spec's
 * `shape` section binds its rank sizes to expressions of these names, so
 * one spec serves every model size; `--set NAME=VALUE` overrides any of
 * them. */
#ifndef MAMBALAYA_PRESET_H
#define MAMBALAYA_PRESET_H

#include <stdbool.h>

typedef struct Preset {
  const char *name;
  int version; /* 1: Mamba-1 (selective scan), 2: Mamba-2 (SSD) */
  int d_model, n_layer, d_inner, d_state;
  int dt_rank;  /* Mamba-1: ceil(d_model / 16) */
  int n_heads;  /* Mamba-2: d_inner / head_dim */
  int head_dim; /* Mamba-2: 64 */
  int d_conv;   /* 4 */
  int expand;   /* 2 */
  int vocab;    /* padded vocabulary */
  int ngroups;  /* Mamba-2: 1 */
} Preset;

/* The preset called NAME, or NULL. */
const Preset *preset_find(const char *name);
/* The I-th preset (in table order), or NULL past the end. */
const Preset *preset_at(int i);
/* The value of parameter PARAM (e.g. "d_inner"); false if the name is not
 * a parameter. Mamba-1 presets give n_heads = head_dim = 0 and Mamba-2
 * presets give dt_rank = 0. */
bool preset_param(const Preset *p, const char *param, double *value);
/* The names preset_param knows, NULL-terminated. */
extern const char *const preset_param_names[];

#endif
