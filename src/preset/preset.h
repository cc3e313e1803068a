/* preset.h — the published Mamba model configurations.
 *
 * A preset is a model's sizes: a named list of settings (ir.h's
 * ModelSizes), spelled as in the models' config.json (d_model, n_layer,
 * d_inner, d_state, ...). A cascade spec's `shape` section binds its rank
 * sizes to expressions of these names, so one spec serves every model
 * size; `--set NAME=VALUE` overrides any of them. The language models
 * (src/lm/) read the same lists. */
#ifndef MAMBALAYA_PRESET_H
#define MAMBALAYA_PRESET_H

#include "../ir/ir.h"

typedef struct Preset {
  ModelSizes sizes;
  int version; /* 1: Mamba-1 (selective scan), 2: Mamba-2 (SSD) */
} Preset;

/* The preset called NAME, or NULL. */
const Preset *preset_find(const char *name);
/* Its sizes, or NULL when there is no such preset. */
const ModelSizes *preset_sizes(const char *name);
/* The I-th preset (in table order), or NULL past the end. */
const Preset *preset_at(int i);
/* The value of setting NAME in SIZES; false if it has none. */
bool sizes_value(const ModelSizes *sizes, const char *name, double *value);
/* Is NAME one of the model parameters a preset or config.json may set
 * (d_model, n_layer, ...)? A spec may use them as constants. */
bool preset_is_param(const char *name);

#endif
