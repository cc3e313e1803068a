/* span.c — which elements of a tensor an access touches over a box of its
 * Einsum's iteration space: one rule for the model's traffic and the
 * executor's byte counts. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void region_full(const Shape *s, const Einsum *e, Region *r) {
  for (int v = 0; v < e->nvars; v++) {
    r->lo[v] = 0;
    r->hi[v] = s->size[e->vars[v].rank];
  }
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a < 0 ? -a : a;
}

static int64_t coef_of(const Shape *s, const Index *ix, int t) {
  return ix->coef[t] ? (int64_t)llround(shape_eval(s, ix->coef[t])) : 1;
}

/* The values of IX over R: from its least to its greatest value in steps
 * of the coefficients' gcd. Exact when the terms, sorted by coefficient,
 * leave no gap (each coefficient at most one step past what the smaller
 * terms reach): i+f, Q*p+q, 2*y+u with u < 2. An index with gaps (3*y+u,
 * u < 2) is taken as this hull. */
Span index_span(const Shape *s, const Index *ix, const Region *r) {
  int64_t lo = ix->off ? (int64_t)llround(shape_eval(s, ix->off)) : 0;
  int64_t hi = lo, g = 0;
  for (int t = 0; t < ix->nterms; t++) {
    int64_t c = coef_of(s, ix, t);
    int v = ix->var[t];
    if (r->hi[v] <= r->lo[v])
      return (Span){0, 1, 0};
    if (c >= 0) {
      lo += c * r->lo[v];
      hi += c * (r->hi[v] - 1);
    } else {
      lo += c * (r->hi[v] - 1);
      hi += c * r->lo[v];
    }
    if (r->hi[v] - r->lo[v] > 1)
      g = gcd64(g, c);
  }
  if (g == 0)
    g = 1;
  return (Span){lo, g, (hi - lo) / g + 1};
}

Span span_clip(Span p, int64_t size) {
  if (p.count <= 0)
    return (Span){0, 1, 0};
  int64_t last = p.first + p.step * (p.count - 1);
  int64_t first = p.first;
  if (first < 0)
    first += p.step * ((-first + p.step - 1) / p.step);
  if (last > size - 1)
    last -= p.step * ((last - (size - 1) + p.step - 1) / p.step);
  if (first > last)
    return (Span){0, 1, 0};
  return (Span){first, p.step, (last - first) / p.step + 1};
}

void access_spans(const Shape *s, const Access *a, const Region *r,
                  Span *dims) {
  const Tensor *T = &s->c->tensors[a->tensor];
  for (int k = 0; k < a->n; k++)
    dims[k] = span_clip(index_span(s, &a->idx[k], r), s->size[T->ranks[k]]);
}

double spans_elems(const Span *dims, int n) {
  double e = 1;
  for (int k = 0; k < n; k++)
    e *= (double)dims[k].count;
  return e;
}

/* The common values of two progressions (a progression again): x = a.first
 * + i a.step = b.first + j b.step, solved by the extended Euclid. */
static Span span_meet(Span a, Span b) {
  if (a.count <= 0 || b.count <= 0)
    return (Span){0, 1, 0};
  int64_t lo = a.first > b.first ? a.first : b.first;
  int64_t ahi = a.first + a.step * (a.count - 1);
  int64_t bhi = b.first + b.step * (b.count - 1);
  int64_t hi = ahi < bhi ? ahi : bhi;
  if (lo > hi)
    return (Span){0, 1, 0};
  /* Solve x = a.first (mod a.step), x = b.first (mod b.step). */
  int64_t g = gcd64(a.step, b.step);
  int64_t diff = b.first - a.first;
  if (diff % g != 0)
    return (Span){0, 1, 0};
  /* Inverse of (a.step / g) modulo (b.step / g). */
  int64_t m = b.step / g, x0 = 0;
  if (m > 1) {
    int64_t r0 = (a.step / g) % m, r1 = m, s0 = 1, s1 = 0;
    while (r1) {
      int64_t q = r0 / r1, t = r0 - q * r1;
      r0 = r1, r1 = t;
      t = s0 - q * s1;
      s0 = s1, s1 = t;
    }
    int64_t k = ((diff / g) % m) * (s0 % m) % m;
    if (k < 0)
      k += m;
    x0 = a.first + k * a.step;
  } else {
    x0 = a.first;
  }
  int64_t step = a.step / g * b.step; /* lcm */
  /* The first solution at or above lo. */
  int64_t first = x0;
  if (first < lo)
    first += step * ((lo - first + step - 1) / step);
  else
    first -= step * ((first - lo) / step);
  if (first > hi)
    return (Span){0, 1, 0};
  return (Span){first, step, (hi - first) / step + 1};
}

static bool same_spans(const Span *a, const Span *b, int n) {
  for (int k = 0; k < n; k++)
    if (a[k].first != b[k].first || a[k].step != b[k].step ||
        a[k].count != b[k].count)
      return false;
  return true;
}

/* Inclusion and exclusion over the subsets of the boxes from K on, with
 * CUR the intersection so far (SIGN its parity). */
static double union_rec(const Span (*box)[IR_MAX_RANKS], int n, int ndims,
                        int k, const Span *cur, int depth) {
  double total = 0;
  for (int i = k; i < n; i++) {
    Span meet[IR_MAX_RANKS];
    double e = 1;
    for (int d = 0; d < ndims; d++) {
      meet[d] = depth ? span_meet(cur[d], box[i][d]) : box[i][d];
      e *= (double)meet[d].count;
    }
    if (e == 0)
      continue;
    total += e - union_rec(box, n, ndims, i + 1, meet, depth + 1);
  }
  return total;
}

double spans_union(const Span (*box)[IR_MAX_RANKS], int n, int ndims) {
  /* Drop empty and repeated boxes (a tensor read alike by many members). */
  Span (*u)[IR_MAX_RANKS] = xcalloc((size_t)n + 1, sizeof *u);
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (spans_elems(box[i], ndims) == 0)
      continue;
    bool dup = false;
    for (int j = 0; j < m && !dup; j++)
      dup = same_spans(u[j], box[i], ndims);
    if (!dup)
      memcpy(u[m++], box[i], sizeof *u);
  }
  double total = union_rec((const Span(*)[IR_MAX_RANKS])u, m, ndims, 0, NULL,
                           0);
  free(u);
  return total;
}
