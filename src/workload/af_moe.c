/* af_moe.c — an AccelForge mixture of experts' copies of tokens to the
 * experts and back, translated as the even split the file describes (the
 * section's comment says how). */
#include "af.h"

#include <stdlib.h>

/* ---- mixture of experts: the scatter to experts and the gather back ----
 *
 * AccelForge's MoE feedforward copies tokens to experts and back:
 *
 *   Z_per_expert[b, x, xt, g] = Z[b, m, g]       (is_copy_operation)
 *   FFB[b, m, j] = FFD[b, x, xt, j]              (is_copy_operation)
 *
 * over X active experts of XT token slots each, "tokens split evenly
 * across experts": X*XT = k*M slots for M tokens routed to k experts
 * each. As an Einsum of ours, the first would sum over m and repeat the
 * sum along x, xt. The translation writes the even split out instead, as
 * a round robin: slot s = XT*x + xt holds copy r of token m where
 * s = M*r + m, so each expert gets XT tokens and a token's k copies go to
 * k experts. Each copy then reads through an affine index, exact because
 * a read outside its tensor reads zero, so only one term of each sum is
 * not zero:
 *
 *   Z_per_expert[b, x, xt, g] = Z[b, XT*x + xt - M*route, g] :: sum(route)
 *   FFB[b, m, j] = FFD[b, q*route + xoff, c*route + m - XT*xoff, j]
 *                  :: sum(xoff, route)
 *
 * route over the K = ceil(X*XT / M) copies of a token (its own rank,
 * ROUTE), xoff over the experts copy route of a token can be in, from
 * q*route on (gather_indices). With K = 1 the scatter is a plain copy;
 * with XT = 1 the gather reads FFD[b, M*route + m - xt, xt, j], the
 * combine's K additions exactly.
 *
 * The traffic is the layer's (the scatter reads each token once and
 * writes X*XT slots; the gather reads the slots, writes the tokens) and
 * the experts' Einsums run over the X*XT slots, the tokens they receive.
 * What the model counts beyond the layer (the scatter's sum over route,
 * the gather's over the experts tried) are additions, said in a note. */

enum { AF_MAX_ROUTE_NAMES = 16 };

static const char ROUTE_WHY[] = "copies of a token (MoE even split)";
static const char XOFF_WHY[] = "experts a copy of a token may be in, from "
                               "the first of its route (MoE gather)";

static double root_size(const Af *af, const AfAccess *a, int k) {
  const AfTensor *T = &af->tensors[tensor_find(af, a->tensor)];
  return af->ranks[rank_root(af, T->rank[k])].value;
}

static int root_of(const Af *af, const AfAccess *a, int k) {
  return rank_root(af, af->tensors[tensor_find(af, a->tensor)].rank[k]);
}

/* Does E use a variable called V? */
static bool uses_var(const AfEinsum *e, const char *v) {
  for (int a = -1; a < e->nin; a++) {
    const AfAccess *x = a < 0 ? &e->out : &e->in[a];
    for (int k = 0; k < x->n; k++)
      if (strcmp(x->expr[k], v) == 0)
        return true;
  }
  return false;
}

/* A window variable free in E, over a rank of its own of size N: BASE
 * over rank BASE in upper case (BASE2, ... if that name is taken, by a
 * variable of E or by a rank of another size or meaning). */
static const char *window_var(Af *af, const AfEinsum *e, const char *base,
                              double n, const char *why) {
  for (int i = 1; i <= AF_MAX_ROUTE_NAMES; i++) {
    char v[32];
    if (i == 1)
      snprintf(v, sizeof v, "%s", base);
    else
      snprintf(v, sizeof v, "%s%d", base, i);
    const char *name = arena_strdup(&af->ar, v);
    if (uses_var(e, name))
      continue;
    char *rank = upper(af, name);
    int r = rank_find(af, rank);
    if (r >= 0 && !(af->ranks[r].why == why && af->ranks[r].value == n))
      continue;
    if (r < 0) {
      r = rank_get(af, rank, e->loc);
      af->ranks[r].value = n;
      af->ranks[r].why = why;
    }
    return name;
  }
  fail(af, e->loc, "%s: no free name for a variable over %s", e->name, why);
  return NULL;
}

/* The coordinates of IN whose variable OUT lacks (LOST, in IN's order),
 * and those of OUT whose variable IN lacks (ADDED); at most 4 of each. */
static void copy_diff(const AfEinsum *e, int *lost, int *nlost, int *added,
                      int *nadded) {
  const AfAccess *in = &e->in[0], *out = &e->out;
  *nlost = *nadded = 0;
  for (int pass = 0; pass < 2; pass++) {
    const AfAccess *a = pass ? out : in, *b = pass ? in : out;
    int *list = pass ? added : lost, *n = pass ? nadded : nlost;
    for (int k = 0; k < a->n; k++) {
      bool kept = false;
      for (int j = 0; j < b->n; j++)
        kept = kept || strcmp(a->expr[k], b->expr[j]) == 0;
      if (!kept && *n < 4)
        list[(*n)++] = k;
      else if (!kept)
        ++*n;
    }
  }
}

/* Say what scatter E became: V holds its token, expert and slot
 * variables, the token and slot ranks' names and the copies' variable
 * (NULL: one copy); SIZE M, X, XT and K. */
static void note_scatter(Af *af, const AfEinsum *e, const char *const v[6],
                         const double size[4]) {
  double M = size[0], X = size[1], XT = size[2], K = size[3];
  const char *r = v[5];
  Buf b = {0};
  buf_printf(&b, "%s: the MoE scatter: %g tokens (%s) split evenly, round "
             "robin, over %g experts (%s) of %g slots (%s): ", e->name, M,
             v[0], X, v[1], XT, v[2]);
  if (r)
    buf_printf(&b, "copy %s of token %s in slot %s*%s + %s = %s*%s + %s, "
               "%g copies each; the model counts the sum over %s as "
               "additions (the layer adds nothing)", r, v[0], v[4], v[1],
               v[2], v[3], r, v[0], K, r);
  else
    buf_printf(&b, "token %s in slot %s*%s + %s = %s, one copy each", v[0],
               v[4], v[1], v[2], v[0]);
  tr_note(af->t, "%s", b.s);
  buf_free(&b);
  if (X * XT != K * M)
    tr_note(af->t, "%s: %g slots are no whole number of copies of %g "
            "tokens: the last %g slots hold a copy %g of tokens 0 to %g "
            "(the file's sizes round the slots up; they are priced as "
            "sized)", e->name, X * XT, M, X * XT - (K - 1) * M, K,
            X * XT - (K - 1) * M - 1);
}

/* Z_per_expert[b, x, xt, g] = Z[b, m, g]: the input loses one plain
 * variable (the token), the output gains two (expert, slot, in order).
 * 0 if E is no scatter, 1 translated, -1 failed. */
int af_moe_scatter(Af *af, AfEinsum *e) {
  int lost[4], added[4], nl, na;
  copy_diff(e, lost, &nl, added, &na);
  AfAccess *in = &e->in[0];
  if (nl != 1 || na != 2 || !in->plain[lost[0]] ||
      af->nscatters == (int)(sizeof af->scatters / sizeof af->scatters[0]))
    return 0;
  int kt = lost[0];
  double M = root_size(af, in, kt), X = root_size(af, &e->out, added[0]),
         XT = root_size(af, &e->out, added[1]);
  const char *m = in->expr[kt], *x = e->out.expr[added[0]],
             *xt = e->out.expr[added[1]];
  if (X * XT < M) {
    fail(af, e->loc, "%s: a scatter of %g tokens (%s) to %g experts (%s) "
         "of %g slots (%s) leaves tokens out", e->name, M, m, X, x, XT, xt);
    return -1;
  }
  double K = ceil(X * XT / M);
  const char *nm = in->rank[kt], *nxt = e->out.rank[added[1]];
  Buf ix = {0};
  buf_printf(&ix, "%s*%s + %s", nxt, x, xt);
  const char *r = K > 1 ? window_var(af, e, "route", K, ROUTE_WHY) : NULL;
  if (K > 1 && !r) {
    buf_free(&ix);
    return -1;
  }
  if (r) {
    buf_printf(&ix, " - %s*%s", nm, r);
    e->reduce = r;
  }
  in->expr[kt] = arena_strdup(&af->ar, ix.s);
  in->plain[kt] = false;
  buf_free(&ix);
  af->scatters[af->nscatters++] =
      (AfScatter){root_of(af, in, kt), root_of(af, &e->out, added[0]),
                  root_of(af, &e->out, added[1])};
  note_scatter(af, e, (const char *[]){m, x, xt, nm, nxt, r},
               (const double[]){M, X, XT, K});
  return 1;
}

/* The gather's indices of the expert (EX) and the slot (SL), from
 * XT*x + xt = M*route + m, and the variables they sum over (RED), for a
 * token rank named NM and slot rank NXT. With XT = 1 the expert is
 * M*route + m - xt (xt is 0: no expert is tried in vain). Else copy route
 * of token m is in expert floor((M*route + m) / XT): from q*route on
 * (q = floor(M/XT)), within the next U experts, tried by a variable over
 * them (x itself, over all X, with one copy or when q = 0); *TRIED is
 * how many. SIZE: M, X, XT, K. False if no name is free. */
static bool gather_indices(Af *af, const AfEinsum *e, const char *const v[4],
                           const char *nm, const char *nxt,
                           const double size[3], Buf *ex, Buf *sl, Buf *red,
                           double *tried) {
  const char *m = v[0], *x = v[1], *xt = v[2], *r = v[3];
  double M = size[0], X = size[1], XT = size[2], K = size[3];
  *tried = 1;
  if (XT == 1) {
    if (r)
      buf_printf(ex, "%s*%s + ", nm, r);
    buf_printf(ex, "%s - %s", m, xt);
    buf_printf(sl, "%s", xt);
    buf_printf(red, "%s%s%s", xt, r ? ", " : "", r ? r : "");
    return true;
  }
  double q = floor(M / XT), c = M - XT * q;
  *tried = r && q > 0 ? floor((M * K - 1) / XT) - q * (K - 1) + 1 : X;
  const char *u = x;
  if (r && q > 0) {
    u = window_var(af, e, "xoff", *tried, XOFF_WHY);
    if (!u)
      return false;
    if (q == 1)
      buf_printf(ex, "%s + %s", r, u);
    else
      buf_printf(ex, "%.17g*%s + %s", q, r, u);
  } else {
    buf_printf(ex, "%s", x);
  }
  if (r && c == M)
    buf_printf(sl, "%s*%s + ", nm, r);
  else if (r && c == 1)
    buf_printf(sl, "%s + ", r);
  else if (r && c > 0)
    buf_printf(sl, "%.17g*%s + ", c, r);
  buf_printf(sl, "%s - %s*%s", m, nxt, u);
  buf_printf(red, "%s%s%s", u, r ? ", " : "", r ? r : "");
  return true;
}

/* Say what gather E became: V as for note_scatter; K copies, TRIED
 * experts tried per copy. */
static void note_gather(Af *af, const AfEinsum *e, const char *const v[6],
                        double K, double tried) {
  const char *r = v[5];
  Buf b = {0};
  buf_printf(&b, "%s: the MoE gather: token %s sums its %g cop%s, copy %s "
             "in slot %s*%s + %s = ", e->name, v[0], K, K > 1 ? "ies" : "y",
             r ? r : "0", v[4], v[1], v[2]);
  if (r)
    buf_printf(&b, "%s*%s + ", v[3], r);
  buf_printf(&b, "%s", v[0]);
  if (tried > 1)
    buf_printf(&b, "; the model counts an addition for each of the %g "
               "experts tried per copy (the combine's own: one)", tried);
  tr_note(af->t, "%s", b.s);
  buf_free(&b);
}

/* FFB[b, m, j] = FFD[b, x, xt, j] after a scatter to x, xt: the input
 * loses the scatter's expert and slot variables (in that order), the
 * output gains its token rank. 0 if E is no such gather, 1 translated,
 * -1 failed. */
int af_moe_gather(Af *af, AfEinsum *e) {
  int lost[4], added[4], nl, na;
  copy_diff(e, lost, &nl, added, &na);
  AfAccess *in = &e->in[0];
  if (nl != 2 || na != 1 || !in->plain[lost[0]] || !in->plain[lost[1]])
    return 0;
  const AfScatter *sc = NULL;
  for (int i = 0; i < af->nscatters && !sc; i++)
    if (af->scatters[i].expert == root_of(af, in, lost[0]) &&
        af->scatters[i].slot == root_of(af, in, lost[1]) &&
        af->scatters[i].token == root_of(af, &e->out, added[0]))
      sc = &af->scatters[i];
  if (!sc)
    return 0;
  double M = af->ranks[sc->token].value, X = af->ranks[sc->expert].value,
         XT = af->ranks[sc->slot].value, K = ceil(X * XT / M);
  const char *r = K > 1 ? window_var(af, e, "route", K, ROUTE_WHY) : NULL;
  if (K > 1 && !r)
    return -1;
  const char *v[4] = {e->out.expr[added[0]], in->expr[lost[0]],
                      in->expr[lost[1]], r};
  const double size[4] = {M, X, XT, K};
  Buf ex = {0}, sl = {0}, red = {0};
  double tried;
  bool ok = gather_indices(af, e, v, e->out.rank[added[0]], in->rank[lost[1]],
                           size, &ex, &sl, &red, &tried);
  if (ok) {
    in->plain[lost[0]] = strcmp(ex.s, v[1]) == 0;
    in->plain[lost[1]] = strcmp(sl.s, v[2]) == 0;
    in->expr[lost[0]] = arena_strdup(&af->ar, ex.s);
    in->expr[lost[1]] = arena_strdup(&af->ar, sl.s);
    e->reduce = arena_strdup(&af->ar, red.s);
    note_gather(af, e, (const char *[]){v[0], v[1], v[2],
                                        e->out.rank[added[0]],
                                        in->rank[lost[1]], r},
                K, tried);
  }
  buf_free(&ex);
  buf_free(&sl);
  buf_free(&red);
  return ok ? 1 : -1;
}

