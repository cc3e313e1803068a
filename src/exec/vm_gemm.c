/* vm_gemm.c — the terms of a compiled Einsum (job.h) that are plain
 * contractions go to kernel_gemm: a product of two reads whose variables
 * fall into batch, row, column and reduced roles, each of one stride; and
 * the terms that reduce a long variable run a row at a time (vm_plan_row). */
#include "job.h"

#include <stdlib.h>
#include <string.h>

/* ---- plain contractions go to kernel_gemm ---- */

typedef struct Role {
  int n;
  int var[IR_MAX_VARS];
} Role;

/* One stride for a group of variables in one operand: they must be laid
 * out as one flattened dimension (outer stride = inner stride x extent). */
static bool flat_stride(const Job *j, const int64_t *lin, const Role *ro,
                        int64_t *stride, int64_t *extent) {
  *extent = 1;
  *stride = 0;
  if (ro->n == 0)
    return true;
  /* Order the role's variables by decreasing stride in this operand. */
  int idx[IR_MAX_VARS] = {0};
  for (int k = 0; k < ro->n; k++)
    idx[k] = ro->var[k];
  for (int a = 1; a < ro->n; a++)
    for (int b = a; b > 0 && lin[idx[b]] > lin[idx[b - 1]]; b--) {
      int t = idx[b];
      idx[b] = idx[b - 1];
      idx[b - 1] = t;
    }
  /* Variables of extent 1 take no room; the others must nest exactly. */
  int64_t expect = -1;
  for (int k = ro->n - 1; k >= 0; k--) {
    int v = idx[k];
    int64_t ext = j->reg.hi[v] - j->reg.lo[v];
    *extent *= ext;
    if (ext == 1)
      continue;
    if (expect < 0)
      *stride = lin[v];
    else if (lin[v] != expect)
      return false;
    expect = lin[v] * ext;
  }
  return true;
}

/* Do RO's variables nest in the same order in two layouts (LA, LB)? One
 * flattened index runs over them in both, so they must (batch (h, c) laid
 * out h-major in one operand and c-major in the other flattens in each,
 * but pairs the wrong batches). */
static bool same_nesting(const Job *j, const int64_t *la, const int64_t *lb,
                         const Role *ro) {
  for (int a = 0; a < ro->n; a++)
    for (int b = a + 1; b < ro->n; b++) {
      int u = ro->var[a], v = ro->var[b];
      bool unit = j->reg.hi[u] - j->reg.lo[u] == 1 ||
                  j->reg.hi[v] - j->reg.lo[v] == 1;
      if (!unit && (la[u] > la[v]) != (lb[u] > lb[v]))
        return false;
    }
  return true;
}

/* Can term T go to kernel_gemm (a plain contraction of two reads whose
 * variables flatten into M, N, K and batch dimensions)? Plans it if so. */
bool vm_plan_gemm(Job *j, Term *t) {
  const Expr *x = t->x;
  const Einsum *e = j->e;
  if (t->sign != 1 || (e->explicit_red && e->red != RED_SUM) ||
      !expr_is(x, OP_MUL) || x->a->kind != EX_READ ||
      x->b->kind != EX_READ)
    return false;
  const Acc *A = &j->acc[acc_index(j, x->a->acc)];
  const Acc *B = &j->acc[acc_index(j, x->b->acc)];
  if (A->nguard || B->nguard)
    return false;
  VarSet va = access_vars(A->a), vb = access_vars(B->a), vo = e->out_vars;
  Role m = {0}, n = {0}, k = {0}, bt = {0};
  for (int v = 0; v < e->nvars; v++) {
    bool ia = VARSET_HAS(va, v), ib = VARSET_HAS(vb, v), io = VARSET_HAS(vo, v);
    if (ia && ib && io)
      bt.var[bt.n++] = v;
    else if (ia && ib)
      k.var[k.n++] = v;
    else if (ia && io)
      m.var[m.n++] = v;
    else if (ib && io)
      n.var[n.n++] = v;
    else if (ia || ib || io)
      return false; /* a broadcast or a one-sided reduction */
  }
  Gemm g = {0};
  int64_t ext;
  int64_t dummy;
  if (!flat_stride(j, A->lin, &m, &g.a_m, &g.m) ||
      !flat_stride(j, A->lin, &k, &g.a_k, &g.k) ||
      !flat_stride(j, A->lin, &bt, &g.a_b, &g.batch) ||
      !flat_stride(j, B->lin, &k, &g.b_k, &ext) ||
      !flat_stride(j, B->lin, &n, &g.b_n, &g.n) ||
      !flat_stride(j, B->lin, &bt, &g.b_b, &dummy) ||
      !flat_stride(j, j->out_lin, &m, &g.c_m, &ext) ||
      !flat_stride(j, j->out_lin, &n, &g.c_n, &ext) ||
      !flat_stride(j, j->out_lin, &bt, &g.c_b, &ext) ||
      !same_nesting(j, A->lin, B->lin, &k) ||
      !same_nesting(j, A->lin, B->lin, &bt) ||
      !same_nesting(j, A->lin, j->out_lin, &bt) ||
      !same_nesting(j, A->lin, j->out_lin, &m) ||
      !same_nesting(j, B->lin, j->out_lin, &n))
    return false;
  if (g.k < 8 || g.m * g.n * g.k < 4096)
    return false; /* too small to be worth a call */
  g.accumulate = j->accumulate;
  t->gemm = g;
  return true;
}

/* Run a term planned for kernel_gemm over the current region: its operands
 * start at the region's first point. */
/* Term T's product over the current region: its operands start at the
 * region's first point. */
Gemm vm_gemm_at(const Job *j, const Term *t) {
  const Expr *x = t->x;
  const Acc *A = &j->acc[acc_index(j, x->a->acc)];
  const Acc *B = &j->acc[acc_index(j, x->b->acc)];
  int64_t oa = A->base, ob = B->base, oc = j->out_base;
  for (int v = 0; v < j->e->nvars; v++) {
    oa += A->lin[v] * j->reg.lo[v];
    ob += B->lin[v] * j->reg.lo[v];
    oc += j->out_lin[v] * j->reg.lo[v];
  }
  Gemm g = t->gemm;
  g.a_type = A->v->dtype;
  g.b_type = B->v->dtype;
  g.a = A->v->data ? (const void *)(A->v->data + oa) : A->v->half + oa;
  g.b = B->v->data ? (const void *)(B->v->data + ob) : B->v->half + ob;
  g.c = j->out->data + oc;
  return g;
}

void vm_run_gemm(const Job *j, Term *t) {
  Gemm g = vm_gemm_at(j, t);
  const Tensor *T = j->env->c->tensors;
  int ta = j->acc[acc_index(j, t->x->a->acc)].a->tensor;
  int tb = j->acc[acc_index(j, t->x->b->acc)].a->tensor;
  bool fixed_a = T[ta].producer < 0, fixed_b = T[tb].producer < 0;
  if (!t->pack && fixed_a != fixed_b && t->gemm_runs++ > 0)
    t->pack = kernel_gemm_pack(&g, fixed_b, j->env->pool);
  kernel_gemm_with(&g, t->pack, j->env->pool);
}

/* A reduced variable U of T, other than V, whose points continue V's in
 * every read (lin[u] = V's extent x lin[v]: Mamba-2's gated norm sums
 * LLY[b, i, p, q] over (p, q), 24 x 64 values one after another), and
 * that no index value of the term takes: V's row then runs on through
 * U's points as one row. -1 if there is none. */
static int row_fold(const Job *j, const Term *t, int v) {
  int64_t ext = j->reg.hi[v] - j->reg.lo[v];
  for (int i = 0; i < t->nins; i++)
    if (t->ins[i].op == I_VAR && t->ins[i].var == v)
      return -1;
  for (int u = 0; u < j->e->nvars; u++) {
    bool ok = u != v && VARSET_HAS(t->red, u);
    for (int a = 0; ok && a < j->nacc; a++)
      ok = j->acc[a].lin[u] == ext * j->acc[a].lin[v];
    for (int i = 0; ok && i < t->nins; i++)
      ok = !(t->ins[i].op == I_VAR && t->ins[i].var == u);
    if (ok)
      return u;
  }
  return -1;
}

/* A term runs a row at a time when it reduces a variable (with its fold,
 * row_fold) at least as long as the walk's chunk, along which one of its
 * reads is contiguous, and no read has a guard: a row's programs then
 * have whole chunks of lanes, where the walk's lanes would read values a
 * row apart. (A norm's sum over 768 values for a 512-token prompt took
 * 5.9 ms a row at a time from four chunks on, 0.9 ms from one; the gated
 * norm's over (p, q), 24 x 64, 23.5 ms unfolded, 2.2 ms folded.) */
void vm_plan_row(Job *j, Term *t) {
  if (t->red == 0)
    return;
  bool guarded = false;
  for (int i = 0; i < t->nins; i++)
    guarded = guarded ||
              (t->ins[i].op == I_LOAD && j->acc[t->ins[i].acc].nguard > 0);
  if (guarded)
    return;
  int64_t best = (int64_t)j->w.lanes - 1;
  for (int i = 0; i < t->nins; i++) {
    if (t->ins[i].op != I_LOAD)
      continue;
    const Acc *c = &j->acc[t->ins[i].acc];
    for (int v = 0; v < j->e->nvars; v++) {
      int fold = VARSET_HAS(t->red, v) ? row_fold(j, t, v) : -1;
      if (VARSET_HAS(t->red, v) && c->lin[v] == 1 &&
          row_length(j, v, fold) > best) {
        best = row_length(j, v, fold);
        t->row_var = v;
        t->row_fold = fold;
      }
    }
  }
  if (t->row_var < 0)
    return;
  if (!t->row_step) { /* both tables in one block, at row_step */
    size_t n = (size_t)j->nacc + 1;
    t->row_step = xcalloc(n, sizeof *t->row_step + sizeof *t->row_kind);
    t->row_kind = (AccKind *)(t->row_step + n);
  }
  for (int a = 0; a < j->nacc; a++) {
    int64_t l = j->acc[a].lin[t->row_var];
    t->row_kind[a] = l == 0 ? K_BCAST : l == 1 ? K_CONTIG : K_STRIDED;
    t->row_step[a] = l;
  }
}

