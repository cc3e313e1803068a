/* config.c — a Hugging Face config.json as a Net.
 *
 * Each model type is a row of MODEL_TYPES: a function that reads its
 * sizes and layer schedule with the field names the Transformers library
 * gives that type (docs/models.md lists every field). What is common —
 * attention, an MLP, a mixture of experts, the Mamba mixers — is read by
 * one function each, given the names the type spells its fields with.
 *
 * A schedule comes in several spellings, all read: a pattern string
 * (hybrid_override_pattern), per-layer lists (layers_block_type,
 * layer_types), periods and offsets (attn_layer_period/offset,
 * expert_layer_period/offset, full_attention_interval,
 * decoder_sparse_step, moe_layer_freq), index lists (attn_layer_idx,
 * mlp_only_layers) and first_k_dense_replace. A multimodal config's
 * language model is its `text_config`. */
#include "net.h"

#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reading of one config. */
typedef struct Cfg {
  const json_t *root; /* the language model's fields (text_config) */
  const json_t *outer; /* the file's top level */
  const char *path;
  Net *net;
  Diag *d;
  const char *read[160]; /* every field looked up */
  int nread;
} Cfg;

#define FAIL(...) diag_fail(c->d, c->path, (Loc){0, 0}, __VA_ARGS__)

static void note(Cfg *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(Cfg *c, const char *fmt, ...) {
  Net *n = c->net;
  if (n->nnotes == NET_MAX_NOTES)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(n->notes[n->nnotes++], sizeof n->notes[0], fmt, ap);
  va_end(ap);
}

/* Field KEY of the language model, or of the file when the language
 * model's fields do not have it; remembered as read. */
static const json_t *field(Cfg *c, const char *key) {
  if (c->nread < (int)(sizeof c->read / sizeof c->read[0]))
    c->read[c->nread++] = key;
  const json_t *v = json_object_get(c->root, key);
  if (!v && c->outer != c->root)
    v = json_object_get(c->outer, key);
  return v && !json_is_null(v) ? v : NULL;
}

/* An integer field, *OUT unchanged when absent. False (the field named)
 * when it is present but no positive integer. */
static bool get_int(Cfg *c, const char *key, long *out) {
  const json_t *v = field(c, key);
  if (!v)
    return true;
  double x = json_is_integer(v) ? (double)json_integer_value(v)
             : json_is_real(v)  ? json_real_value(v)
                                : NAN;
  if (!(x >= 0) || x != floor(x) || x > 1e12)
    return FAIL("\"%s\": expected a non-negative integer", key);
  *out = (long)x;
  return true;
}

/* The first of KEYS present, as get_int; false naming them all when none
 * is and the size is needed. */
static bool need_int(Cfg *c, const char *const *keys, long *out) {
  int found = -1;
  for (int i = 0; keys[i]; i++) { /* every spelling read: none may differ */
    long v = -1;
    if (!get_int(c, keys[i], &v))
      return false;
    if (v == 0)
      return FAIL("\"%s\": must be positive", keys[i]);
    if (v > 0 && found >= 0 && v != *out)
      return FAIL("\"%s\" (%ld) and \"%s\" (%ld) give one size twice, "
                  "differently", keys[found], *out, keys[i], v);
    if (v > 0 && found < 0) {
      found = i;
      *out = v;
    }
  }
  if (found >= 0)
    return true;
  if (keys[1])
    return FAIL("missing \"%s\" (or \"%s\"): the model's size", keys[0],
                keys[1]);
  return FAIL("missing \"%s\": the model's size", keys[0]);
}
#define NEED(out, ...) need_int(c, (const char *const[]){__VA_ARGS__, NULL}, out)

static bool opt_int(Cfg *c, const char *key, long dflt, long *out) {
  *out = -1;
  if (!get_int(c, key, out))
    return false;
  if (*out < 0)
    *out = dflt;
  return true;
}

static double get_real(Cfg *c, const char *key, double dflt) {
  const json_t *v = field(c, key);
  return json_is_number(v) ? json_number_value(v) : dflt;
}

static bool get_bool(Cfg *c, const char *key, bool dflt) {
  const json_t *v = field(c, key);
  return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static const char *get_string(Cfg *c, const char *key) {
  const json_t *v = field(c, key);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ---- blocks ---- */

static void set_size(Block *b, const char *name, double v) {
  int i = 0;
  while (i < b->nsizes && strcmp(b->names[i], name) != 0)
    i++;
  if (i == NET_MAX_SIZES)
    return; /* cannot happen: a block has at most a dozen sizes */
  if (i == b->nsizes) {
    snprintf(b->names[i], sizeof b->names[0], "%s", name);
    b->nsizes++;
  }
  b->values[i] = v;
}

static bool same_block(const Block *a, const Block *b) {
  if (a->kind != b->kind || a->nsizes != b->nsizes ||
      a->window != b->window || strcmp(a->label, b->label) != 0 ||
      strcmp(a->not_run, b->not_run) != 0)
    return false;
  for (int i = 0; i < a->nsizes; i++)
    if (strcmp(a->names[i], b->names[i]) != 0 || a->values[i] != b->values[i])
      return false;
  return true;
}

/* Add one use of block B to layer LAYER (-1: the embedding or the head),
 * as a new distinct block or another use of an equal one; its index, or
 * -1 when there are too many. SHARED: one set of weights for every use. */
static int add_block(Cfg *c, const Block *b, int layer, bool shared) {
  Net *n = c->net;
  int i = 0;
  while (i < n->nblocks && !same_block(&n->blocks[i], b))
    i++;
  if (i == n->nblocks) {
    if (n->nblocks == NET_MAX_BLOCKS) {
      (void)FAIL("more than %d distinct blocks", NET_MAX_BLOCKS);
      return -1;
    }
    n->blocks[n->nblocks] = *b;
    n->blocks[n->nblocks].uses = 0;
    n->blocks[n->nblocks].copies = 0;
    n->nblocks++;
  }
  Block *nb = &n->blocks[i];
  nb->uses++;
  if (!shared || nb->copies == 0)
    nb->copies++;
  if (layer >= 0) {
    if (n->nlayer[layer] == NET_LAYER_BLOCKS) {
      (void)FAIL("layer %d has more than %d blocks", layer,
                 NET_LAYER_BLOCKS);
      return -1;
    }
    n->layer[layer][n->nlayer[layer]++] = (unsigned char)i;
  }
  return i;
}

static Block new_block(BlockKind k, long d_model, double eps) {
  Block b = {.kind = k};
  snprintf(b.label, sizeof b.label, "%s", block_kind_name(k));
  set_size(&b, "d_model", (double)d_model);
  if (k != BK_EMBED)
    set_size(&b, "eps", eps);
  return b;
}

/* How a model type spells the fields of one block kind. */
typedef struct AttnNames {
  const char *heads, *kv_heads, *head_dim;
} AttnNames;

static const AttnNames attn_std = {"num_attention_heads",
                                   "num_key_value_heads", "head_dim"};

static bool attention(Cfg *c, const AttnNames *nm, long d_model, double eps,
                      long window, Block *b) {
  long heads = 0, kv = -1, hd = -1;
  if (!NEED(&heads, nm->heads) || !opt_int(c, nm->kv_heads, heads, &kv) ||
      !opt_int(c, nm->head_dim, 0, &hd))
    return false;
  if (hd <= 0 && strcmp(nm->head_dim, "attention_head_dim") != 0 &&
      !opt_int(c, "attention_head_dim", 0, &hd)) /* Nemotron-H's spelling */
    return false;
  if (hd <= 0) {
    if (d_model % heads)
      return FAIL("\"%s\" (%ld) does not divide the model width (%ld): "
                  "give \"%s\"", nm->heads, heads, d_model, nm->head_dim);
    hd = d_model / heads;
  }
  if (kv < 1 || heads % kv)
    return FAIL("\"%s\" (%ld) must divide \"%s\" (%ld)", nm->kv_heads, kv,
                nm->heads, heads);
  if (hd % 2)
    return FAIL("\"%s\" (%ld): rotary embeddings need an even head "
                "dimension", nm->head_dim, hd);
  *b = new_block(BK_ATTN, d_model, eps);
  set_size(b, "n_heads", (double)heads);
  set_size(b, "n_kv_heads", (double)kv);
  set_size(b, "head_dim", (double)hd);
  if (window > 0) {
    b->window = window;
    set_size(b, "window", (double)window);
    snprintf(b->label, sizeof b->label, "attention (window %ld)", window);
  }
  return true;
}

static Block mlp_block(BlockKind k, long d_model, double eps, long d_ff,
                       const char *label) {
  Block b = new_block(k, d_model, eps);
  set_size(&b, "d_ff", (double)d_ff);
  if (label)
    snprintf(b.label, sizeof b.label, "%s", label);
  return b;
}

static Block linear_block(long d_in, long d_out, const char *label) {
  Block b = {.kind = BK_LINEAR};
  snprintf(b.label, sizeof b.label, "%s", label);
  set_size(&b, "d_in", (double)d_in);
  set_size(&b, "d_out", (double)d_out);
  return b;
}

static Block moe_block(long d_model, double eps, long experts, long top_k,
                       long d_ff) {
  Block b = new_block(BK_MOE, d_model, eps);
  set_size(&b, "n_experts", (double)experts);
  set_size(&b, "top_k", (double)top_k);
  set_size(&b, "d_ff_expert", (double)d_ff);
  b.experts = (int)experts;
  b.top_k = (int)top_k;
  return b;
}

/* ---- the parts every model has ---- */

typedef struct Common {
  long d_model, layers, vocab;
  double eps;
} Common;

static bool common(Cfg *c, Common *k, const char *eps_key, double eps) {
  if (!NEED(&k->d_model, "hidden_size", "d_model") ||
      !NEED(&k->layers, "num_hidden_layers", "n_layer") ||
      !NEED(&k->vocab, "vocab_size"))
    return false;
  if (k->layers > NET_MAX_LAYERS)
    return FAIL("\"num_hidden_layers\": %ld layers (at most %d)", k->layers,
                NET_MAX_LAYERS);
  long pad = 0;
  if (!opt_int(c, "pad_vocab_size_multiple", 0, &pad))
    return false;
  if (pad > 1) /* the table is padded so (Mamba's) */
    k->vocab = (k->vocab + pad - 1) / pad * pad;
  k->eps = get_real(c, eps_key, eps);
  c->net->rope_theta = get_real(c, "rope_theta", 10000);
  c->net->nlayers = (int)k->layers;
  return true;
}

/* The embedding before the layers and the head after them. */
static bool ends(Cfg *c, const Common *k, bool tied_default) {
  Net *n = c->net;
  Block e = new_block(BK_EMBED, k->d_model, 0);
  set_size(&e, "vocab", (double)k->vocab);
  Block h = new_block(BK_HEAD, k->d_model, k->eps);
  set_size(&h, "vocab", (double)k->vocab);
  n->tied = get_bool(c, "tie_word_embeddings", tied_default);
  return (n->embed = add_block(c, &e, -1, false)) >= 0 &&
         (n->head = add_block(c, &h, -1, false)) >= 0;
}

/* A MoE's experts: routed ones with their router, and the shared ones
 * (a gated MLP of SHARED_FF, 0: none) beside them, on the same normed
 * tokens, their outputs summed. */
static bool add_moe(Cfg *c, int layer, const Common *k, long experts,
                    long top_k, long d_ff, long shared_ff) {
  if (top_k < 1 || top_k > experts)
    return FAIL("experts per token (%ld) must be between 1 and the "
                "experts (%ld)", top_k, experts);
  Block m = moe_block(k->d_model, k->eps, experts, top_k, d_ff);
  if (shared_ff > 0) { /* beside the routed ones, on the same tokens */
    m.kind = BK_MOE_SHARED;
    snprintf(m.label, sizeof m.label, "%s", block_kind_name(m.kind));
    set_size(&m, "d_ff_shared", (double)shared_ff);
  }
  return add_block(c, &m, layer, false) >= 0;
}

/* A dense layer's gated MLP of width FF. */
static bool add_mlp(Cfg *c, int layer, const Common *k, long ff) {
  Block m = mlp_block(BK_MLP, k->d_model, k->eps, ff, NULL);
  return add_block(c, &m, layer, false) >= 0;
}

/* ---- schedules ---- */

/* Entry I of the per-layer list KEY (strings), or NULL. */
static const char *list_at(Cfg *c, const char *key, int i) {
  const json_t *v = field(c, key);
  const json_t *e = json_is_array(v) ? json_array_get(v, (size_t)i) : NULL;
  return json_is_string(e) ? json_string_value(e) : NULL;
}

static bool list_check(Cfg *c, const char *key, long layers) {
  const json_t *v = field(c, key);
  if (!v)
    return true;
  if (!json_is_array(v) || (long)json_array_size(v) != layers)
    return FAIL("\"%s\": expected a list of %ld layer types (one per "
                "layer)", key, layers);
  for (size_t i = 0; i < json_array_size(v); i++)
    if (!json_is_string(json_array_get(v, i)))
      return FAIL("\"%s\"[%zu]: expected a string", key, i);
  return true;
}

/* Is I in the integer list KEY? */
static bool in_list(Cfg *c, const char *key, long i) {
  const json_t *v = field(c, key);
  size_t j;
  const json_t *e;
  json_array_foreach(v, j, e) if (json_is_integer(e) &&
                                  json_integer_value(e) == i) return true;
  return false;
}

/* ---- the model types ---- */

static long sliding_window(Cfg *c) {
  long w = -1;
  if (!get_int(c, "sliding_window", &w))
    return -1;
  return w > 0 ? w : 0;
}

/* llama, mistral, qwen2, qwen3, and the dense layers of the others:
 * attention (with a sliding window on the layers that have one) and a
 * gated MLP. */
static bool transformer_layers(Cfg *c, const Common *k, bool moe,
                               long experts, long top_k, long moe_ff,
                               long shared_ff) {
  long ff = 0, window = sliding_window(c);
  if (window < 0 || !NEED(&ff, "intermediate_size"))
    return false;
  bool use_window = get_bool(c, "use_sliding_window", window > 0);
  long max_window = -1, sparse = 1;
  if (!opt_int(c, "max_window_layers", k->layers, &max_window) ||
      !opt_int(c, "decoder_sparse_step", 1, &sparse) ||
      !list_check(c, "layer_types", k->layers))
    return false;
  for (int i = 0; i < k->layers; i++) {
    /* Which layers slide: layer_types where given; else, in Qwen2's
     * reading, those from max_window_layers on; Mistral's all. */
    const char *lt = list_at(c, "layer_types", i);
    bool slides = lt ? strcmp(lt, "sliding_attention") == 0
                     : use_window && i >= max_window;
    if (!strcmp(c->net->model_type, "mistral") ||
        !strcmp(c->net->model_type, "mixtral"))
      slides = window > 0;
    Block a;
    if (!attention(c, &attn_std, k->d_model, k->eps, slides ? window : 0,
                   &a) ||
        add_block(c, &a, i, false) < 0)
      return false;
    bool sparse_here = moe && sparse > 0 && (i + 1) % sparse == 0 &&
                       !in_list(c, "mlp_only_layers", i);
    if (sparse_here) {
      if (!add_moe(c, i, k, experts, top_k, moe_ff, shared_ff))
        return false;
    } else {
      if (!add_mlp(c, i, k, ff))
        return false;
    }
  }
  return true;
}

static bool type_dense(Cfg *c) {
  Common k;
  return common(c, &k, "rms_norm_eps", 1e-6) &&
         transformer_layers(c, &k, false, 0, 0, 0, 0) &&
         ends(c, &k, false);
}

static bool type_qwen3_moe(Cfg *c) {
  Common k;
  long e = 0, top = 0, ff = 0;
  return common(c, &k, "rms_norm_eps", 1e-6) &&
         NEED(&e, "num_experts") && NEED(&top, "num_experts_per_tok") &&
         NEED(&ff, "moe_intermediate_size") &&
         transformer_layers(c, &k, true, e, top, ff, 0) &&
         ends(c, &k, false);
}

static bool type_mixtral(Cfg *c) {
  Common k;
  long e = 0, top = 0, ff = 0;
  if (!common(c, &k, "rms_norm_eps", 1e-5) ||
      !NEED(&e, "num_local_experts") || !NEED(&top, "num_experts_per_tok") ||
      !NEED(&ff, "intermediate_size"))
    return false;
  long window = sliding_window(c);
  for (int i = 0; i < k.layers; i++) {
    Block a;
    if (!attention(c, &attn_std, k.d_model, k.eps, window, &a) ||
        add_block(c, &a, i, false) < 0 || !add_moe(c, i, &k, e, top, ff, 0))
      return false;
  }
  return ends(c, &k, false);
}

static bool type_deepseek_v3(Cfg *c) {
  Common k;
  long heads = 0, qr = 0, kvr = 0, nope = 0, rope = 0, vd = 0, ff = 0;
  long e = 0, top = 0, mff = 0, shared = 0, dense = 0, freq = 1;
  if (!common(c, &k, "rms_norm_eps", 1e-6) ||
      !NEED(&heads, "num_attention_heads") || !NEED(&qr, "q_lora_rank") ||
      !NEED(&kvr, "kv_lora_rank") || !NEED(&nope, "qk_nope_head_dim") ||
      !NEED(&rope, "qk_rope_head_dim") || !NEED(&vd, "v_head_dim") ||
      !NEED(&ff, "intermediate_size") || !NEED(&e, "n_routed_experts") ||
      !NEED(&top, "num_experts_per_tok") ||
      !NEED(&mff, "moe_intermediate_size") ||
      !opt_int(c, "n_shared_experts", 0, &shared) ||
      !opt_int(c, "first_k_dense_replace", 0, &dense) ||
      !opt_int(c, "moe_layer_freq", 1, &freq))
    return false;
  if (rope % 2)
    return FAIL("\"qk_rope_head_dim\" (%ld): rotary embeddings need an "
                "even width", rope);
  Block a = new_block(BK_MLA, k.d_model, k.eps);
  set_size(&a, "n_heads", (double)heads);
  set_size(&a, "q_lora_rank", (double)qr);
  set_size(&a, "kv_lora_rank", (double)kvr);
  set_size(&a, "qk_nope_head_dim", (double)nope);
  set_size(&a, "qk_rope_head_dim", (double)rope);
  set_size(&a, "v_head_dim", (double)vd);
  for (int i = 0; i < k.layers; i++) {
    if (add_block(c, &a, i, false) < 0)
      return false;
    if (i >= dense && freq > 0 && i % freq == 0) {
      if (!add_moe(c, i, &k, e, top, mff, shared * mff))
        return false;
    } else {
      if (!add_mlp(c, i, &k, ff))
        return false;
    }
  }
  return ends(c, &k, false);
}

/* Mamba-1's sizes under a type's names. */
static bool mamba1_block(Cfg *c, long d_model, double eps, const char *state,
                         const char *conv, const char *expand,
                         const char *dt_rank, Block *b) {
  long n = 16, k = 4, x = 2, r = 0;
  if (!opt_int(c, state, 16, &n) || !opt_int(c, conv, 4, &k) ||
      !opt_int(c, expand, 2, &x))
    return false;
  const json_t *v = field(c, dt_rank);
  if (json_is_string(v) && strcmp(json_string_value(v), "auto") != 0)
    return FAIL("\"%s\": expected an integer or \"auto\"", dt_rank);
  if (!json_is_string(v) && !get_int(c, dt_rank, &r))
    return false;
  if (r <= 0)
    r = (d_model + 15) / 16; /* "auto": ceil(d_model / 16) */
  long inner = -1;
  if (!opt_int(c, "intermediate_size", x * d_model, &inner))
    return false;
  if (!strcmp(c->net->model_type, "jamba"))
    inner = x * d_model; /* Jamba's intermediate_size is its MLP's */
  *b = new_block(BK_MAMBA1, d_model, eps);
  set_size(b, "d_inner", (double)inner);
  set_size(b, "d_state", (double)n);
  set_size(b, "d_conv", (double)k);
  set_size(b, "dt_rank", (double)r);
  return true;
}

/* Mamba-2's sizes under a type's names (NULL: not in that type). */
typedef struct Mamba2Names {
  const char *heads, *head_dim, *groups, *state, *conv, *expand, *inner;
} Mamba2Names;

static bool mamba2_block(Cfg *c, const Mamba2Names *nm, long d_model,
                         double eps, Block *b) {
  long x = 2, inner = -1, heads = -1, hd = 64, g = 1, n = 128, k = 4;
  if (!opt_int(c, nm->expand, 2, &x) ||
      (nm->inner && !opt_int(c, nm->inner, x * d_model, &inner)) ||
      !opt_int(c, nm->head_dim, 64, &hd) || !opt_int(c, nm->groups, 1, &g) ||
      !opt_int(c, nm->state, 128, &n) || !opt_int(c, nm->conv, 4, &k))
    return false;
  if (x < 1 || hd < 1 || n < 1 || k < 1)
    return FAIL("\"%s\", \"%s\", \"%s\" and \"%s\" must be positive",
                nm->expand, nm->head_dim, nm->state, nm->conv);
  if (inner <= 0)
    inner = x * d_model;
  if (!opt_int(c, nm->heads, inner / hd, &heads))
    return false;
  if (heads < 1 || g < 1 || heads % g)
    return FAIL("\"%s\" (%ld) must divide \"%s\" (%ld)", nm->groups, g,
                nm->heads, heads);
  *b = new_block(BK_MAMBA2, d_model, eps);
  set_size(b, "n_heads", (double)heads);
  set_size(b, "head_dim", (double)hd);
  set_size(b, "ngroups", (double)g);
  set_size(b, "d_state", (double)n);
  set_size(b, "d_conv", (double)k);
  return true;
}

static bool type_mamba(Cfg *c) {
  Common k;
  Block b;
  if (!common(c, &k, "layer_norm_epsilon", 1e-5) ||
      !mamba1_block(c, k.d_model, k.eps, "state_size", "conv_kernel",
                    "expand", "time_step_rank", &b))
    return false;
  for (int i = 0; i < k.layers; i++)
    if (add_block(c, &b, i, false) < 0)
      return false;
  return ends(c, &k, true);
}

static const Mamba2Names mamba2_hf = {"num_heads", "head_dim", "n_groups",
                                      "state_size", "conv_kernel", "expand",
                                      "intermediate_size"};

static bool type_mamba2(Cfg *c) {
  Common k;
  Block b;
  field(c, "time_step_rank"); /* Mamba-2 has no dt projection to size */
  if (!common(c, &k, "layer_norm_epsilon", 1e-5) ||
      !mamba2_block(c, &mamba2_hf, k.d_model, k.eps, &b))
    return false;
  for (int i = 0; i < k.layers; i++)
    if (add_block(c, &b, i, false) < 0)
      return false;
  return ends(c, &k, true);
}

static bool type_jamba(Cfg *c) {
  Common k;
  long ff = 0, e = 1, top = 1, ap = 8, ao = 4, ep = 2, eo = 1;
  Block mamba;
  if (!common(c, &k, "rms_norm_eps", 1e-6) ||
      !NEED(&ff, "intermediate_size") ||
      !opt_int(c, "num_experts", 16, &e) ||
      !opt_int(c, "num_experts_per_tok", 2, &top) ||
      !opt_int(c, "attn_layer_period", 8, &ap) ||
      !opt_int(c, "attn_layer_offset", 4, &ao) ||
      !opt_int(c, "expert_layer_period", 2, &ep) ||
      !opt_int(c, "expert_layer_offset", 1, &eo) ||
      !mamba1_block(c, k.d_model, k.eps, "mamba_d_state", "mamba_d_conv",
                    "mamba_expand", "mamba_dt_rank", &mamba))
    return false;
  if (ap < 1 || ep < 1)
    return FAIL("\"attn_layer_period\" and \"expert_layer_period\" must be "
                "positive");
  for (int i = 0; i < k.layers; i++) {
    Block a;
    if (i % ap == ao) {
      if (!attention(c, &attn_std, k.d_model, k.eps, 0, &a) ||
          add_block(c, &a, i, false) < 0)
        return false;
    } else if (add_block(c, &mamba, i, false) < 0)
      return false;
    if (e > 1 && i % ep == eo) {
      if (!add_moe(c, i, &k, e, top, ff, 0))
        return false;
    } else {
      if (!add_mlp(c, i, &k, ff))
        return false;
    }
  }
  return ends(c, &k, false);
}

/* Nemotron-H: one block per character of hybrid_override_pattern: M a
 * Mamba-2 mixer, * attention, - a plain MLP, E a mixture of experts. */
static bool type_nemotron_h(Cfg *c) {
  Common k;
  long ff = 0;
  const Mamba2Names nm = {"mamba_num_heads", "mamba_head_dim", "n_groups",
                          "ssm_state_size", "conv_kernel", "expand", NULL};
  const AttnNames an = {"num_attention_heads", "num_key_value_heads",
                        "head_dim"};
  Block mamba;
  field(c, "time_step_rank"); /* Mamba-2 has no dt projection to size */
  if (!common(c, &k, "layer_norm_epsilon", 1e-5) ||
      !mamba2_block(c, &nm, k.d_model, k.eps, &mamba))
    return false;
  const char *pat = get_string(c, "hybrid_override_pattern");
  if (!pat)
    return FAIL("missing \"hybrid_override_pattern\": the layer schedule");
  if ((long)strlen(pat) != k.layers)
    return FAIL("\"hybrid_override_pattern\" has %zu layers, "
                "\"num_hidden_layers\" %ld", strlen(pat), k.layers);
  for (int i = 0; i < k.layers; i++) {
    Block b;
    switch (pat[i]) {
    case 'M':
      b = mamba;
      break;
    case '*':
      if (!attention(c, &an, k.d_model, k.eps, 0, &b))
        return false;
      break;
    case '-':
      if (!NEED(&ff, "intermediate_size"))
        return false;
      b = mlp_block(BK_MLP_PLAIN, k.d_model, k.eps, ff, NULL);
      break;
    case 'E': {
      long e = 0, top = 0, mff = 0, sff = 0;
      if (!NEED(&e, "n_routed_experts", "num_experts") ||
          !NEED(&top, "num_experts_per_tok") ||
          !NEED(&mff, "moe_intermediate_size") ||
          !opt_int(c, "moe_shared_expert_intermediate_size", 0, &sff) ||
          !add_moe(c, i, &k, e, top, mff, sff))
        return false;
      continue;
    }
    default:
      return FAIL("\"hybrid_override_pattern\"[%d]: '%c' is no layer type "
                  "(expected M, *, - or E)", i, pat[i]);
    }
    if (add_block(c, &b, i, false) < 0)
      return false;
  }
  return ends(c, &k, false);
}

/* Falcon-H1: attention and a Mamba-2 mixer side by side in every layer on
 * the same normed tokens, summed (one block), then a gated MLP. */
static bool type_falcon_h1(Cfg *c) {
  Common k;
  long ff = 0;
  const Mamba2Names nm = {"mamba_n_heads", "mamba_d_head", "mamba_n_groups",
                          "mamba_d_state", "mamba_d_conv", "mamba_expand",
                          "mamba_d_ssm"};
  Block a, m;
  if (!common(c, &k, "rms_norm_eps", 1e-5) ||
      !NEED(&ff, "intermediate_size") ||
      !attention(c, &attn_std, k.d_model, k.eps, 0, &a) ||
      !mamba2_block(c, &nm, k.d_model, k.eps, &m))
    return false;
  /* One block: attention's sizes, and Mamba-2's under names of its own. */
  Block p = a;
  p.kind = BK_PARALLEL;
  snprintf(p.label, sizeof p.label, "%s", block_kind_name(p.kind));
  for (int i = 0; i < m.nsizes; i++) {
    const char *n = m.names[i];
    if (!strcmp(n, "n_heads"))
      n = "ssm_heads";
    else if (!strcmp(n, "head_dim"))
      n = "ssm_head_dim";
    else if (!strcmp(n, "d_model") || !strcmp(n, "eps"))
      continue;
    set_size(&p, n, m.values[i]);
  }
  Block mlp = mlp_block(BK_MLP, k.d_model, k.eps, ff, NULL);
  for (int i = 0; i < k.layers; i++)
    if (add_block(c, &p, i, false) < 0 || add_block(c, &mlp, i, false) < 0)
      return false;
  return ends(c, &k, false);
}

/* Qwen3-Next (and Qwen3.5's text model): Gated DeltaNet layers with full
 * attention every full_attention_interval-th (or as layer_types says),
 * each followed by a mixture of experts with a shared expert. */
static bool type_qwen3_next(Cfg *c) {
  Common k;
  long kh = 0, vh = 0, kd = 0, vd = 0, conv = 4, interval = 4;
  long e = 0, top = 0, mff = 0, sff = 0, ff = 0, sparse = 1;
  if (!common(c, &k, "rms_norm_eps", 1e-6) ||
      !NEED(&kh, "linear_num_key_heads") ||
      !NEED(&vh, "linear_num_value_heads") ||
      !NEED(&kd, "linear_key_head_dim") ||
      !NEED(&vd, "linear_value_head_dim") ||
      !opt_int(c, "linear_conv_kernel_dim", 4, &conv) ||
      !opt_int(c, "full_attention_interval", 4, &interval) ||
      !opt_int(c, "num_experts", 0, &e) ||
      !opt_int(c, "num_experts_per_tok", 0, &top) ||
      !opt_int(c, "moe_intermediate_size", 0, &mff) ||
      !opt_int(c, "shared_expert_intermediate_size", 0, &sff) ||
      !opt_int(c, "intermediate_size", 0, &ff) ||
      !opt_int(c, "decoder_sparse_step", 1, &sparse) ||
      !list_check(c, "layer_types", k.layers))
    return false;
  if (vh % kh)
    return FAIL("\"linear_num_key_heads\" (%ld) must divide "
                "\"linear_num_value_heads\" (%ld)", kh, vh);
  Block g = new_block(BK_GDN, k.d_model, k.eps);
  set_size(&g, "n_k_heads", (double)kh);
  set_size(&g, "n_v_heads", (double)vh);
  set_size(&g, "k_head_dim", (double)kd);
  set_size(&g, "v_head_dim", (double)vd);
  set_size(&g, "d_conv", (double)conv);
  for (int i = 0; i < k.layers; i++) {
    const char *lt = list_at(c, "layer_types", i);
    bool full = lt ? strcmp(lt, "full_attention") == 0
                   : interval > 0 && (i + 1) % interval == 0;
    Block a;
    if (full && !attention(c, &attn_std, k.d_model, k.eps, 0, &a))
      return false;
    if (full) { /* Qwen3-Next's attention gates its output */
      a.kind = BK_ATTN_GATED;
      snprintf(a.label, sizeof a.label, "%s", block_kind_name(a.kind));
    }
    if (add_block(c, full ? &a : &g, i, false) < 0)
      return false;
    bool sparse_here = e > 0 && sparse > 0 && (i + 1) % sparse == 0 &&
                       !in_list(c, "mlp_only_layers", i);
    if (sparse_here) {
      if (!add_moe(c, i, &k, e, top, mff, sff))
        return false;
    } else {
      if (ff <= 0)
        return FAIL("missing \"intermediate_size\": layer %d is dense", i);
      if (!add_mlp(c, i, &k, ff))
        return false;
    }
  }
  return ends(c, &k, false);
}

/* Granite 4.0 (granitemoehybrid): Mamba-2 or attention per
 * layer_types/layers_block_type, each followed by a mixture of experts
 * with a shared MLP (or the shared MLP alone when there are no experts). */
static bool type_granite(Cfg *c) {
  Common k;
  long e = 0, top = 0, ff = 0, sff = 0;
  const Mamba2Names nm = {"mamba_n_heads", "mamba_d_head", "mamba_n_groups",
                          "mamba_d_state", "mamba_d_conv", "mamba_expand",
                          NULL};
  Block m;
  if (!common(c, &k, "rms_norm_eps", 1e-6) ||
      !opt_int(c, "num_local_experts", 0, &e) ||
      !opt_int(c, "num_experts_per_tok", 0, &top) ||
      !opt_int(c, "intermediate_size", 0, &ff) ||
      !opt_int(c, "shared_intermediate_size", 0, &sff) ||
      !mamba2_block(c, &nm, k.d_model, k.eps, &m))
    return false;
  const char *key = field(c, "layer_types") ? "layer_types"
                                             : "layers_block_type";
  if (!field(c, key))
    return FAIL("missing \"layer_types\" (or \"layers_block_type\"): the "
                "layer schedule");
  if (!list_check(c, key, k.layers))
    return false;
  for (int i = 0; i < k.layers; i++) {
    const char *lt = list_at(c, key, i);
    Block a;
    if (!strcmp(lt, "attention")) {
      if (!attention(c, &attn_std, k.d_model, k.eps, 0, &a) ||
          add_block(c, &a, i, false) < 0)
        return false;
    } else if (!strcmp(lt, "mamba")) {
      if (add_block(c, &m, i, false) < 0)
        return false;
    } else {
      return FAIL("\"%s\"[%d]: \"%s\" is no layer type (expected "
                  "\"mamba\" or \"attention\")", key, i, lt);
    }
    if (e > 0) {
      if (!add_moe(c, i, &k, e, top, ff, sff))
        return false;
    } else if (sff > 0) {
      Block s = mlp_block(BK_MLP, k.d_model, k.eps, sff, NULL);
      if (add_block(c, &s, i, false) < 0)
        return false;
    }
  }
  return ends(c, &k, false);
}

/* Zamba2: a Mamba-2 backbone; the layers layers_block_type marks
 * "hybrid" also run one of num_mem_blocks shared transformer blocks
 * (attention over the hidden state concatenated with the embedding, 2 x
 * d_model wide, then an MLP), alternating, before their Mamba-2 mixer,
 * with a projection of their own back to d_model. */
static bool type_zamba2(Cfg *c) {
  Common k;
  long ff = 0, mem = 1;
  const Mamba2Names nm = {"n_mamba_heads", "mamba_headdim", "mamba_ngroups",
                          "mamba_d_state", "mamba_d_conv", "mamba_expand",
                          NULL};
  const AttnNames an = {"num_attention_heads", "num_key_value_heads",
                        "attention_head_dim"};
  Block m;
  if (!common(c, &k, "rms_norm_eps", 1e-5) ||
      !NEED(&ff, "intermediate_size") ||
      !opt_int(c, "num_mem_blocks", 1, &mem) ||
      !mamba2_block(c, &nm, k.d_model, k.eps, &m) ||
      !list_check(c, "layers_block_type", k.layers))
    return false;
  if (mem < 1)
    return FAIL("\"num_mem_blocks\" must be positive");
  long rank = 0;
  if (!opt_int(c, "adapter_rank", 128, &rank))
    return false;
  bool mlp_adapter = get_bool(c, "use_shared_mlp_adapter", false);
  int hybrid = 0;
  for (int i = 0; i < k.layers; i++) {
    const char *lt = list_at(c, "layers_block_type", i);
    if (lt && !strcmp(lt, "hybrid")) {
      Block a, mlp;
      if (!attention(c, &an, 2 * k.d_model, k.eps, 0, &a))
        return false;
      snprintf(a.label, sizeof a.label, "shared attention %d",
               (int)(hybrid % mem));
      snprintf(a.not_run, sizeof a.not_run, "it reads the hidden state "
               "concatenated with the embeddings");
      mlp = mlp_block(BK_MLP, k.d_model, k.eps, ff, NULL);
      snprintf(mlp.label, sizeof mlp.label, "shared MLP %d",
               (int)(hybrid % mem));
      if (add_block(c, &a, i, true) < 0 || add_block(c, &mlp, i, true) < 0)
        return false;
      if (mlp_adapter) { /* the MLP's LoRA adapter: this use's own */
        Block down = linear_block(k.d_model, rank, "MLP adapter (down)");
        Block up = linear_block(rank, 2 * ff, "MLP adapter (up)");
        if (add_block(c, &down, i, false) < 0 ||
            add_block(c, &up, i, false) < 0)
          return false;
      }
      Block lin = linear_block(k.d_model, k.d_model, "hybrid projection");
      if (add_block(c, &lin, i, false) < 0)
        return false;
      hybrid++;
    } else if (lt && strcmp(lt, "mamba") != 0) {
      return FAIL("\"layers_block_type\"[%d]: \"%s\" is no layer type "
                  "(expected \"mamba\" or \"hybrid\")", i, lt);
    }
    if (add_block(c, &m, i, false) < 0)
      return false;
  }
  return ends(c, &k, true);
}

/* An integer KEY of the object O (a nested section), DFLT when absent. */
static bool sub_int(Cfg *c, const json_t *o, const char *sec, const char *key,
                    long dflt, long *out) {
  const json_t *v = o ? json_object_get(o, key) : NULL;
  *out = dflt;
  if (!v || json_is_null(v))
    return true;
  if (!json_is_integer(v) || json_integer_value(v) <= 0)
    return FAIL("\"%s\".\"%s\": expected a positive integer", sec, key);
  *out = (long)json_integer_value(v);
  return true;
}

/* The state-spaces form (mamba_ssm's MambaConfig: no model_type): Mamba-1
 * or Mamba-2 mixers (ssm_cfg.layer), attention at the layers
 * attn_layer_idx lists (attn_cfg), a gated MLP after each mixer when
 * d_intermediate is positive. */
static bool type_state_spaces(Cfg *c) {
  Common k;
  long layers = 0, d_model = 0, vocab = 0, mlp = 0;
  if (!NEED(&d_model, "d_model") || !NEED(&layers, "n_layer") ||
      !NEED(&vocab, "vocab_size") ||
      !opt_int(c, "d_intermediate", 0, &mlp))
    return false;
  if (layers > NET_MAX_LAYERS)
    return FAIL("\"n_layer\": %ld layers (at most %d)", layers,
                NET_MAX_LAYERS);
  long pad = 0;
  if (!opt_int(c, "pad_vocab_size_multiple", 0, &pad))
    return false;
  k = (Common){d_model, layers,
               pad > 1 ? (vocab + pad - 1) / pad * pad : vocab, 1e-5};
  c->net->nlayers = (int)layers;
  const json_t *ssm = field(c, "ssm_cfg"), *attn = field(c, "attn_cfg");
  const char *layer = ssm ? json_string_value(json_object_get(ssm, "layer"))
                          : NULL;
  bool v2 = layer && !strcmp(layer, "Mamba2");
  if (layer && !v2 && strcmp(layer, "Mamba1") != 0)
    return FAIL("\"ssm_cfg\".\"layer\": '%s' (expected Mamba1 or Mamba2)",
                layer);
  long n, conv, x, hd, g, r, heads, kv, ahd;
  if (!sub_int(c, ssm, "ssm_cfg", "d_state", v2 ? 128 : 16, &n) ||
      !sub_int(c, ssm, "ssm_cfg", "d_conv", 4, &conv) ||
      !sub_int(c, ssm, "ssm_cfg", "expand", 2, &x) ||
      !sub_int(c, ssm, "ssm_cfg", "headdim", 64, &hd) ||
      !sub_int(c, ssm, "ssm_cfg", "ngroups", 1, &g) ||
      !sub_int(c, ssm, "ssm_cfg", "dt_rank", (d_model + 15) / 16, &r) ||
      !sub_int(c, attn, "attn_cfg", "num_heads", 0, &heads) ||
      !sub_int(c, attn, "attn_cfg", "num_heads_kv", heads, &kv) ||
      !sub_int(c, attn, "attn_cfg", "head_dim", heads ? d_model / heads : 0,
               &ahd))
    return false;
  Block mixer = new_block(v2 ? BK_MAMBA2 : BK_MAMBA1, d_model, k.eps);
  if (v2) {
    if ((x * d_model) % hd || ((x * d_model) / hd) % g)
      return FAIL("\"ssm_cfg\": headdim %ld and ngroups %ld do not divide "
                  "d_inner %ld", hd, g, x * d_model);
    set_size(&mixer, "n_heads", (double)(x * d_model / hd));
    set_size(&mixer, "head_dim", (double)hd);
    set_size(&mixer, "ngroups", (double)g);
  } else {
    set_size(&mixer, "d_inner", (double)(x * d_model));
    set_size(&mixer, "dt_rank", (double)r);
  }
  set_size(&mixer, "d_state", (double)n);
  set_size(&mixer, "d_conv", (double)conv);
  for (int i = 0; i < layers; i++) {
    if (in_list(c, "attn_layer_idx", i)) {
      if (heads <= 0 || kv <= 0 || heads % kv || ahd % 2)
        return FAIL("\"attn_cfg\": layer %d is attention: give num_heads "
                    "(and num_heads_kv dividing it, an even head_dim)", i);
      Block a = new_block(BK_ATTN, d_model, k.eps);
      set_size(&a, "n_heads", (double)heads);
      set_size(&a, "n_kv_heads", (double)kv);
      set_size(&a, "head_dim", (double)ahd);
      if (add_block(c, &a, i, false) < 0)
        return false;
    } else if (add_block(c, &mixer, i, false) < 0) {
      return false;
    }
    Block m = mlp_block(BK_MLP, d_model, k.eps, mlp, NULL);
    if (mlp > 0 && add_block(c, &m, i, false) < 0)
      return false;
  }
  if (attn)
    note(c, "\"attn_cfg\": projection biases, its convolution and a "
         "partial rotary width are not modelled");
  return ends(c, &k, get_bool(c, "tie_embeddings", true));
}

/* The model types read: X(name, reader). */
#define MODEL_TYPES(X)                                                      \
  X("llama", type_dense) X("mistral", type_dense) X("qwen2", type_dense)    \
  X("qwen3", type_dense) X("qwen3_moe", type_qwen3_moe)                     \
  X("mixtral", type_mixtral) X("deepseek_v3", type_deepseek_v3)             \
  X("mamba", type_mamba) X("mamba2", type_mamba2) X("jamba", type_jamba)    \
  X("zamba2", type_zamba2) X("nemotron_h", type_nemotron_h)                 \
  X("falcon_h1", type_falcon_h1) X("qwen3_next", type_qwen3_next)           \
  X("qwen3_5_moe_text", type_qwen3_next) X("qwen3_5_text", type_qwen3_next) \
  X("granitemoehybrid", type_granite)

static const struct {
  const char *name;
  bool (*read)(Cfg *);
} types[] = {
#define X(name, fn) {name, fn},
    MODEL_TYPES(X)
#undef X
};
enum { NTYPES = sizeof types / sizeof types[0] };

const char *net_model_types(char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < NTYPES && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
                            types[i].name);
  return buf;
}

/* Fields read and modelled by no reader: one note each, saying what the
 * model assumes instead. */
static const struct {
  const char *key, *why;
} unmodelled[] = {
    {"rope_scaling", "rotary scaling changes no operation count"},
    {"quantization_config", "priced at the architecture's word size"},
    {"num_nextn_predict_layers",
     "the multi-token-prediction layers are not built"},
    {"mtp_num_hidden_layers",
     "the multi-token-prediction layers are not built"},
    {"attention_bias", "biases of the projections are not built"},
    {"mlp_bias", "biases of the MLP are not built"},
    {"qk_norm", "the per-head query and key norms are not built"},
    {"partial_rotary_factor", "RoPE is priced over the whole head"},
    {"n_group", "group-limited routing priced as plain top-k"},
    {"topk_group", "group-limited routing priced as plain top-k"},
    {"routed_scaling_factor", "a scale of the routing weights: no cost"},
    {"norm_topk_prob", "renormalized top-k weights: priced as the softmax"},
    {"scoring_func", "the router priced as a softmax"},
    {"hidden_act", "the activation priced as the block's (SiLU, or "
                   "Nemotron-H's squared ReLU)"},
    {"mlp_hidden_act", "the activation priced as squared ReLU"},
    {"shared_expert_gate", "the shared expert's gate is not built"},
    {"use_shared_attention_adapter",
     "Zamba2's attention adapters are not built"},
    {"attention_multiplier", "a scale (muP): no cost"},
    {"embedding_multiplier", "a scale (muP): no cost"},
    {"residual_multiplier", "a scale (muP): no cost"},
    {"logits_scaling", "a scale (muP): no cost"},
    {"chunk_size", "Mamba-2's chunked scan is priced as its recurrence"},
    {"mamba_chunk_size",
     "Mamba-2's chunked scan is priced as its recurrence"},
    {"mamba_proj_bias", "biases of the projections are not built"},
    {"use_bias", "biases of the projections are not built"},
    {"add_bias_linear", "biases of the projections are not built"},
    {"projectors_bias", "biases of the projections are not built"},
};

/* Fields that change no figure: names, ids, numerics of training,
 * kernels' switches, fields another one restates. */
static const char *const no_figure[] = {
    "architectures", "auto_map", "rms_norm", "residual_in_fp32", "_name_or_path", "transformers_version",
    "torch_dtype", "dtype", "use_cache", "bos_token_id", "eos_token_id",
    "pad_token_id", "initializer_range", "attention_dropout",
    "hidden_dropout", "max_position_embeddings", "rope_theta",
    "router_aux_loss_coef", "output_router_logits", "num_logits_to_keep",
    "time_step_min", "time_step_max", "time_step_floor", "time_step_limit",
    "time_step_scale", "time_step_init_scheme", "residual_in_fp32",
    "rescale_prenorm_residual", "use_mamba_kernels", "pretraining_tp",
    "fused_add_norm", "ep_size", "topk_method",
    "hybrid_layer_ids", "use_long_context", "use_mem_rope", "use_mrope",
    "rms_norm", "norm_before_gate", "mamba_norm_before_gate",
    "mamba_rms_norm", "normalization_function", "mamba_hidden_act",
    "mamba_dt_rank", "model_type", "text_config", "vision_config",
    "use_conv_bias", "mamba_conv_bias", "position_embedding_type",
    "max_window_layers", "sliding_window", "use_sliding_window",
    "num_key_value_heads", /* MLA has no key-value heads to share */
    "rms_norm_eps", "layer_norm_epsilon", "tie_word_embeddings",
};

static bool listed(const char *const *names, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], key))
      return true;
  return false;
}

/* Every field neither read, nor noted, nor known to change no figure:
 * one note naming them, so that nothing is dropped without a word. */
static void note_unread(Cfg *c) {
  Buf b = {0};
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)c->root, key, v) {
    bool known = listed(no_figure, sizeof no_figure / sizeof no_figure[0],
                        key) ||
                 listed(c->read, (size_t)c->nread, key);
    for (size_t i = 0; !known && i < sizeof unmodelled / sizeof unmodelled[0];
         i++)
      known = !strcmp(unmodelled[i].key, key);
    if (!known)
      buf_printf(&b, "%s%s", b.len ? ", " : "", key);
  }
  if (b.len)
    note(c, "fields not read (no block of the model uses them): %s", b.s);
  buf_free(&b);
  /* A convolution the config gives no bias is built with one. */
  const char *conv[] = {"use_conv_bias", "mamba_conv_bias"};
  for (size_t i = 0; i < 2; i++)
    if (json_is_false(json_object_get(c->root, conv[i])))
      note(c, "\"%s\" is false: the convolutions are built with a bias",
           conv[i]);
  const json_t *pe = json_object_get(c->root, "position_embedding_type");
  if (json_is_string(pe) && strcmp(json_string_value(pe), "rope") != 0)
    note(c, "\"position_embedding_type\" is '%s': attention is priced with "
         "RoPE all the same", json_string_value(pe));
}

static void note_unmodelled(Cfg *c) {
  for (size_t i = 0; i < sizeof unmodelled / sizeof unmodelled[0]; i++) {
    const json_t *v = json_object_get(c->root, unmodelled[i].key);
    if (!v || json_is_null(v) || json_is_false(v))
      continue;
    if (json_is_string(v) && ((!strcmp(unmodelled[i].key, "hidden_act") &&
                               !strcmp(json_string_value(v), "silu")) ||
                              (!strcmp(unmodelled[i].key, "mlp_hidden_act") &&
                               !strcmp(json_string_value(v), "relu2"))))
      continue; /* the activation the block is built with */
    note(c, "\"%s\" is not modelled: %s", unmodelled[i].key,
         unmodelled[i].why);
  }
}

bool net_config_parse(const char *path, const char *text, size_t len,
                      Net *net, Diag *d) {
  memset(net, 0, sizeof *net);
  snprintf(net->path, sizeof net->path, "%s", path);
  json_error_t je;
  char *clean = json_from_python(text, len);
  json_t *root = json_loadb(clean, len, JSON_REJECT_DUPLICATES, &je);
  free(clean);
  if (!root) {
    diag_error(d, path, (Loc){je.line, je.column}, "%s", je.text);
    return false;
  }
  Cfg cfg = {.root = root, .outer = root, .path = path, .net = net, .d = d};
  Cfg *c = &cfg;
  bool ok = false;
  if (!json_is_object(root)) {
    (void)FAIL("expected a JSON object (a model's config.json)");
    goto done;
  }
  const json_t *tc = json_object_get(root, "text_config");
  if (json_is_object(tc))
    cfg.root = tc;
  const char *type = get_string(c, "model_type");
  const char *outer_type = json_string_value(json_object_get(root, "model_type"));
  if (!type && json_object_get(root, "ssm_cfg") &&
      json_object_get(root, "d_model")) {
    snprintf(net->model_type, sizeof net->model_type, "state-spaces");
    snprintf(net->name, sizeof net->name, "state-spaces");
    ok = type_state_spaces(c);
    if (ok)
      note_unread(c);
    goto done;
  }
  if (!type) {
    (void)FAIL("missing \"model_type\": which architecture the config describes");
    goto done;
  }
  snprintf(net->model_type, sizeof net->model_type, "%s", type);
  const char *nm = json_string_value(json_object_get(root, "_name_or_path"));
  snprintf(net->name, sizeof net->name, "%s", nm ? nm : type);
  int t = 0;
  while (t < NTYPES && strcmp(types[t].name, type) != 0)
    t++;
  if (t == NTYPES) {
    char names[512];
    (void)FAIL("\"model_type\": '%s' is not a model type read (expected one of "
         "%s)", type, net_model_types(names, sizeof names));
    goto done;
  }
  if (cfg.root != root && outer_type)
    note(c, "the language model of a '%s' config (its text_config) is "
         "built; the other towers are not", outer_type);
  ok = types[t].read(c);
  if (ok) {
    note_unmodelled(c);
    note_unread(c);
  }
done:
  json_decref(root);
  return ok;
}

static bool parse_config(const char *path, const char *text, size_t len,
                         void *net, Diag *d) {
  return net_config_parse(path, text, len, net, d);
}

bool net_config_load(const char *path, Net *net, Diag *d) {
  char file[600];
  size_t n = strlen(path);
  if (n >= 5 && !strcmp(path + n - 5, ".json"))
    snprintf(file, sizeof file, "%s", path);
  else
    snprintf(file, sizeof file, "%s/config.json", path);
  return load_input(file, parse_config, net, d);
}
