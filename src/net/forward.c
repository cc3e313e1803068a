/* forward.c — a whole model on real tensors: the blocks' cascades run by
 * the interpreter (src/exec/), layer after layer, prompt then token by
 * token, each block use carrying its decode state (a KV cache that grows,
 * an SSM's state and convolution history).
 *
 * The weights are one safetensors file, keyed by where each block runs:
 * "layers.I.K.TENSOR" (layer I's K-th block), "shared.B.TENSOR" (a block
 * whose one set of weights every use runs: Zamba2's), "embed.WE",
 * "head.WN" and "head.WH" (absent when the head is tied to the
 * embedding: WE transposed). Each tensor has the shape its cascade
 * declares. What runs is what the model prices, but for a mixture of
 * experts, which runs moe_dense.yaml (every expert over every token,
 * weighed by the top-K routing: the same numbers; docs/models.md). */
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lm/lm.h"

/* The key prefix of the weights of block K of layer I. */
static void block_prefix(const Net *net, int layer, int k, char *buf,
                         size_t n) {
  int b = net->layer[layer][k];
  if (net->blocks[b].copies == 1 && net->blocks[b].uses > 1)
    snprintf(buf, n, "shared.%d.", b);
  else if (b == net->embed)
    snprintf(buf, n, "embed.");
  else if (b == net->head)
    snprintf(buf, n, "head.");
  else
    snprintf(buf, n, "layers.%d.%d.", layer, k);
}

/* Tensor T's shape under S. */
static int tensor_shape(const Cascade *c, const Shape *s, int t,
                        int64_t *shape) {
  const Tensor *tt = &c->tensors[t];
  for (int k = 0; k < tt->nranks; k++)
    shape[k] = s->size[tt->ranks[k]];
  return tt->nranks;
}

/* Is input T of C a weight (what init-weights writes and a run reads
 * from the weights), rather than the stream, a table or a state? */
static bool is_weight(const Cascade *c, int t) {
  const char *n = c->tensors[t].name;
  return c->tensors[t].producer < 0 && !tensor_is_init_read(c, t) &&
         tensor_is_read(c, t) && strcmp(n, "X") != 0 &&
         strcmp(n, "COS") != 0 && strcmp(n, "SIN") != 0;
}

/* ---- random weights ---- */

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Values a fresh model of this kind could have: norms near 1, decays
 * negative (A), small positive skips, dt biases that softplus to
 * 1e-3..0.1, projections N(0, 1/sqrt(fan-in)). */
static void fill_random(Array *a, const char *name, int64_t fan_in,
                        Rng *r) {
  bool norm = a->ndim == 1 && (name[0] == 'W' && ends_with(name, "N"));
  for (int64_t i = 0; i < a->n; i++) {
    double v;
    if (norm || !strcmp(name, "WEX") || !strcmp(name, "WNLLY") ||
        !strcmp(name, "WON") || !strcmp(name, "WQAN") ||
        !strcmp(name, "WKVN"))
      v = 1 + 0.1 * rng_normal(r);
    else if (!strcmp(name, "A"))
      v = -(1 + 15 * rng_uniform(r));
    else if (!strcmp(name, "ALOG"))
      v = log(1 + 15 * rng_uniform(r));
    else if (!strcmp(name, "D"))
      v = 0.5 + rng_uniform(r);
    else if (!strcmp(name, "BDelta") || !strcmp(name, "DTB")) {
      double dt = exp(log(1e-3) + rng_uniform(r) * (log(0.1) - log(1e-3)));
      v = dt + log(-expm1(-dt));
    } else
      v = rng_normal(r) / sqrt((double)fan_in);
    a->data[i] = (float)v;
  }
}

/* The fan-in of weight T, for its scale: its largest rank, which in
 * these blocks is the width it is contracted over (d_model, or d_ff, or
 * the heads' width); 1 for a vector. */
static int64_t fan_in(const Cascade *c, const Shape *s, int t) {
  const Tensor *tt = &c->tensors[t];
  int64_t most = 1;
  for (int k = 0; tt->nranks > 1 && k < tt->nranks; k++)
    if (s->size[tt->ranks[k]] > most)
      most = s->size[tt->ranks[k]];
  return most;
}

/* The cascade block B runs as, for weights: its prompt spec, every
 * expert. */
static bool weight_cascade(const Net *net, int b, Cascade **c, Shape **s,
                           Diag *d) {
  Pass ph = {.decode = false, .batch = 1, .tokens = 1, .cached = 1,
             .routing = ROUTE_UNIFORM, .capacity_factor = 1, .run = true,
             .experts = net->blocks[b].experts};
  return net_block_cascade(net, b, &ph, c, s, d);
}

/* Add block B's weights under PREFIX to W. */
static bool add_random(const Net *net, int b, const char *prefix,
                       uint64_t seed, StWriter *w, double *params, Diag *d) {
  Cascade *c;
  Shape *s;
  if (!weight_cascade(net, b, &c, &s, d))
    return false;
  for (int t = 0; t < c->ntensors; t++) {
    if (!is_weight(c, t))
      continue;
    int64_t shape[IR_MAX_RANKS];
    int nd = tensor_shape(c, s, t, shape);
    Array *a = array_new(nd, shape);
    char key[160];
    snprintf(key, sizeof key, "%s%s", prefix, c->tensors[t].name);
    Rng r = rng_for(seed, key);
    fill_random(a, c->tensors[t].name, fan_in(c, s, t), &r);
    st_writer_add(w, key, a, DT_F32);
    *params += (double)a->n;
    array_free(a);
  }
  shape_free(s);
  cascade_free(c);
  return true;
}

StWriter *net_random_weights(const Net *net, uint64_t seed, double *params,
                             Diag *d) {
  StWriter *w = st_writer_new();
  *params = 0;
  bool ok = add_random(net, net->embed, "embed.", seed, w, params, d);
  bool *shared_done = xcalloc((size_t)net->nblocks, sizeof *shared_done);
  for (int i = 0; ok && i < net->nlayers; i++)
    for (int k = 0; ok && k < net->nlayer[i]; k++) {
      int b = net->layer[i][k];
      char prefix[64];
      block_prefix(net, i, k, prefix, sizeof prefix);
      if (!strncmp(prefix, "shared.", 7)) {
        if (shared_done[b])
          continue;
        shared_done[b] = true;
      }
      ok = add_random(net, b, prefix, seed, w, params, d);
    }
  free(shared_done);
  if (ok && !net->tied)
    ok = add_random(net, net->head, "head.", seed, w, params, d);
  else if (ok) { /* only the head's norm: its WH is the embedding's */
    Cascade *c;
    Shape *s;
    ok = weight_cascade(net, net->head, &c, &s, d);
    if (ok) {
      int t = cascade_tensor(c, "WN");
      int64_t shape[IR_MAX_RANKS];
      int nd = tensor_shape(c, s, t, shape);
      Array *a = array_new(nd, shape);
      Rng r = rng_for(seed, "head.WN");
      fill_random(a, "WN", 1, &r);
      st_writer_add(w, "head.WN", a, DT_F32);
      *params += (double)a->n;
      array_free(a);
      shape_free(s);
      cascade_free(c);
    }
  }
  if (!ok) {
    st_writer_free(w);
    return NULL;
  }
  st_writer_meta(w, "format", "mambalaya-net");
  return w;
}

/* ---- running ---- */

struct NetModel {
  const Net *net;
  const StFile *weights;
  double rope_theta;
  long pos; /* tokens run so far (each sequence) */
  int nseq;
  Tensors state[NET_MAX_LAYERS][NET_LAYER_BLOCKS];
};

NetModel *net_model_new(const Net *net, const StFile *weights) {
  NetModel *m = xcalloc(1, sizeof *m);
  m->net = net;
  m->weights = weights;
  m->rope_theta = net->rope_theta > 0 ? net->rope_theta : 10000;
  return m;
}

void net_model_free(NetModel *m) {
  if (!m)
    return;
  for (int i = 0; i < NET_MAX_LAYERS; i++)
    for (int k = 0; k < NET_LAYER_BLOCKS; k++)
      tensors_free(&m->state[i][k]);
  free(m);
}

/* The weight KEY, checked against the shape its cascade declares. */
static Array *weight(const NetModel *m, const char *key, int nd,
                     const int64_t *shape, Diag *d) {
  const StEntry *e = st_find(m->weights, key);
  if (!e) {
    diag_error(d, m->weights->path, (Loc){0, 0}, "no tensor '%s' (write "
               "the weights with `init-weights --config`)", key);
    return NULL;
  }
  int64_t n = 1;
  for (int k = 0; k < nd; k++)
    n *= shape[k];
  Array *a = st_array(m->weights, e);
  if (!a || a->n != n) {
    diag_error(d, m->weights->path, (Loc){0, 0}, "'%s' has %lld values, "
               "its block declares %lld", key, a ? (long long)a->n : 0LL,
               (long long)n);
    array_free(a);
    return NULL;
  }
  a->ndim = nd;
  memcpy(a->shape, shape, sizeof shape[0] * (size_t)nd);
  return a;
}

/* RoPE's tables at positions POS .. POS + M - 1: cos and sin of pos x
 * theta^(-2u/E) over the U = E/2 frequencies (rotate_half's). */
static void rope_tables(const NetModel *m, const Cascade *c, const Shape *s,
                        Tensors *in) {
  int tc = cascade_tensor(c, "COS");
  if (tc < 0)
    return;
  int64_t shape[IR_MAX_RANKS];
  tensor_shape(c, s, tc, shape);
  int64_t rows = shape[0], u = shape[1];
  Array *cs = array_new(2, shape), *sn = array_new(2, shape);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t k = 0; k < u; k++) {
      double f = pow(m->rope_theta, -(double)k / (double)u);
      double a = (double)(m->pos + i) * f;
      cs->data[i * u + k] = (float)cos(a);
      sn->data[i * u + k] = (float)sin(a);
    }
  tensors_put(in, "COS", cs, true);
  tensors_put(in, "SIN", sn, true);
}

/* A cache of a decode spec and the tensor of the prompt's spec that
 * fills it: KC and K (K[b,g,m<0] = KC[b,g,m+T]), MLA's CC and CKV. */
typedef struct CachePair {
  char cache[32], source[32];
  int tdim; /* the cache's dimension over the tokens (rank T) */
} CachePair;

/* Block B's cache pairs, from its decode cascade's initializations; how
 * many (-1 with D set when it does not build). */
static int cache_pairs(const Net *net, int b, long nseq, CachePair *out,
                       Diag *d) {
  Pass ph = {.decode = true, .batch = nseq, .tokens = 1, .cached = 1,
             .routing = ROUTE_UNIFORM, .capacity_factor = 1, .run = true};
  Cascade *c;
  Shape *s;
  if (!net_block_cascade(net, b, &ph, &c, &s, d))
    return -1;
  int n = 0;
  for (int t = 0; t < c->ntensors && n < 4; t++) {
    int k, src = c->tensors[t].init ? init_state_source(c, t, &k) : -1;
    if (src < 0 || !c->tensors[src].append)
      continue;
    snprintf(out[n].cache, sizeof out[n].cache, "%s", c->tensors[src].name);
    snprintf(out[n].source, sizeof out[n].source, "%s", c->tensors[t].name);
    out[n].tdim = 0;
    for (int r = 0; r < c->tensors[src].nranks; r++)
      if (c->tensors[src].ranks[r] == cascade_rank(c, "T"))
        out[n].tdim = r;
    n++;
  }
  shape_free(s);
  cascade_free(c);
  return n;
}

/* A sliding window's cache holds the last WINDOW - 1 tokens: the next
 * token sees them and itself. */
static void trim_window(Tensors *state, const CachePair *pairs, int npairs,
                        long window) {
  for (int i = 0; i < npairs; i++) {
    Array *a = tensors_get(state, pairs[i].cache);
    int dim = pairs[i].tdim;
    int64_t t = a ? a->shape[dim] : 0, keep = window - 1;
    if (t <= keep || keep < 1)
      continue;
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < dim; k++)
      outer *= a->shape[k];
    for (int k = dim + 1; k < a->ndim; k++)
      inner *= a->shape[k];
    int64_t shape[IR_MAX_RANKS];
    memcpy(shape, a->shape, sizeof shape[0] * (size_t)a->ndim);
    shape[dim] = keep;
    Array *tr = array_new(a->ndim, shape);
    for (int64_t o = 0; o < outer; o++)
      memcpy(tr->data + o * keep * inner,
             a->data + (o * t + (t - keep)) * inner,
             sizeof(float) * (size_t)(keep * inner));
    tensors_put(state, pairs[i].cache, tr, true);
  }
}

/* Run block K of layer I (I = -1: the head) over STREAM; the result into
 * *OUT. */
static bool run_block(NetModel *m, int layer, int k, int b, Array *stream,
                      long tokens, Array **out, Diag *d) {
  const Net *net = m->net;
  bool decode = m->pos > 0;
  Pass ph = {.decode = decode, .batch = m->nseq, .tokens = tokens,
             .cached = m->pos, .routing = ROUTE_UNIFORM,
             .capacity_factor = 1, .run = true,
             .experts = net->blocks[b].experts};
  Cascade *c;
  Shape *s;
  if (!net_block_cascade(net, b, &ph, &c, &s, d))
    return false;
  char prefix[64];
  if (layer < 0)
    snprintf(prefix, sizeof prefix, "head.");
  else
    block_prefix(net, layer, k, prefix, sizeof prefix);
  Tensors *state = layer >= 0 ? &m->state[layer][k] : NULL;
  Tensors in = {0}, res = {0}, next = {0};
  bool ok = true;
  for (int t = 0; ok && t < c->ntensors; t++) {
    const Tensor *tt = &c->tensors[t];
    if (tt->producer >= 0 || !tensor_is_read(c, t))
      continue;
    int64_t shape[IR_MAX_RANKS];
    int nd = tensor_shape(c, s, t, shape);
    if (!strcmp(tt->name, "X")) {
      tensors_put(&in, "X", stream, false);
    } else if (tensor_is_init_read(c, t)) { /* a state: carried, or zero */
      Array *st = state ? tensors_get(state, tt->name) : NULL;
      tensors_put(&in, tt->name, st ? st : array_new(nd, shape), !st);
    } else if (is_weight(c, t)) {
      char key[160];
      snprintf(key, sizeof key, "%s%s", prefix, tt->name);
      Array *w = NULL;
      if (layer < 0 && net->tied && !strcmp(tt->name, "WH")) {
        /* the tied head: the embedding's table, transposed */
        int64_t vd[2] = {shape[1], shape[0]};
        Array *we = weight(m, "embed.WE", 2, vd, d);
        if ((w = we ? array_new(2, shape) : NULL))
          for (int64_t v = 0; v < vd[0]; v++)
            for (int64_t x = 0; x < vd[1]; x++)
              w->data[x * vd[0] + v] = we->data[v * vd[1] + x];
        array_free(we);
      } else {
        w = weight(m, key, nd, shape, d);
      }
      ok = w != NULL;
      if (ok)
        tensors_put(&in, tt->name, w, true);
    }
  }
  if (ok)
    rope_tables(m, c, s, &in);
  /* A prompt's attention keeps what its cache will hold (its keys and
   * values; MLA's latents and rotary keys): the first decode step's. */
  CachePair pairs[4];
  int npairs = net_block_caches(net, b)
                   ? cache_pairs(net, b, m->nseq, pairs, d)
                   : 0;
  bool keep = !decode && npairs > 0;
  ok = ok && npairs >= 0;
  ExecOpts eo = {.keep_all = keep};
  ok = ok && exec_run(c, s, &in, &eo, &res, &next, NULL, d);
  if (ok) {
    const char *yname = layer < 0 ? "LG" : "Y";
    *out = tensors_take(&res, yname);
    ok = *out != NULL;
    if (!ok)
      diag_error(d, block_kind_spec(net->blocks[b].kind, decode), (Loc){0, 0},
                 "the block writes no %s: it cannot run in a whole model",
                 yname);
  }
  if (ok && state) {
    for (int i = 0; keep && i < npairs; i++) /* the prompt's keys: the cache */
      tensors_put(state, pairs[i].cache, tensors_take(&res, pairs[i].source),
                  true);
    for (int i = 0; i < next.n; i++) { /* the states the pass carries */
      tensors_put(state, next.names[i], next.arrays[i], next.owned[i]);
      next.owned[i] = false;
    }
    if (net->blocks[b].window > 0)
      trim_window(state, pairs, npairs, net->blocks[b].window);
  }
  tensors_free(&in);
  tensors_free(&res);
  tensors_free(&next);
  shape_free(s);
  cascade_free(c);
  return ok;
}

/* The embedding: each token's row of the table. */
static Array *embed(const NetModel *m, const int *tokens, long len,
                    Diag *d) {
  const Net *net = m->net;
  const Block *e = &net->blocks[net->embed];
  int64_t vocab = net_vocab(net), width = 0;
  for (int i = 0; i < e->nsizes; i++)
    if (!strcmp(e->names[i], "d_model"))
      width = (int64_t)e->values[i];
  Array *we = weight(m, "embed.WE", 2, (int64_t[]){vocab, width}, d);
  if (!we)
    return NULL;
  Array *x = array_new(3, (int64_t[]){m->nseq, len, width});
  for (int64_t i = 0; i < (int64_t)m->nseq * len; i++) {
    int tok = tokens[i];
    if (tok < 0 || tok >= vocab) {
      diag_error(d, net->path, (Loc){0, 0}, "token %d is outside the "
                 "vocabulary (0 to %lld)", tok, (long long)vocab - 1);
      array_free(x);
      array_free(we);
      return NULL;
    }
    memcpy(x->data + i * width, we->data + (int64_t)tok * width,
           sizeof(float) * (size_t)width);
  }
  array_free(we);
  return x;
}

bool net_model_forward(NetModel *m, const int *tokens, int nseq, long len,
                       Array **logits, Diag *d) {
  *logits = NULL;
  for (int b = 0; b < m->net->nblocks; b++)
    if (m->net->blocks[b].not_run[0]) {
      diag_error(d, m->net->path, (Loc){0, 0}, "block %s cannot run yet: "
                 "%s (it is priced)", m->net->blocks[b].label,
                 m->net->blocks[b].not_run);
      return false;
    }
  if (m->pos == 0)
    m->nseq = nseq;
  else if (nseq != m->nseq) {
    diag_error(d, m->net->path, (Loc){0, 0}, "%d sequences after %d", nseq,
               m->nseq);
    return false;
  }
  Array *x = embed(m, tokens, len, d);
  for (int i = 0; x && i < m->net->nlayers; i++)
    for (int k = 0; x && k < m->net->nlayer[i]; k++) {
      Array *y = NULL;
      bool ok = run_block(m, i, k, m->net->layer[i][k], x, len, &y, d);
      array_free(x);
      x = ok ? y : NULL;
    }
  *logits = NULL;
  if (x && run_block(m, -1, 0, m->net->head, x, len, logits, d))
    m->pos += len;
  array_free(x);
  return *logits != NULL;
}
