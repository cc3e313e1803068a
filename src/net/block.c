/* block.c — the block kinds, and a block's cascade for one pass. */
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../embed/embed.h"

static const struct {
  const char *name, *spec, *decode, *help;
} kinds[] = {BLOCK_KINDS(TABLE_ROW)};
_Static_assert(sizeof kinds / sizeof kinds[0] == BK_COUNT,
               "a row of BLOCK_KINDS per block kind");

const char *block_kind_name(BlockKind k) { return kinds[k].name; }
const char *block_kind_help(BlockKind k) { return kinds[k].help; }
const char *block_kind_spec(BlockKind k, bool decode) {
  return decode && kinds[k].decode ? kinds[k].decode : kinds[k].spec;
}

const char *block_kind_run_spec(BlockKind k, bool decode) {
  return k == BK_MOE          ? "specs/layers/moe_dense.yaml"
         : k == BK_MOE_SHARED ? "specs/layers/moe_dense_shared.yaml"
                              : block_kind_spec(k, decode);
}

long net_vocab(const Net *net) {
  const Block *e = &net->blocks[net->embed];
  for (int i = 0; i < e->nsizes; i++)
    if (!strcmp(e->names[i], "vocab"))
      return (long)e->values[i];
  return 0;
}

bool net_block_caches(const Net *net, int b) {
  BlockKind k = net->blocks[b].kind;
  return block_kind_spec(k, true) != block_kind_spec(k, false);
}

static const char *const routing_names[] = {"uniform", "worst"};
_Static_assert(sizeof routing_names / sizeof routing_names[0] == ROUTE_COUNT,
               "a name per routing");
const char *routing_name(Routing r) { return routing_names[r]; }

/* The block's sizes and the phase's, as settings for the shape. */
static int phase_settings(const Cascade *c, const Block *bk, const Pass *ph,
                          Setting *out) {
  int n = 0;
  int seq = cascade_sequence_rank(c);
  out[n++] = (Setting){"B", (double)ph->batch};
  if (seq >= 0)
    out[n++] = (Setting){c->ranks[seq].name, (double)ph->tokens};
  if (cascade_rank(c, "T") >= 0 && ph->decode) {
    long t = ph->cached;
    if (bk->window > 0 && t > bk->window - ph->tokens)
      t = bk->window - ph->tokens; /* the window's oldest token on */
    out[n++] = (Setting){"T", (double)(t < 1 ? 1 : t)};
  }
  /* A mixture's routing is its spec's (moe.yaml: the experts uniform
   * routing touches, each receiving an equal share, times the capacity
   * factor in a prompt); the worst case, or a count asked for, sets the
   * experts touched over it. */
  if (bk->experts > 0 && cascade_param(c, "capacity") >= 0)
    out[n++] = (Setting){"capacity", ph->decode ? 1 : ph->capacity_factor};
  if (bk->experts > 0 && cascade_rank(c, "N") >= 0) {
    double worst = fmin(bk->experts, (double)bk->top_k * (double)ph->batch *
                                         (double)ph->tokens);
    if (ph->experts > 0)
      out[n++] = (Setting){"X", (double)ph->experts};
    else if (ph->routing == ROUTE_WORST)
      out[n++] = (Setting){"X", worst};
  }
  return n;
}

bool net_block_cascade(const Net *net, int b, const Pass *ph, Cascade **c,
                       Shape **s, Diag *d) {
  const Block *bk = &net->blocks[b];
  const char *name = ph->run ? block_kind_run_spec(bk->kind, ph->decode)
                             : block_kind_spec(bk->kind, ph->decode);
  const EmbeddedFile *f = embedded_file(name);
  if (!f) {
    diag_error(d, name, (Loc){0, 0}, "not a shipped spec (the build is "
               "missing specs/layers/)");
    return false;
  }
  *c = spec_parse(name, (const char *)f->data, f->len, d);
  if (!*c)
    return false;
  /* The block's sizes are the model's; the phase's override the spec's
   * defaults, and a mixture's routing sizes come with the phase. */
  /* A size the spec has a default for (its params: eps, window) is a
   * setting over it; the others are the model's sizes. */
  Setting sizes[NET_MAX_SIZES], set[NET_MAX_SIZES + 6];
  int nsizes = 0, nset = 0;
  for (int i = 0; i < bk->nsizes; i++) {
    Setting st = {bk->names[i], bk->values[i]};
    if (cascade_param(*c, st.name) >= 0)
      set[nset++] = st;
    else
      sizes[nsizes++] = st;
  }
  ModelSizes model = {net->name, nsizes, sizes};
  nset += phase_settings(*c, bk, ph, set + nset);
  *s = shape_bind(*c, &model, set, nset, true, d);
  if (!*s) {
    cascade_free(*c);
    *c = NULL;
    return false;
  }
  return true;
}

/* Elements of C's weights under S: inputs that are no decode state and
 * whose size is the same under S2 (the same block with twice the tokens,
 * the batch and the cache). */
static double weights_of(const Cascade *c, const Shape *s, const Shape *s2) {
  double n = 0;
  for (int t = 0; t < c->ntensors; t++) {
    if (c->tensors[t].producer >= 0 || tensor_is_init_read(c, t) ||
        !tensor_is_read(c, t))
      continue;
    double e = shape_tensor_elems(s, t);
    if (e == shape_tensor_elems(s2, t))
      n += e;
  }
  return n;
}

bool net_block_weights(const Net *net, int b, bool active, double *elems,
                       Diag *d) {
  const Block *bk = &net->blocks[b];
  /* One token, and the same with twice the batch, the tokens and the
   * cache; a mixture touches as many experts in both: its K for what one
   * token reads, its E for what the model holds. */
  Pass ph = {.decode = false, .batch = 1, .tokens = 1, .cached = 1,
              .routing = ROUTE_UNIFORM, .capacity_factor = 1,
              .experts = active ? bk->top_k : bk->experts};
  Pass ph2 = ph;
  ph2.batch *= 2;
  ph2.tokens *= 2;
  ph2.cached *= 2;
  Cascade *c, *c2;
  Shape *s, *s2;
  if (!net_block_cascade(net, b, &ph, &c, &s, d))
    return false;
  if (!net_block_cascade(net, b, &ph2, &c2, &s2, d)) {
    shape_free(s);
    cascade_free(c);
    return false;
  }
  *elems = weights_of(c, s, s2);
  shape_free(s2);
  cascade_free(c2);
  shape_free(s);
  cascade_free(c);
  return true;
}

bool net_params(const Net *net, NetParams *p, Diag *d) {
  memset(p, 0, sizeof *p);
  for (int b = 0; b < net->nblocks; b++) {
    const Block *bk = &net->blocks[b];
    if (!net_block_weights(net, b, false, &p->block_total[b], d) ||
        !net_block_weights(net, b, true, &p->block_active[b], d))
      return false;
    double total = p->block_total[b], active = p->block_active[b];
    if (b == net->head && net->tied) {
      /* The head reads the embedding's table: only its norm is new. */
      double table = p->block_total[net->embed];
      total -= table;
      active -= table;
    }
    p->total += bk->copies * total;
    p->active += bk->copies * active;
  }
  return true;
}
