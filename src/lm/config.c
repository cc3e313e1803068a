/* config.c — a Mamba model's sizes from config.json, in either published
 * form:
 *
 *   state-spaces (mamba_ssm's MambaConfig):
 *     {"d_model", "n_layer", "vocab_size", "pad_vocab_size_multiple",
 *      "ssm_cfg": {"layer": "Mamba1"|"Mamba2", "d_state", "d_conv",
 *                  "expand", "dt_rank", "headdim", "ngroups"}}
 *   Hugging Face (transformers' MambaConfig / Mamba2Config):
 *     {"model_type": "mamba"|"mamba2", "hidden_size", "num_hidden_layers",
 *      "vocab_size", "state_size", "expand", "conv_kernel",
 *      "time_step_rank", "intermediate_size", "head_dim", "num_heads",
 *      "n_groups"}
 *
 * Keys that do not change the sizes (rms_norm, residual_in_fp32, dt_min,
 * initializer_range, ...) are ignored, as the reference ignores them for
 * shapes. Absent sizes take the published defaults. */
#include "lm.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct Loader {
  const char *path;
  Diag *d;
} Loader;

#define cfail(l, ...) diag_fail((l)->d, (l)->path, (Loc){0, 0}, __VA_ARGS__)

/* An optional positive integer KEY of OBJ: *out keeps its default when
 * the key is absent (or null, as Hugging Face writes unset values). */
static bool get_int(const Loader *l, const json_t *obj, const char *key,
                    int *out) {
  const json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return true;
  if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
      json_integer_value(v) > INT_MAX)
    return cfail(l, "\"%s\" must be a positive integer", key);
  *out = (int)json_integer_value(v);
  return true;
}

/* A required positive integer. */
static bool need_int(const Loader *l, const json_t *obj, const char *key,
                     int *out) {
  if (!json_object_get(obj, key))
    return cfail(l, "missing \"%s\"", key);
  *out = 0;
  if (!get_int(l, obj, key, out))
    return false;
  return *out > 0 || cfail(l, "\"%s\" must be a positive integer", key);
}

/* dt_rank / time_step_rank: an integer, or "auto" for ceil(d_model/16). */
static bool get_dt_rank(const Loader *l, const json_t *obj, const char *key,
                        int *out) {
  const json_t *v = json_object_get(obj, key);
  if (json_is_string(v)) {
    if (strcmp(json_string_value(v), "auto") != 0)
      return cfail(l, "\"%s\" must be a positive integer or \"auto\"", key);
    return true;
  }
  return get_int(l, obj, key, out);
}

/* The published defaults of each version, before the file's values. */
static void set_defaults(ModelConfig *c, int version) {
  c->version = version;
  c->d_conv = 4;
  c->expand = 2;
  c->d_state = version == 1 ? 16 : 128;
  c->head_dim = version == 1 ? 0 : 64;
  c->ngroups = version == 1 ? 0 : 1;
}

/* Derived sizes, and every relation between sizes that the weights rely
 * on. *inner and *heads are the file's own values (0 when absent). */
static bool finish(const Loader *l, ModelConfig *c, int inner, int heads,
                   int pad) {
  long long d_inner = (long long)c->expand * c->d_model;
  if (d_inner > INT_MAX)
    return cfail(l, "d_inner = expand * d_model = %lld is too large", d_inner);
  if (inner && inner != d_inner)
    return cfail(
        l, "intermediate_size %d is not expand * d_model = %d * %d = %lld",
        inner, c->expand, c->d_model, d_inner);
  c->d_inner = (int)d_inner;
  if (pad > 1 && c->vocab % pad) { /* as MambaLMHeadModel pads it */
    long long v = ((long long)c->vocab + pad - 1) / pad * pad;
    if (v > INT_MAX)
      return cfail(l, "vocab_size %d padded to a multiple of %d is too large",
                   c->vocab, pad);
    c->vocab = (int)v;
  }
  if (c->version == 1) {
    if (!c->dt_rank)
      c->dt_rank = (int)(((long long)c->d_model + 15) / 16);
    c->head_dim = c->n_heads = c->ngroups = 0;
    return true;
  }
  c->dt_rank = 0;
  if (c->d_inner % c->head_dim)
    return cfail(l, "d_inner %d is not divisible by head_dim %d", c->d_inner,
                 c->head_dim);
  c->n_heads = c->d_inner / c->head_dim;
  if (heads && heads != c->n_heads)
    return cfail(l, "num_heads %d is not d_inner / head_dim = %d / %d = %d",
                 heads, c->d_inner, c->head_dim, c->n_heads);
  if (c->n_heads % c->ngroups)
    return cfail(l, "the %d heads cannot be split into %d groups (ngroups)",
                 c->n_heads, c->ngroups);
  return true;
}

/* Parts of a state-spaces config that would add layers that are not
 * Mamba mixers: the executor runs pure Mamba models only. */
static bool check_pure_mamba(const Loader *l, const json_t *root) {
  const json_t *mlp = json_object_get(root, "d_intermediate");
  if (json_is_integer(mlp) && json_integer_value(mlp) != 0)
    return cfail(l, "d_intermediate %lld: MLP layers are not supported",
                 (long long)json_integer_value(mlp));
  const json_t *attn = json_object_get(root, "attn_layer_idx");
  if (json_is_array(attn) && json_array_size(attn) > 0)
    return cfail(l, "attn_layer_idx: attention layers are not supported");
  return true;
}

/* 1 if NAME is V1, 2 if it is V2, else 0 (NULL too): the Mamba version a
 * config names, each format with its own spelling. */
static int version_named(const char *name, const char *v1, const char *v2) {
  if (!name)
    return 0;
  return strcmp(name, v1) == 0 ? 1 : strcmp(name, v2) == 0 ? 2 : 0;
}

static bool load_state_spaces(const Loader *l, const json_t *root,
                              ModelConfig *c) {
  const json_t *ssm = json_object_get(root, "ssm_cfg");
  if (ssm && !json_is_null(ssm) && !json_is_object(ssm))
    return cfail(l, "\"ssm_cfg\" must be an object");
  int version = 1;
  const json_t *layer = ssm ? json_object_get(ssm, "layer") : NULL;
  if (layer &&
      !(version = version_named(json_string_value(layer), "Mamba1", "Mamba2")))
    return cfail(l, "ssm_cfg.layer must be \"Mamba1\" or \"Mamba2\"");
  set_defaults(c, version);
  int pad = 0;
  if (!need_int(l, root, "d_model", &c->d_model) ||
      !need_int(l, root, "n_layer", &c->n_layer) ||
      !need_int(l, root, "vocab_size", &c->vocab) ||
      !get_int(l, root, "pad_vocab_size_multiple", &pad) ||
      !check_pure_mamba(l, root))
    return false;
  if (ssm && json_is_object(ssm)) {
    if (!get_int(l, ssm, "d_state", &c->d_state) ||
        !get_int(l, ssm, "d_conv", &c->d_conv) ||
        !get_int(l, ssm, "expand", &c->expand))
      return false;
    if (version == 1 && !get_dt_rank(l, ssm, "dt_rank", &c->dt_rank))
      return false;
    int d_ssm = 0;
    if (version == 2 && (!get_int(l, ssm, "headdim", &c->head_dim) ||
                         !get_int(l, ssm, "ngroups", &c->ngroups) ||
                         !get_int(l, ssm, "d_ssm", &d_ssm)))
      return false;
    long long d_inner = (long long)c->expand * c->d_model;
    if (d_ssm && d_ssm != d_inner)
      return cfail(l,
                   "ssm_cfg.d_ssm %d differs from d_inner %lld: a partial "
                   "SSM is not supported",
                   d_ssm, d_inner);
  }
  return finish(l, c, 0, 0, pad);
}

static bool load_hugging_face(const Loader *l, const json_t *root,
                              ModelConfig *c) {
  const char *type = json_string_value(json_object_get(root, "model_type"));
  int version = version_named(type, "mamba", "mamba2");
  if (!version)
    return cfail(l, "model_type must be \"mamba\" or \"mamba2\"");
  set_defaults(c, version);
  int inner = 0, heads = 0, pad = 0;
  if (!need_int(l, root, "hidden_size", &c->d_model) ||
      !need_int(l, root, "num_hidden_layers", &c->n_layer) ||
      !need_int(l, root, "vocab_size", &c->vocab) ||
      !get_int(l, root, "pad_vocab_size_multiple", &pad) ||
      !get_int(l, root, "state_size", &c->d_state) ||
      !get_int(l, root, "expand", &c->expand) ||
      !get_int(l, root, "conv_kernel", &c->d_conv) ||
      !get_int(l, root, "intermediate_size", &inner))
    return false;
  if (version == 1 && !get_dt_rank(l, root, "time_step_rank", &c->dt_rank))
    return false;
  if (version == 2 && (!get_int(l, root, "head_dim", &c->head_dim) ||
                       !get_int(l, root, "num_heads", &heads) ||
                       !get_int(l, root, "n_groups", &c->ngroups)))
    return false;
  return finish(l, c, inner, heads, pad);
}

static bool parse_config(const char *path, const char *text, size_t len,
                         void *cfg, Diag *d) {
  return model_config_parse(path, text, len, cfg, d);
}

bool model_config_load(const char *path, ModelConfig *cfg, Diag *d) {
  return load_input(path, parse_config, cfg, d);
}

bool model_config_parse(const char *path, const char *text, size_t len,
                        ModelConfig *cfg, Diag *d) {
  Loader l = {path, d};
  json_error_t err;
  char *clean = json_from_python(text, len); /* as net/config.c reads it */
  json_t *root = json_loadb(clean, len, JSON_REJECT_DUPLICATES, &err);
  free(clean);
  if (!root) {
    diag_error(d, path, (Loc){err.line, err.column}, "%s", err.text);
    return false;
  }
  ModelConfig c = {0};
  bool ok;
  if (!json_is_object(root))
    ok = cfail(&l, "a model config must be a JSON object");
  else if (json_object_get(root, "model_type"))
    ok = load_hugging_face(&l, root, &c);
  else if (json_object_get(root, "d_model"))
    ok = load_state_spaces(&l, root, &c);
  else
    ok = cfail(&l, "not a Mamba config: expected \"d_model\" (state-spaces "
                   "form) or \"model_type\" (Hugging Face form)");
  json_decref(root);
  if (ok)
    *cfg = c;
  return ok;
}

void model_config_from_preset(const Preset *p, ModelConfig *cfg) {
  *cfg = (ModelConfig){.version = p->version};
  double v;
#define X(id, field, alias)                                                 \
  if (sizes_value(&p->sizes, #field, &v))                                   \
    cfg->field = (int)v;
  MODEL_PARAMS(X)
#undef X
}

int model_config_settings(const ModelConfig *cfg, Setting *out) {
  int n = 0;
#define X(id, field, alias)                                                 \
  if (cfg->field)                                                           \
    out[n++] = (Setting){#field, cfg->field};
  MODEL_PARAMS(X)
#undef X
  return n;
}

char *model_config_text(const ModelConfig *cfg) {
  json_t *ssm = json_pack(
      "{s:s, s:i, s:i, s:i}", "layer", cfg->version == 2 ? "Mamba2" : "Mamba1",
      "d_state", cfg->d_state, "d_conv", cfg->d_conv, "expand", cfg->expand);
  if (cfg->version == 2) {
    json_object_set_new(ssm, "headdim", json_integer(cfg->head_dim));
    json_object_set_new(ssm, "ngroups", json_integer(cfg->ngroups));
  } else {
    json_object_set_new(ssm, "dt_rank", json_integer(cfg->dt_rank));
  }
  /* The vocabulary is written already padded, with a multiple of 1, so
   * that any reader (ours or mamba_ssm, whose default multiple is 8) gets
   * exactly this size. */
  json_t *root = json_pack("{s:i, s:i, s:i, s:o, s:i}", "d_model", cfg->d_model,
                           "n_layer", cfg->n_layer, "vocab_size", cfg->vocab,
                           "ssm_cfg", ssm, "pad_vocab_size_multiple", 1);
  char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  Buf b = {0};
  buf_printf(&b, "%s\n", s);
  free(s);
  return b.s;
}

bool model_config_save(const ModelConfig *cfg, const char *path, Diag *d) {
  char *text = model_config_text(cfg);
  bool ok = write_file_atomic(path, text, strlen(text));
  if (!ok)
    diag_error(d, path, (Loc){0, 0}, "cannot write: %s", strerror(errno));
  free(text);
  return ok;
}
