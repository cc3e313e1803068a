/* nest.c — an Einsum's loop nest as a mapping problem: the one
 * description the fusion level's mapping (group.c) and every level
 * inside it (levels.c) search over. */
#include "price.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_access(const Shape *s, const Access *a, MapTensor *m) {
  m->vars |= access_vars(a);
  m->ndims = a->n;
  for (int k = 0; k < a->n; k++) {
    const Index *ix = &a->idx[k];
    for (int t = 0; t < ix->nterms; t++) {
      int v = ix->var[t];
      double coef = ix->coef[t] ? fabs(shape_eval(s, ix->coef[t])) : 1;
      m->dim_vars[k] |= VARSET_BIT(v);
      m->dim_coef[k][v] = coef;
    }
  }
}

/* An empty tensor of ELEMS elements. Its coefficient table is left as is:
 * the search reads only the coefficients of each coordinate's variables,
 * which add_access sets. */
static void clear_tensor(MapTensor *m, double elems) {
  m->vars = 0;
  m->elems = elems;
  m->ndims = 0;
  memset(m->dim_vars, 0, sizeof m->dim_vars);
  m->output = m->dram = false;
}

void einsum_nest(const Ctx *x, int ei, MapProblem *p, int *tensor_of,
                 int *read_at) {
  const double *read_elems = x->touch[ei];
  const Shape *s = x->s;
  const Einsum *e = x->c->einsums[ei];
  p->ntensors = 0;
  p->outer = 0;
  p->nabove = 0;
  p->nvars = e->nvars < MAP_MAX_VARS ? e->nvars : MAP_MAX_VARS;
  for (int v = 0; v < p->nvars; v++)
    p->size[v] = (double)s->size[e->vars[v].rank];
  for (int k = 0; k < e->nreads; k++) {
    read_at[k] = -1;
    if (p->ntensors >= MAP_MAX_TENSORS - 1)
      continue;
    int t = e->reads[k]->tensor;
    int j = 0;
    while (j < p->ntensors && tensor_of[j] != t)
      j++;
    if (j == p->ntensors) {
      tensor_of[p->ntensors] = t;
      clear_tensor(&p->t[p->ntensors++], read_elems[k]);
    }
    read_at[k] = j;
    add_access(s, e->reads[k], &p->t[j]);
  }
  int out = e->out.tensor;
  tensor_of[p->ntensors] = out;
  MapTensor *mo = &p->t[p->ntensors++];
  clear_tensor(mo, shape_tensor_elems(s, out));
  mo->output = true;
  add_access(s, &e->out, mo);
}

/* Character C at AT of BUF (CAP bytes) where it leaves room for the end. */
static void put_char(char *buf, size_t cap, size_t at, char c) {
  if (at + 1 < cap)
    buf[at] = c;
}

/* Append " NAME/TILE" (no blank first) to BUF of CAP bytes at LEN, as
 * snprintf("%s%s/%.0f") would (the new length, possibly past CAP), but
 * without its cost for the whole numbers tiles are: an evaluation writes
 * one per loop. */
static size_t put_tile(char *buf, size_t cap, size_t len, bool blank,
                       const char *name, double tile) {
  if (!(tile >= 0 && tile < 1e15 && tile == floor(tile)))
    return len + (size_t)snprintf(buf + len, cap - len, "%s%s/%.0f",
                                  blank ? " " : "", name, tile);
  char digits[24];
  int nd = 0;
  for (long long t = (long long)tile; nd == 0 || t > 0; t /= 10)
    digits[nd++] = (char)('0' + t % 10);
  /* Written in place, as far as BUF has room (then cut and ended, as
   * snprintf would). */
  size_t at = len;
  if (blank)
    put_char(buf, cap, at++, ' ');
  for (const char *c = name; *c; c++)
    put_char(buf, cap, at++, *c);
  put_char(buf, cap, at++, '/');
  while (nd > 0)
    put_char(buf, cap, at++, digits[--nd]);
  if (len < cap)
    buf[at < cap ? at : cap - 1] = 0;
  return at;
}

void mapping_text(const Einsum *e, const Mapping *m, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int j = 0; j < m->norder && len + 24 < cap; j++) {
    int v = m->order[j];
    len = put_tile(buf, cap, len, j > 0, e->vars[v].name, m->tile[v]);
  }
  if (len == 0)
    snprintf(buf, cap, "-");
}
