/* bill.c — what each Einsum is charged off chip (docs/model.md §3): its
 * DRAM bytes, by class (an intermediate's or the rest's), recorded at the
 * off-chip level and into the per-tensor totals; the plan's geometry's
 * share of them; and what a group's member was billed, kept by a group
 * pricer from one spill variant to the next so that a variant prices
 * again only the members whose bill it changes (members.c, eval.c). */
#include "price.h"

#include <stdlib.h>
#include <string.h>

void charge_einsum(const Ctx *x, EinsumEval *r, int t, double n, bool write,
                   bool intra) {
  double b = n * x->word;
  bool inter = x->inter[t] && !intra;
  if (write) {
    r->write += b;
    *(inter ? &r->inter_write : &r->intra_write) += b;
  } else {
    r->read += b;
    *(inter ? &r->inter_read : &r->intra_read) += b;
  }
  level_add(x, r, 0, t, write ? 0 : b, write ? b : 0);
}

void charge_total(const Ctx *x, int t, double n, bool write) {
  double b = n * x->word;
  if (!x->ev || x->no_totals)
    return;
  (write ? x->ev->tensor_write : x->ev->tensor_read)[t] += b;
}

void charge(const Ctx *x, EinsumEval *r, int t, double n, bool write,
            bool intra) {
  charge_einsum(x, r, t, n, write, intra);
  charge_total(x, t, n, write);
}

void charges_apply(const Ctx *x, EinsumEval *r, const Charges *l) {
  for (int k = 0; k < l->n; k++)
    charge_einsum(x, r, l->c[k].t, l->c[k].n, l->c[k].write, l->c[k].intra);
}

void charges_total(const Ctx *x, const Charges *l) {
  if (x->no_totals)
    return;
  for (int k = 0; k < l->n; k++)
    charge_total(x, l->c[k].t, l->c[k].n, l->c[k].write);
}

void geometry_traffic(const Ctx *x, int e, EinsumEval *r, bool moves,
                      bool state, Charges *log) {
  const Plan *p = x->plan;
  for (int k = x->xfer_at[e]; k < x->xfer_at[e + 1]; k++) {
    const Transfer *t = &p->xfers[x->xfer_ord[k]];
    bool is_state = t->kind == XFER_STATE || t->kind == XFER_STATE_OUT;
    if (is_state && !x->o.state_io)
      continue;
    double b = t->elems * x->word;
    if (x->inter[t->tensor] && !is_state)
      r->ideal_inter += b;
    else
      r->ideal_intra += b;
    if (!(moves && !is_state) && !(state && is_state))
      continue;
    bool write = t->kind == XFER_WRITE || t->kind == XFER_STATE_OUT;
    charge_einsum(x, r, t->tensor, t->elems, write, is_state);
    if (log)
      charges_push(log, 0, t->tensor, t->elems, write, is_state);
    else
      charge_total(x, t->tensor, t->elems, write);
  }
}

void member_restart(const Ctx *x, int i, EinsumEval *r) {
  if (!x->base)
    return;
  Eval *ev = x->ev;
  *r = x->base[i];
  memset(&ev->ntuse[(size_t)r->einsum * (size_t)ev->nlevels], 0,
         (size_t)ev->nlevels * sizeof *ev->ntuse);
}

/* ---- a member's bill ---- */

void billed_facts(Billed *b, const Mapping *m, int nt, double capacity) {
  b->norder = m->norder;
  for (int j = 0; j < m->norder; j++) {
    b->order[j] = m->order[j];
    b->tile[j] = m->tile[m->order[j]];
  }
  b->coarsened = m->coarsened;
  b->pinned = m->pinned;
  b->nt = nt;
  b->footprint = m->footprint;
  b->capacity = capacity;
  b->fits = m->fits;
}

bool charges_same(const Charges *a, const Charges *b) {
  if (a->n != b->n)
    return false;
  for (int k = 0; k < a->n; k++) {
    const Charge *p = &a->c[k], *q = &b->c[k];
    if (p->t != q->t || p->n != q->n || p->write != q->write ||
        p->intra != q->intra)
      return false;
  }
  return true;
}

bool billed_same(const Billed *a, const Billed *b) {
  if (!a->set || !b->set || a->norder != b->norder ||
      a->coarsened != b->coarsened || a->pinned != b->pinned ||
      a->nt != b->nt || a->footprint != b->footprint ||
      a->capacity != b->capacity || a->fits != b->fits)
    return false;
  for (int j = 0; j < a->norder; j++)
    if (a->order[j] != b->order[j] || a->tile[j] != b->tile[j])
      return false;
  return charges_same(&a->own, &b->own) && charges_same(&a->extra, &b->extra);
}

void billed_free(Billed *b, int n) {
  for (int i = 0; b && i < n; i++) {
    free(b[i].geo.c);
    free(b[i].own.c);
    free(b[i].extra.c);
  }
}
