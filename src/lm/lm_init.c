/* lm_init.c — a language model's sizes (a preset or config.json, with
 * overrides) and random weights with the statistics of a freshly
 * initialized Mamba, under the Hugging Face key names.
 *
 * Each tensor is generated from the seed and its own key, not from a
 * stream shared by all of them: any subset comes out the same in any
 * order, so a model can be built layer by layer without materializing
 * the whole checkpoint first (the benchmark's 130m model). */
#include "lm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- sizes ---- */

/* The overridable sizes: every model parameter, by name or alias. */
typedef struct Override {
  const char *name, *alias;
  size_t offset;
} Override;

static const Override overrides[] = {
#define X(id, field, alias) {#field, alias, offsetof(ModelConfig, field)},
    MODEL_PARAMS(X)
#undef X
};
_Static_assert(sizeof overrides / sizeof overrides[0] == MP_COUNT,
               "an override per model parameter");
enum { NOVERRIDES = MP_COUNT };

static bool is_dir_with_config(const char *path, Buf *config) {
  buf_printf(config, "%s/config.json", path);
  FILE *f = fopen(config->s, "r");
  if (f)
    fclose(f);
  return f != NULL;
}

static bool base_config(const char *model, ModelConfig *cfg, Diag *d) {
  const Preset *p = preset_find(model);
  if (p) {
    model_config_from_preset(p, cfg);
    return true;
  }
  Buf path = {0};
  bool ok = is_dir_with_config(model, &path);
  if (ok) {
    ok = model_config_load(path.s, cfg, d);
  } else {
    Buf names = {0};
    for (int i = 0; preset_at(i); i++)
      buf_printf(&names, "%s%s", i ? ", " : "", preset_at(i)->sizes.name);
    diag_error(d, model, (Loc){0, 0},
               "not a model preset (%s) nor a directory with config.json",
               names.s);
    buf_free(&names);
  }
  buf_free(&path);
  return ok;
}

/* Sizes that follow from others, unless they were set explicitly. */
static bool derive(ModelConfig *c, const bool *given, Diag *d,
                   const char *model) {
  long long inner = (long long)c->expand * c->d_model;
  if ((given[MP_D_MODEL] || given[MP_EXPAND]) && !given[MP_D_INNER])
    c->d_inner = (int)inner;
  if (c->d_inner != inner) {
    diag_error(d, model, (Loc){0, 0},
               "d_inner %d is not expand * d_model = %d * %d", c->d_inner,
               c->expand, c->d_model);
    return false;
  }
  if (c->version == 1) {
    if (given[MP_D_MODEL] && !given[MP_DT_RANK])
      c->dt_rank = (int)(((long long)c->d_model + 15) / 16);
    c->head_dim = c->n_heads = c->ngroups = 0;
    return true;
  }
  c->dt_rank = 0;
  if (given[MP_N_HEADS] && !given[MP_HEAD_DIM])
    c->head_dim = c->d_inner / c->n_heads;
  if (c->head_dim <= 0 || c->d_inner % c->head_dim) {
    diag_error(d, model, (Loc){0, 0},
               "d_inner %d is not divisible by head_dim %d", c->d_inner,
               c->head_dim);
    return false;
  }
  int heads = c->d_inner / c->head_dim;
  if (given[MP_N_HEADS] && c->n_heads != heads) {
    diag_error(d, model, (Loc){0, 0},
               "n_heads %d is not d_inner / head_dim = %d / %d", c->n_heads,
               c->d_inner, c->head_dim);
    return false;
  }
  c->n_heads = heads;
  if (c->ngroups != 1) {
    diag_error(d, model, (Loc){0, 0},
               "ngroups %d: only ngroups = 1 is supported", c->ngroups);
    return false;
  }
  return true;
}

bool lm_config_resolve(const char *model, const Setting *set, int nset,
                       ModelConfig *cfg, Diag *d) {
  ModelConfig c = {0};
  if (!base_config(model, &c, d))
    return false;
  bool given[NOVERRIDES] = {0};
  for (int i = 0; i < nset; i++) {
    int k = 0;
    while (k < NOVERRIDES && strcmp(overrides[k].name, set[i].name) &&
           (!overrides[k].alias || strcmp(overrides[k].alias, set[i].name)))
      k++;
    if (k == NOVERRIDES) {
      diag_error(d, model, (Loc){0, 0},
                 "--set %s: not a model size (d_model, n_layer, vocab, "
                 "d_state, d_conv, expand, d_inner, dt_rank, head_dim, "
                 "n_heads, ngroups)",
                 set[i].name);
      return false;
    }
    double v = set[i].value;
    if (!(v >= 1 && v <= (1 << 24) && v == floor(v))) {
      diag_error(d, model, (Loc){0, 0},
                 "--set %s=%g: sizes are integers in [1, 16777216]",
                 set[i].name, v);
      return false;
    }
    *(int *)((char *)&c + overrides[k].offset) = (int)v;
    given[k] = true;
  }
  if (!derive(&c, given, d, model))
    return false;
  *cfg = c;
  return true;
}

/* ---- the checkpoint's keys ---- */

static void add_key(CkptKey **keys, int *n, int *cap, const char *prefix,
                    const char *name, int ndim, int64_t a, int64_t b,
                    int64_t c) {
  CkptKey k = {.ndim = ndim, .shape = {a, b, c}};
  snprintf(k.name, sizeof k.name, "%s%s", prefix, name);
  VEC_PUSH(*keys, *n, *cap, k);
}

/* The keys of layer I. */
static void layer_keys(const ModelConfig *cfg, int i, CkptKey **keys, int *n,
                       int *cap) {
  int64_t D = cfg->d_model, di = cfg->d_inner, N = cfg->d_state;
  int64_t K = cfg->d_conv, R = cfg->dt_rank, H = cfg->n_heads;
  char p[64];
  snprintf(p, sizeof p, "backbone.layers.%d.", i);
  add_key(keys, n, cap, p, "norm.weight", 1, D, 0, 0);
  char m[80];
  snprintf(m, sizeof m, "%smixer.", p);
  if (cfg->version == 1) {
    add_key(keys, n, cap, m, "in_proj.weight", 2, 2 * di, D, 0);
    add_key(keys, n, cap, m, "conv1d.weight", 3, di, 1, K);
    add_key(keys, n, cap, m, "conv1d.bias", 1, di, 0, 0);
    add_key(keys, n, cap, m, "x_proj.weight", 2, R + 2 * N, di, 0);
    add_key(keys, n, cap, m, "dt_proj.weight", 2, di, R, 0);
    add_key(keys, n, cap, m, "dt_proj.bias", 1, di, 0, 0);
    add_key(keys, n, cap, m, "A_log", 2, di, N, 0);
    add_key(keys, n, cap, m, "D", 1, di, 0, 0);
  } else {
    int64_t conv = di + 2 * N;
    add_key(keys, n, cap, m, "in_proj.weight", 2, 2 * di + 2 * N + H, D, 0);
    add_key(keys, n, cap, m, "conv1d.weight", 3, conv, 1, K);
    add_key(keys, n, cap, m, "conv1d.bias", 1, conv, 0, 0);
    add_key(keys, n, cap, m, "dt_bias", 1, H, 0, 0);
    add_key(keys, n, cap, m, "A_log", 1, H, 0, 0);
    add_key(keys, n, cap, m, "D", 1, H, 0, 0);
    add_key(keys, n, cap, m, "norm.weight", 1, di, 0, 0);
  }
  add_key(keys, n, cap, m, "out_proj.weight", 2, D, di, 0);
}

/* The model-level keys: the embedding, or (LAST) the final norm. */
static void model_key(const ModelConfig *cfg, bool last, CkptKey **keys,
                      int *n, int *cap) {
  if (last)
    add_key(keys, n, cap, "", "backbone.norm_f.weight", 1, cfg->d_model, 0,
            0);
  else
    add_key(keys, n, cap, "", "backbone.embeddings.weight", 2, cfg->vocab,
            cfg->d_model, 0);
}

int lm_checkpoint_keys(const ModelConfig *cfg, CkptKey **keys) {
  int n = 0, cap = 0;
  *keys = NULL;
  model_key(cfg, false, keys, &n, &cap);
  for (int i = 0; i < cfg->n_layer; i++)
    layer_keys(cfg, i, keys, &n, &cap);
  model_key(cfg, true, keys, &n, &cap);
  return n;
}

/* The elements of KEYS[0..n), added to *TOTAL TIMES times. */
static bool add_counts(const CkptKey *keys, int n, uint64_t times,
                       uint64_t *total) {
  for (int i = 0; i < n; i++) {
    uint64_t c;
    if (!count_elements(keys[i].ndim, keys[i].shape, UINT64_MAX, &c) ||
        !mul_u64(c, times, &c) || !add_u64(*total, c, total))
      return false;
  }
  return true;
}

bool lm_param_count(const ModelConfig *cfg, uint64_t *count) {
  CkptKey *keys = NULL;
  int n = 0, cap = 0;
  model_key(cfg, false, &keys, &n, &cap);
  model_key(cfg, true, &keys, &n, &cap);
  uint64_t total = 0;
  bool ok = add_counts(keys, n, 1, &total);
  n = 0;
  if (cfg->n_layer > 0)
    layer_keys(cfg, 0, &keys, &n, &cap);
  ok = ok && add_counts(keys, n, (uint64_t)cfg->n_layer, &total);
  free(keys);
  if (ok)
    *count = total;
  return ok;
}

/* ---- random weights ---- */

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* softplus^-1 of a log-uniform dt in [1e-3, 0.1] (floored at 1e-4), as
 * Mamba initializes the dt bias so that softplus(bias) spans that range. */
static double dt_bias(Rng *r) {
  double lo = log(1e-3), hi = log(0.1);
  double dt = exp(lo + rng_uniform(r) * (hi - lo));
  dt = dt > 1e-4 ? dt : 1e-4;
  return dt + log(-expm1(-dt));
}

typedef enum {
  W_ONE,      /* norm weights, D */
  W_NORMAL,   /* N(0, scale) */
  W_UNIFORM,  /* U(-scale, scale) */
  W_DT_BIAS,  /* softplus^-1 of a log-uniform dt */
  W_A_LOG_1,  /* log(1..N) along each row */
  W_A_LOG_2,  /* log(U(1, 16)) */
  W_ZERO
} Init;

/* How KEY's values are drawn (and their scale), from its name. */
static Init init_of(const char *key, const ModelConfig *c, double *scale) {
  *scale = 0;
  if (ends_with(key, "norm.weight") || ends_with(key, "norm_f.weight") ||
      ends_with(key, ".D"))
    return W_ONE;
  if (ends_with(key, "embeddings.weight") || ends_with(key, "in_proj.weight")) {
    *scale = 0.02;
    return W_NORMAL;
  }
  if (ends_with(key, "out_proj.weight")) {
    *scale = 0.02 / sqrt(2.0 * c->n_layer);
    return W_NORMAL;
  }
  if (ends_with(key, "conv1d.weight") || ends_with(key, "conv1d.bias")) {
    *scale = 1 / sqrt((double)c->d_conv);
    return W_UNIFORM;
  }
  if (ends_with(key, "x_proj.weight")) {
    *scale = 1 / sqrt((double)c->d_inner);
    return W_UNIFORM;
  }
  if (ends_with(key, "dt_proj.weight")) {
    *scale = 1 / sqrt((double)c->dt_rank);
    return W_UNIFORM;
  }
  if (ends_with(key, "dt_proj.bias") || ends_with(key, "dt_bias"))
    return W_DT_BIAS;
  if (ends_with(key, "A_log"))
    return c->version == 1 ? W_A_LOG_1 : W_A_LOG_2;
  return W_ZERO;
}

static void fill(Array *a, const char *key, const ModelConfig *c, Rng *r) {
  double scale;
  Init kind = init_of(key, c, &scale);
  for (int64_t i = 0; i < a->n; i++) {
    double v = 0;
    switch (kind) {
    case W_ONE: v = 1; break;
    case W_NORMAL: v = scale * rng_normal(r); break;
    case W_UNIFORM: v = scale * (2 * rng_uniform(r) - 1); break;
    case W_DT_BIAS: v = dt_bias(r); break;
    case W_A_LOG_1: v = log((double)(i % c->d_state + 1)); break;
    case W_A_LOG_2: v = log(1 + 15 * rng_uniform(r)); break;
    case W_ZERO: v = 0; break;
    }
    a->data[i] = (float)v;
  }
}

/* The keys KEY may be among: its layer's ("backbone.layers.7.") or the
 * model-level ones, so that a lookup never lists every layer's. */
static int candidate_keys(const ModelConfig *cfg, const char *key,
                          CkptKey **keys) {
  int n = 0, cap = 0;
  *keys = NULL;
  static const char prefix[] = "backbone.layers.";
  if (strncmp(key, prefix, sizeof prefix - 1) == 0) {
    char *end;
    long layer = strtol(key + sizeof prefix - 1, &end, 10);
    if (end != key + sizeof prefix - 1 && *end == '.' && layer >= 0 &&
        layer < cfg->n_layer)
      layer_keys(cfg, (int)layer, keys, &n, &cap);
    return n;
  }
  model_key(cfg, false, keys, &n, &cap);
  model_key(cfg, true, keys, &n, &cap);
  return n;
}

static Array *random_get(const Checkpoint *ck, const char *key) {
  CkptKey *keys;
  int n = candidate_keys(&ck->cfg, key, &keys);
  Array *a = NULL;
  for (int i = 0; i < n && !a; i++)
    if (strcmp(keys[i].name, key) == 0) {
      a = array_new(keys[i].ndim, keys[i].shape);
      Rng r = rng_for(ck->seed, key);
      if (a)
        fill(a, key, &ck->cfg, &r);
    }
  free(keys);
  return a;
}

Checkpoint lm_random_checkpoint(const ModelConfig *cfg, uint64_t seed) {
  return (Checkpoint){.path = "(random weights)", .get = random_get,
                      .seed = seed, .cfg = *cfg};
}

/* ---- a model directory ---- */

bool lm_write_random(const ModelConfig *cfg, uint64_t seed, DType dt,
                     const char *dir, const char *keep, double *params,
                     bool *refused, Diag *d) {
  Checkpoint ck = lm_random_checkpoint(cfg, seed);
  CkptKey *keys;
  int n = lm_checkpoint_keys(cfg, &keys);
  StWriter *w = st_writer_new();
  *params = 0;
  for (int i = 0; i < n; i++) {
    Array *a = ck.get(&ck, keys[i].name);
    *params += (double)a->n;
    st_writer_add(w, keys[i].name, a, dt);
    array_free(a);
  }
  st_writer_meta(w, "format", "pt");
  free(keys);
  size_t len;
  unsigned char *image = st_writer_image(w, &len);
  st_writer_free(w);
  char *config = model_config_text(cfg);
  /* Both files land together, or neither. */
  OutSet *set = outset_new(dir);
  if (keep)
    outset_protect(set, keep);
  bool ok = outset_put(set, "model.safetensors", image, len, d);
  free(image);
  ok = ok && outset_put(set, "config.json", config, strlen(config), d) &&
       outset_commit(set, refused, d);
  free(config);
  outset_free(set);
  return ok;
}
