/* lm.c — a whole Mamba language model on the cascade executor.
 *
 *   residual = embedding[token]                  (layer 0's PLEX; PEY = 0)
 *   for each layer l:  EY, LEX = cascade(PEY, PLEX, weights of l, state of l)
 *                      the next layer reads PEY = EY, PLEX = LEX
 *   h      = rmsnorm(EY + LEX) * norm_f          (eps 1e-5, as Mamba's)
 *   logits = h @ embedding^T                     (tied weights)
 *
 * The layer is whatever cascade the spec describes; its `weights:` section
 * says where each weight comes from (weights.c). Weights are loaded once,
 * when the model is built, and stay in the checkpoint's dtype: a model
 * directory's file is mapped, and its F32, F16 and BF16 tensors are used
 * where they lie (the file stays open while the model lives). Each layer keeps its decode state (the inputs
 * of the cascade's initializations: H0 and the convolution history), which
 * exec_run hands back after every pass: a prompt, then one token at a
 * time, continues exactly where the previous pass stopped. */
#include "lm.h"

#include "../embed/embed.h"
#include "../workload/workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Mamba's RMSNorm epsilon (the final norm; the layers' are in the spec). */
static const double norm_eps = 1e-5;

/* The layer in the chunked SSD form (specs/mamba2_ssd.yaml), for a
 * Mamba-2 prefill: its spec, its shape and executor for the last chunked
 * pass (BATCH sequences of CHUNKS chunks of LEN tokens). */
typedef struct Ssd {
  Spec *spec;
  Shape *shape;
  int batch, chunks, len;
  Exec *exec;
} Ssd;

struct Lm {
  ModelConfig cfg;
  StFile *file; /* a model directory's weights: the arrays' values */
  Spec *spec;   /* the layer's spec: its cascade and weights section */
  Cascade *c;   /* spec->cascade */
  WeightMap *map;
  LayerStream io;
  Tensors *weights; /* per layer: the cascade's weight inputs */
  Array *embedding; /* [vocab, d_model], as stored */
  Array *norm_f;    /* [d_model], fp32 */
  Tensors *state;   /* per layer: the decode state */
  /* Per layer: the executor's inputs (its weights, its state, the stream
   * in), named once, their arrays set at every run of the layer (layer
   * inputs): named at every run, the table cost each layer of a decode
   * step some 30 string copies and comparisons and their frees. */
  Tensors *inputs;
  /* The bytes of STATE's arrays, kept as they are put, replaced and
   * freed: summing them over every layer at every layer of every step
   * cost a cache miss per array (the weights' stream evicts them), about
   * 3 us a layer on mamba2-130m's decode, with the other thread idle. */
  double state_bytes;
  int batch;        /* the state's batch; 0 before the first pass */
  /* The shape and plan of the last pass, reused while they fit, and the
   * layers' prepared executor for them: every layer is the same cascade
   * over tensors of the same shapes, so one executor runs them all, from
   * token to token (a decode step only binds each layer's inputs). */
  Shape *shape;
  int shape_batch, shape_len;
  Pair *pairs;
  Plan *plan;
  Strategy plan_strategy; /* what made it: a strategy, or a rule */
  LmPlanRule plan_rule;
  const void *plan_ctx;
  Exec *exec;      /* or NULL */
  ExecOpts exec_o; /* what it was made with */
  double peak;     /* the most bytes of activations held at once */
  Ssd ssd;         /* Mamba-2's chunked prefill, when used */
};

static void ssd_forget(Lm *m);
static bool ssd_exec_bytes(Lm *m, int batch, int len, int chunk,
                           double *bytes, Diag *d);
static bool forward_segments(Lm *m, const int *tokens, int batch, int len,
                             int chunk, const LmOpts *o, Array **logits,
                             Diag *d);
enum { SEGMENT_TOKENS = 512 };

const ModelConfig *lm_config(const Lm *m) { return &m->cfg; }

/* ---- building ---- */

static Spec *embedded_spec(const char *name, Diag *d) {
  const EmbeddedFile *f = embedded_file(name);
  if (!f) {
    diag_error(d, name, (Loc){0, 0}, "not compiled into this binary");
    return NULL;
  }
  return spec_open_text(f->name, (const char *)f->data, f->len, d);
}

static Spec *shipped_spec(int version, Diag *d) {
  return embedded_spec(version == 2 ? "specs/mamba2.yaml" : "specs/mamba1.yaml",
                       d);
}

/* The cascade's sizes for BATCH sequences of LEN tokens: every model
 * parameter from the config (the spec's default preset plays no part). */
static Shape *bind(const Lm *m, int batch, int len, Diag *d) {
  Setting set[MP_COUNT + 2];
  int n = model_config_settings(&m->cfg, set);
  set[n++] = (Setting){"B", batch};
  set[n++] = (Setting){"I", len};
  return shape_bind(m->c, NULL, set, n, true, d);
}

/* A cascade that names a preset of the other version is a layer of the
 * other kind of model. */
static bool check_version(const Lm *m, Diag *d) {
  const Cascade *c = m->c;
  const Preset *p = c->model ? preset_find(c->model) : NULL;
  if (p && p->version != m->cfg.version) {
    diag_error(d, c->path, c->model_loc,
               "this cascade is a Mamba-%d layer (model: %s), but the "
               "model's config is Mamba-%d",
               p->version, c->model, m->cfg.version);
    return false;
  }
  return true;
}

/* The cascade's stream must be [B, I, d_model]. */
static bool check_stream(const Lm *m, const Shape *s, Diag *d) {
  const Cascade *c = m->c;
  int stream[4] = {m->io.hidden_in, m->io.residual_in, m->io.hidden_out,
                   m->io.residual_out};
  for (int k = 0; k < 4; k++) {
    const Tensor *T = &c->tensors[stream[k]];
    bool ok = T->nranks == 3 && strcmp(c->ranks[T->ranks[0]].name, "B") == 0 &&
              strcmp(c->ranks[T->ranks[1]].name, "I") == 0 &&
              s->size[T->ranks[2]] == m->cfg.d_model;
    if (!ok) {
      diag_error(d, c->path, T->loc,
                 "the layer's stream tensor %s must be [B, I, d_model] "
                 "(batch, tokens, %d)",
                 T->name, m->cfg.d_model);
      return false;
    }
  }
  return true;
}

static void shape_str(Buf *b, const Array *a) {
  buf_printf(b, "[");
  for (int k = 0; k < a->ndim; k++)
    buf_printf(b, "%s%lld", k ? ", " : "", (long long)a->shape[k]);
  buf_printf(b, "]");
}

/* A model-level tensor of N elements over the given dimensions. */
static Array *load_model_tensor(Lm *m, const Checkpoint *ck, const char *what,
                                int64_t rows, int64_t cols, Diag *d) {
  Array *a = weights_load_model(m->map, ck, what, d);
  if (!a)
    return NULL;
  bool ok = cols ? a->ndim == 2 && a->shape[0] == rows && a->shape[1] == cols
                 : a->ndim == 1 && a->shape[0] == rows;
  if (!ok) {
    Buf b = {0};
    shape_str(&b, a);
    if (cols)
      diag_error(d, ck->path, (Loc){0, 0},
                 "the %s has shape %s, but the config says [%lld, %lld] "
                 "(vocab, d_model)",
                 what, b.s, (long long)rows, (long long)cols);
    else
      diag_error(d, ck->path, (Loc){0, 0},
                 "the %s has shape %s, but the config says [%lld] (d_model)",
                 what, b.s, (long long)rows);
    buf_free(&b);
    array_free(a);
    return NULL;
  }
  return a;
}

/* The cascade (M->c, or the shipped one), its weights: section, and
 * every weight from CK. */
/* A model with several groups (Mamba-2's ngroups) needs a cascade that
 * knows them: one with a single B and C for all heads would read in_proj's
 * rows at the wrong places. */
static bool check_groups(const Lm *m, Diag *d) {
  if (m->cfg.version != 2 || m->cfg.ngroups == 1)
    return true;
  for (int i = 0; i < m->c->nsyms; i++)
    if (strcmp(m->c->syms[i].name, "ngroups") == 0)
      return true;
  diag_error(d, m->c->path, (Loc){0, 0},
             "the model has ngroups = %d, but this cascade models one group "
             "(it never uses ngroups)",
             m->cfg.ngroups);
  return false;
}

static bool build(Lm *m, const Checkpoint *ck, Diag *d) {
  const ModelConfig *cfg = &m->cfg;
  if (!m->spec && !(m->spec = shipped_spec(cfg->version, d)))
    return false;
  m->c = m->spec->cascade;
  if (!check_groups(m, d))
    return false;
  if (!(m->map = weights_parse(m->spec, d)) || !check_version(m, d))
    return false;
  m->io = weights_stream(m->map);
  if (cascade_rank(m->c, "B") < 0 || cascade_rank(m->c, "I") < 0) {
    diag_error(d, m->c->path, (Loc){0, 0},
               "a layer cascade needs the ranks B (batch) and I (tokens)");
    return false;
  }
  Shape *s = bind(m, 1, 1, d);
  bool ok = s && check_stream(m, s, d);
  ok = ok && (m->embedding = load_model_tensor(m, ck, "embedding", cfg->vocab,
                                               cfg->d_model, d));
  ok = ok && (m->norm_f = load_model_tensor(m, ck, "norm_f", cfg->d_model, 0,
                                            d));
  if (ok && m->norm_f->dtype != DT_F32) { /* read by head(), in fp32 */
    Array *f = array_f32(m->norm_f);
    array_free(m->norm_f);
    m->norm_f = f;
  }
  /* The last layer first: a config that counts more layers than the
   * checkpoint holds fails here, before anything is allocated per layer. */
  Tensors last = {0};
  int n = cfg->n_layer;
  if (ok && !weights_load_layer(m->map, s, ck, n - 1, &last, d)) {
    Buf b = {0};
    buf_printf(&b, "%s (the config has %d layers)", d->msg, n);
    snprintf(d->msg, sizeof d->msg, "%s", b.s);
    buf_free(&b);
    ok = false;
  }
  if (ok) {
    m->weights = xcalloc((size_t)n, sizeof *m->weights);
    m->state = xcalloc((size_t)n, sizeof *m->state);
    m->inputs = xcalloc((size_t)n, sizeof *m->inputs);
    m->weights[n - 1] = last;
  } else {
    tensors_free(&last);
  }
  for (int l = 0; ok && l < n - 1; l++)
    ok = weights_load_layer(m->map, s, ck, l, &m->weights[l], d);
  shape_free(s);
  return ok;
}

Lm *lm_new(const ModelConfig *cfg, const Checkpoint *ck, Spec *spec,
           Diag *d) {
  Lm *m = xcalloc(1, sizeof *m);
  m->cfg = *cfg;
  m->spec = spec;
  if (!build(m, ck, d)) {
    lm_free(m);
    return NULL;
  }
  return m;
}

Lm *lm_open(const char *dir, Spec *spec, Diag *d) {
  Buf cpath = {0}, wpath = {0};
  buf_printf(&cpath, "%s/config.json", dir);
  buf_printf(&wpath, "%s/model.safetensors", dir);
  ModelConfig cfg;
  Lm *m = NULL;
  if (model_config_load(cpath.s, &cfg, d)) {
    StFile *f = st_open(wpath.s, d);
    if (f) {
      Checkpoint ck = checkpoint_of_file(f);
      m = lm_new(&cfg, &ck, spec, d);
      spec = NULL; /* owned by the Lm, or freed by it */
      if (m)
        m->file = f; /* the weights' values */
      else
        st_close(f);
    }
  }
  spec_close(spec);
  buf_free(&cpath);
  buf_free(&wpath);
  return m;
}

static void forget_exec(Lm *m) {
  exec_free(m->exec);
  m->exec = NULL;
}

static void forget_shape(Lm *m) {
  forget_exec(m);
  plan_free(m->plan);
  free(m->pairs);
  shape_free(m->shape);
  m->plan = NULL;
  m->pairs = NULL;
  m->shape = NULL;
}

void lm_reset(Lm *m) {
  for (int l = 0; m->state && l < m->cfg.n_layer; l++) {
    tensors_free(&m->state[l]);
    tensors_free(&m->inputs[l]); /* names the state */
  }
  m->state_bytes = 0;
  m->batch = 0;
}

void lm_free(Lm *m) {
  if (!m)
    return;
  lm_reset(m);
  forget_shape(m);
  ssd_forget(m);
  for (int l = 0; m->weights && l < m->cfg.n_layer; l++)
    tensors_free(&m->weights[l]);
  free(m->weights);
  free(m->state);
  free(m->inputs);
  array_free(m->embedding);
  array_free(m->norm_f);
  weights_free(m->map);
  spec_close(m->spec);
  st_close(m->file);
  free(m);
}

/* The arrays a decode step reads, in the order it reads them (every
 * layer's, then the head's), into OUT when it is not NULL: how many. */
static int weight_arrays(const Lm *m, const Array **out) {
  int n = 0;
  for (int l = 0; l < m->cfg.n_layer; l++)
    for (int i = 0; i < m->weights[l].n; i++, n++)
      if (out)
        out[n] = m->weights[l].arrays[i];
  if (out) {
    out[n] = m->norm_f;
    out[n + 1] = m->embedding;
  }
  return n + 2;
}

double lm_weight_bytes(const Lm *m) {
  int n = weight_arrays(m, NULL);
  const Array **a = xmalloc((size_t)n * sizeof *a);
  weight_arrays(m, a);
  double bytes = 0;
  for (int i = 0; i < n; i++)
    bytes += array_bytes(a[i]);
  free(a);
  return bytes;
}

double lm_read_weights(const Lm *m, Pool *pool) {
  int n = weight_arrays(m, NULL);
  const Array **a = xmalloc((size_t)n * sizeof *a);
  const void **p = xmalloc((size_t)n * sizeof *p);
  size_t *bytes = xmalloc((size_t)n * sizeof *bytes);
  weight_arrays(m, a);
  for (int i = 0; i < n; i++) {
    p[i] = a[i]->dtype == DT_F32 ? (const void *)a[i]->data : a[i]->half;
    bytes[i] = (size_t)array_bytes(a[i]);
  }
  double secs = kernel_read_seconds(p, bytes, n, pool);
  free(bytes);
  free(p);
  free(a);
  return secs;
}

/* ---- a pass ---- */

static const Shape *shape_for(Lm *m, int batch, int len, Diag *d) {
  if (m->shape && m->shape_batch == batch && m->shape_len == len)
    return m->shape;
  forget_shape(m);
  m->shape = bind(m, batch, len, d);
  m->shape_batch = batch;
  m->shape_len = len;
  return m->shape;
}

/* The fusion plan O asks for, for the current shape (plans depend on
 * sizes): its rule's, or its strategy's. */
static const Plan *plan_for(Lm *m, const LmOpts *o, Diag *d) {
  if (m->plan && m->plan_rule == o->plan &&
      (o->plan ? m->plan_ctx == o->plan_ctx
               : m->plan_strategy == o->strategy))
    return m->plan;
  forget_exec(m);
  plan_free(m->plan);
  if (!m->pairs)
    m->pairs = fusion_classify(m->c, m->shape);
  m->plan = o->plan ? o->plan(o->plan_ctx, m->c, m->shape, m->pairs, d)
                    : fusion_plan(m->c, m->shape, m->pairs, o->strategy,
                                  STITCH_GREEDY, OBJ_GROUPS, d);
  m->plan_strategy = o->strategy;
  m->plan_rule = o->plan;
  m->plan_ctx = o->plan_ctx;
  return m->plan;
}

static Array *tensor_array(const Cascade *c, const Shape *s, int t) {
  int64_t shape[IR_MAX_RANKS];
  const Tensor *T = &c->tensors[t];
  for (int k = 0; k < T->nranks; k++)
    shape[k] = s->size[T->ranks[k]];
  return array_new(T->nranks, shape);
}

/* A zero decode state (a fresh prompt) for every layer. */
static bool zero_state(Lm *m, const Shape *s, Diag *d) {
  for (int l = 0; l < m->cfg.n_layer; l++)
    for (int t = 0; t < m->c->ntensors; t++) {
      const Tensor *T = &m->c->tensors[t];
      if (T->producer >= 0 || !weights_is_state(m->c, t))
        continue;
      Array *a = tensor_array(m->c, s, t);
      if (!a) {
        diag_error(d, m->c->path, T->loc,
                   "the decode state %s of %g elements is too large to "
                   "allocate",
                   T->name, shape_tensor_elems(s, t));
        lm_reset(m);
        return false;
      }
      /* Zeros written, not only promised: calloc's fresh pages map the
       * shared zero page when first read, and the scan reads the state
       * before it writes it in place, so each page faulted twice, the
       * second time a copy-on-write whose TLB flush interrupts the other
       * threads (4470 such faults, mamba2-130m's 19 MB, on every first
       * prefill). */
      memset(a->data, 0, (size_t)a->n * sizeof(float));
      tensors_put(&m->state[l], T->name, a, true);
      m->state_bytes += array_bytes(a);
    }
  return true;
}

static bool check_tokens(const Lm *m, const int *tokens, int batch, int len,
                         Diag *d) {
  if (batch < 1 || len < 1) {
    diag_error(d, "tokens", (Loc){0, 0}, "no tokens to run");
    return false;
  }
  for (int64_t i = 0; i < (int64_t)batch * len; i++)
    if (tokens[i] < 0 || tokens[i] >= m->cfg.vocab) {
      diag_error(d, "tokens", (Loc){0, 0},
                 "token %d (sequence %lld, position %lld) is outside the "
                 "vocabulary [0, %d)",
                 tokens[i], (long long)(i / len), (long long)(i % len),
                 m->cfg.vocab);
      return false;
    }
  if (m->batch && m->batch != batch) {
    diag_error(d, "tokens", (Loc){0, 0},
               "the decode state holds %d sequence%s, not %d: reset it first",
               m->batch, m->batch == 1 ? "" : "s", batch);
    return false;
  }
  return true;
}

static Array *embed(const Lm *m, int batch, int len, const int *tokens) {
  int64_t D = m->cfg.d_model;
  Array *a = array_new(3, (int64_t[]){batch, len, D});
  const Array *E = m->embedding;
  for (int64_t i = 0; i < a->n / D; i++)
    if (E->dtype == DT_F32)
      memcpy(a->data + i * D, E->data + tokens[i] * D,
             (size_t)D * sizeof(float));
    else
      kernel_widen(E->dtype, E->half + tokens[i] * D, a->data + i * D, D);
  return a;
}

typedef struct Stream {
  Array *hidden, *residual; /* owned */
} Stream;

/* Activations held between layers: the stream and every layer's decode
 * state; the peak adds what a layer's run (or the head) holds on top. */
double lm_state_bytes(const Lm *m) { return m->state_bytes; }

static void note_peak(Lm *m, const Stream *io, double on_top) {
  double held = on_top + array_bytes(io->hidden) + array_bytes(io->residual) +
                lm_state_bytes(m);
  if (held > m->peak)
    m->peak = held;
}

double lm_peak_bytes(const Lm *m) { return m->peak; }

/* The layers' executor for EO and the current shape. */
static Exec *exec_for(Lm *m, const ExecOpts *eo, Diag *d) {
  bool same = m->exec && m->exec_o.plan == eo->plan &&
              m->exec_o.pool == eo->pool &&
              m->exec_o.buffer_bytes == eo->buffer_bytes;
  if (!same) {
    forget_exec(m);
    m->exec = exec_new(m->c, m->shape, eo, d);
    m->exec_o = *eo;
  }
  return m->exec;
}

/* Layer L's inputs for the stream IO: its weights, its state, then the
 * stream; named the first time, and after a reset of the state. */
static const Tensors *layer_inputs(Lm *m, int l, const Stream *io) {
  const Tensors *w = &m->weights[l], *st = &m->state[l];
  Tensors *in = &m->inputs[l];
  if (in->n != w->n + st->n + 2) {
    tensors_free(in);
    for (int i = 0; i < w->n; i++)
      tensors_put(in, w->names[i], w->arrays[i], false);
    for (int i = 0; i < st->n; i++)
      tensors_put(in, st->names[i], NULL, false);
    tensors_put(in, m->c->tensors[m->io.hidden_in].name, NULL, false);
    tensors_put(in, m->c->tensors[m->io.residual_in].name, NULL, false);
  }
  for (int i = 0; i < st->n; i++) /* replaced from step to step */
    in->arrays[w->n + i] = st->arrays[i];
  in->arrays[w->n + st->n] = io->hidden;
  in->arrays[w->n + st->n + 1] = io->residual;
  return in;
}

/* Layer L on X: the stream in, the stream out, the state carried. */
static bool run_layer(Lm *m, int l, Exec *x, Stream *io, Diag *d) {
  const Cascade *c = m->c;
  Tensors out = {0}, next = {0};
  bool ok = x && exec_step(x, layer_inputs(m, l, io), &out, &next, NULL, d);
  if (x)
    note_peak(m, io, exec_peak_bytes(x));
  if (ok) {
    /* Kept for the next layer's stream (two 1.5 MB arrays a layer of a
     * 512-token mamba2-130m prompt: 768 page faults a layer, unmapped). */
    exec_recycle(x, io->hidden);
    exec_recycle(x, io->residual);
    io->hidden = tensors_take(&out, c->tensors[m->io.hidden_out].name);
    io->residual = tensors_take(&out, c->tensors[m->io.residual_out].name);
    for (int i = 0; ok && i < m->state[l].n; i++) {
      const char *name = m->state[l].names[i];
      Array *a = tensors_take(&next, name);
      if (!a) {
        diag_error(d, c->path, (Loc){0, 0},
                   "the executor returned no next state for %s", name);
        ok = false;
      } else if (a != m->state[l].arrays[i]) { /* else advanced in place */
        m->state_bytes += array_bytes(a) - array_bytes(m->state[l].arrays[i]);
        array_free(m->state[l].arrays[i]);
        m->state[l].arrays[i] = a;
      }
    }
  }
  tensors_free(&out);
  tensors_free(&next);
  return ok;
}

/* logits = rmsnorm(hidden + residual) * norm_f @ embedding^T, for every
 * token or each sequence's last. */
static Array *head(const Lm *m, const Stream *io, int batch, int len,
                   const LmOpts *o) {
  int64_t D = m->cfg.d_model, V = m->cfg.vocab;
  int64_t rows = o->last_only ? batch : (int64_t)batch * len;
  float *h = xmalloc((size_t)(rows * D) * sizeof(float));
  for (int64_t r = 0; r < rows; r++) {
    int64_t src = o->last_only ? r * len + len - 1 : r;
    const float *a = io->hidden->data + src * D;
    const float *b = io->residual->data + src * D;
    float *x = h + r * D;
    double ss = 0;
    for (int64_t k = 0; k < D; k++) {
      x[k] = a[k] + b[k];
      ss += (double)x[k] * x[k];
    }
    float scale = (float)(1 / sqrt(ss / (double)D + norm_eps));
    for (int64_t k = 0; k < D; k++)
      x[k] = x[k] * scale * m->norm_f->data[k];
  }
  Array *logits = o->last_only ? array_new(2, (int64_t[]){batch, V})
                               : array_new(3, (int64_t[]){batch, len, V});
  const Array *E = m->embedding;
  Gemm g = {.m = rows, .n = V, .k = D, .batch = 1,
            .a = h, .a_m = D, .a_k = 1,
            .b = E->dtype == DT_F32 ? (const void *)E->data : E->half,
            .b_type = E->dtype, .b_k = 1, .b_n = D,
            .c = logits->data, .c_m = V, .c_n = 1};
  kernel_gemm(&g, o->pool);
  free(h);
  return logits;
}

bool lm_forward(Lm *m, const int *tokens, int batch, int len,
                const LmOpts *o, Array **logits, Tensors *record, Diag *d) {
  *logits = NULL;
  if (!check_tokens(m, tokens, batch, len, d))
    return false;
  int chunk = lm_ssd_chunk(m, o, len, record != NULL);
  if (chunk || (len > SEGMENT_TOKENS && !o->fused && !record))
    return forward_segments(m, tokens, batch, len, chunk, o, logits, d);
  const Shape *s = shape_for(m, batch, len, d);
  if (!s)
    return false;
  ExecOpts eo = {.buffer_bytes = o->buffer_bytes, .pool = o->pool,
                 .state_in_place = true};

  if (o->fused && !(eo.plan = plan_for(m, o, d)))
    return false;
  if (!m->batch) {
    if (!zero_state(m, s, d))
      return false;
    m->batch = batch;
  }
  Stream io = {.hidden = tensor_array(m->c, s, m->io.hidden_in),
               .residual = embed(m, batch, len, tokens)};
  bool ok = true;
  for (int l = 0; ok && l < m->cfg.n_layer; l++) {
    ok = run_layer(m, l, exec_for(m, &eo, d), &io, d);
    if (ok && record) {
      char name[64];
      snprintf(name, sizeof name, "layers.%d.mixer_output", l);
      tensors_put(record, name, array_clone(io.hidden), true);
    }
  }
  if (ok) {
    *logits = head(m, &io, batch, len, o);
    /* the normalized rows (as many as logits rows) and the logits */
    note_peak(m, &io, array_bytes(*logits) * (1 + (double)m->cfg.d_model /
                                                      m->cfg.vocab));
  }
  array_free(io.hidden);
  array_free(io.residual);
  return ok;
}

bool lm_pass_bytes(Lm *m, int batch, int len, const LmOpts *o, bool record,
                   double *bytes, Diag *d) {
  const Shape *s = shape_for(m, batch, len, d);
  const Plan *plan = NULL;
  if (!s || (o->fused && !(plan = plan_for(m, o, d))))
    return false;
  const Cascade *c = m->c;
  double layers = m->cfg.n_layer, D = m->cfg.d_model, V = m->cfg.vocab;
  double tokens = (double)batch * len;
  double b = exec_bytes(c, s, plan, o->buffer_bytes), chunked = 0;
  int chunk = lm_ssd_chunk(m, o, len, record);
  if (chunk && !ssd_exec_bytes(m, batch, len, chunk, &chunked, d))
    return false;
  b = fmax(b, chunked);
  for (int t = 0; t < c->ntensors; t++)
    if (c->tensors[t].producer < 0 && weights_is_state(c, t))
      b += layers * 4 * shape_tensor_elems(s, t); /* the decode state */
  b += 4 * 4 * tokens * D; /* the stream: hidden and residual, in and out */
  double rows = o->last_only ? batch : tokens;
  b += 4 * rows * (D + V); /* the head: normed rows, logits */
  if (record)
    b += layers * 4 * tokens * D;
  *bytes = b;
  return true;
}

bool lm_export_state(const Lm *m, Tensors *out) {
  if (!m->batch)
    return false;
  for (int l = 0; l < m->cfg.n_layer; l++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "layers.%d.", l);
    weights_export_state(m->map, &m->state[l], prefix, out);
  }
  return true;
}

/* ---- long prompts and chunked prefill (Mamba-2) ----
 *
 * A prompt longer than SEGMENT_TOKENS runs as several passes, each
 * continuing from the state the last one left (under the interpreter,
 * recording nothing): a pass of 2048 tokens holds intermediates of tens
 * of MiB, each written once and read back from memory; passes of 512
 * tokens hold a quarter as much (bench/RESULTS.md, "Chunked SSD
 * prefill": 16 % less CPU time for 2048 tokens, measured when the
 * executor still mapped arrays over 8 MiB afresh for every layer).
 *
 * With the chunked SSD form, a Mamba-2 prompt's whole chunks run through
 * specs/mamba2_ssd.yaml, the layer with its state-space part in the
 * chunked form (matrix products over chunks, which the executor hands to
 * its GEMM kernel); the tokens left over (fewer than a chunk) then run
 * through the shipped layer's scan. The two layers share every weight
 * and state tensor by name, so the decode state is the same arrays either
 * way. The tail runs through the scan rather than padded with dt = 0:
 * padding would keep the SSM state, but not the convolution history (the
 * last d_conv - 1 inputs would be the padding's). */

static const char *const ssd_names[] = {"scan", "chunked"};
_Static_assert(sizeof ssd_names / sizeof ssd_names[0] == SSD_COUNT,
               "a name per SsdMode");
const char *ssd_mode_name(SsdMode s) { return ssd_names[s]; }

int lm_ssd_chunk(const Lm *m, const LmOpts *o, int len, bool record) {
  if (o->ssd == SSD_SCAN || m->cfg.version != 2 || o->fused || record ||
      strcmp(m->c->path, "specs/mamba2.yaml") != 0)
    return 0;
  int chunk = o->ssd_chunk > 0 ? o->ssd_chunk : SSD_CHUNK_DEFAULT;
  return len >= chunk ? chunk : 0;
}

static void ssd_forget(Lm *m) {
  exec_free(m->ssd.exec);
  shape_free(m->ssd.shape);
  m->ssd.exec = NULL;
  m->ssd.shape = NULL;
  spec_close(m->ssd.spec);
  m->ssd.spec = NULL;
}

/* The chunked layer's shape for BATCH sequences of CHUNKS x LEN tokens
 * (kept until the next such call). */
static const Shape *ssd_shape_for(Lm *m, int batch, int chunks, int len,
                                  Diag *d) {
  Ssd *x = &m->ssd;
  if (x->shape && x->batch == batch && x->chunks == chunks && x->len == len)
    return x->shape;
  if (!x->spec && !(x->spec = embedded_spec("specs/mamba2_ssd.yaml", d)))
    return NULL;
  exec_free(x->exec);
  shape_free(x->shape);
  x->exec = NULL;
  Setting set[MP_COUNT + 3];
  int n = model_config_settings(&m->cfg, set);
  set[n++] = (Setting){"B", batch};
  set[n++] = (Setting){"C", chunks};
  set[n++] = (Setting){"L", len};
  x->shape = shape_bind(x->spec->cascade, NULL, set, n, true, d);
  x->batch = batch, x->chunks = chunks, x->len = len;
  return x->shape;
}

/* Its executor, under the interpreter on POOL. */
static Exec *ssd_exec_for(Lm *m, int batch, int chunks, int len, Pool *pool,
                          Diag *d) {
  const Shape *s = ssd_shape_for(m, batch, chunks, len, d);
  if (s && !m->ssd.exec) {
    ExecOpts eo = {.pool = pool};
    m->ssd.exec = exec_new(m->ssd.spec->cascade, s, &eo, d);
  }
  return s ? m->ssd.exec : NULL;
}

/* The most bytes a chunked pass of BATCH x LEN tokens in chunks of CHUNK
 * holds in its executor (the whole chunks' pass: the tail's is smaller);
 * false with D set if the shape cannot be bound. */
static bool ssd_exec_bytes(Lm *m, int batch, int len, int chunk,
                           double *bytes, Diag *d) {
  const Shape *s = ssd_shape_for(m, batch, len / chunk, chunk, d);
  if (s)
    *bytes = exec_bytes(m->ssd.spec->cascade, s, NULL, 0);
  return s != NULL;
}

/* Columns [FROM, FROM + LEN) of TOKENS' BATCH rows of STRIDE. */
static int *token_columns(const int *tokens, int batch, int stride, int from,
                          int len) {
  int *t = xmalloc((size_t)batch * (size_t)len * sizeof *t);
  for (int b = 0; b < batch; b++)
    memcpy(t + (size_t)b * len, tokens + (size_t)b * stride + from,
           (size_t)len * sizeof *t);
  return t;
}

/* The layers in the chunked form over TOKENS (BATCH rows of LEN, a
 * multiple of CHUNK), from the decode state; with LOGITS, the head. */
static bool ssd_pass(Lm *m, const int *tokens, int batch, int len, int chunk,
                     const LmOpts *o, Array **logits, Diag *d) {
  Exec *x = ssd_exec_for(m, batch, len / chunk, chunk, o->pool, d);
  if (!x)
    return false;
  Stream io = {.hidden = array_new(3, (int64_t[]){batch, len, m->cfg.d_model}),
               .residual = embed(m, batch, len, tokens)};
  bool ok = true;
  for (int l = 0; ok && l < m->cfg.n_layer; l++) {
    ok = run_layer(m, l, x, &io, d);
    if (ok) { /* EY is [B, C, L, ED]: the same values as [B, I, ED] */
      io.hidden->ndim = 3;
      memcpy(io.hidden->shape, io.residual->shape, sizeof io.hidden->shape);
    }
  }
  if (ok && logits) {
    *logits = head(m, &io, batch, len, o);
    note_peak(m, &io, array_bytes(*logits) * (1 + (double)m->cfg.d_model /
                                                      m->cfg.vocab));
  }
  array_free(io.hidden);
  array_free(io.residual);
  return ok;
}

/* Rows [0, PART's) of each of BATCH sequences of PART ([BATCH, rows, V])
 * into ALL ([BATCH, total, V]) from row AT on. */
static void put_rows(Array *all, const Array *part, int batch, int at) {
  int64_t V = all->shape[2], total = all->shape[1];
  int64_t rows = part->n / (batch * V);
  for (int64_t s = 0; s < batch; s++)
    memcpy(all->data + (s * total + at) * V, part->data + s * rows * V,
           (size_t)(rows * V) * sizeof(float));
}

/* Columns [AT, AT + LEN) of TOKENS (BATCH rows of STRIDE) through the
 * layers in the chunked form with chunks of CHUNK (0: the scan), their
 * logits into ALL from row AT, or into *LAST when ALL is NULL and LAST
 * is not. */
static bool part_pass(Lm *m, const int *tokens, int batch, int stride, int at,
                      int len, int chunk, const LmOpts *o, Array *all,
                      Array **last, Diag *d) {
  int *cols = token_columns(tokens, batch, stride, at, len);
  Array *part = NULL;
  bool want = all || last;
  bool ok;
  if (chunk) {
    ok = ssd_pass(m, cols, batch, len, chunk, o, want ? &part : NULL, d);
  } else {
    LmOpts scan = *o;
    scan.ssd = SSD_SCAN;
    ok = lm_forward(m, cols, batch, len, &scan, &part, NULL, d);
  }
  free(cols);
  if (ok && all)
    put_rows(all, part, batch, at);
  if (ok && last && !all) {
    *last = part;
    part = NULL;
  }
  array_free(part);
  return ok;
}

/* Tokens in one pass of a segment (a multiple of CHUNK, or any for the
 * scan: CHUNK 0), at least one chunk. */
static int segment_tokens(int chunk) {
  int seg = chunk ? SEGMENT_TOKENS / chunk * chunk : SEGMENT_TOKENS;
  return seg > chunk ? seg : chunk;
}

/* A prompt in segments: whole chunks in the chunked form (CHUNK > 0),
 * then the rest by scan, each pass at most SEGMENT_TOKENS long (or one
 * chunk) and continuing from the last one's state. */
static bool forward_segments(Lm *m, const int *tokens, int batch, int len,
                             int chunk, const LmOpts *o, Array **logits,
                             Diag *d) {
  int whole = chunk ? len / chunk * chunk : 0;
  int first_scan = len - whole < SEGMENT_TOKENS ? len - whole : SEGMENT_TOKENS;
  /* A fresh prompt's zero state, of the shapes the scan's layer gives it
   * (bound for the scan's first pass, or for one token). */
  const Shape *s = shape_for(m, batch, first_scan ? first_scan : 1, d);
  if (!s)
    return false;
  if (!m->batch) {
    if (!zero_state(m, s, d))
      return false;
    m->batch = batch;
  }
  Array *all = o->last_only ? NULL
                            : array_uninit(3, (int64_t[]){batch, len,
                                                          m->cfg.vocab});
  Array *last = NULL;
  bool ok = true;
  for (int at = 0; ok && at < len;) {
    int c = at < whole ? chunk : 0, end = c ? whole : len;
    int n = end - at < segment_tokens(c) ? end - at : segment_tokens(c);
    ok = part_pass(m, tokens, batch, len, at, n, c, o, all,
                   at + n == len ? &last : NULL, d);
    at += n;
  }
  *logits = ok ? (all ? all : last) : NULL;
  if (!ok) {
    array_free(all);
    array_free(last);
  }
  return ok;
}
