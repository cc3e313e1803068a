/* search.c — the dynamic program over contiguous groupings (search.h),
 * the named designs beside it, and the bound. */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OBJECTIVE_ROW(id, name, unit, column) {name, unit, column},
static const struct {
  const char *name, *unit, *column;
} objectives[] = {SEARCH_OBJECTIVES(OBJECTIVE_ROW)};
#undef OBJECTIVE_ROW
_Static_assert(sizeof objectives / sizeof objectives[0] == SO_COUNT,
               "a row per objective");

const char *search_objective_name(SearchObjective o) {
  return objectives[o].name;
}

const char *search_objective_unit(SearchObjective o) {
  return objectives[o].unit;
}

const char *search_objective_column(SearchObjective o) {
  return objectives[o].column;
}

bool search_objective_from_name(const char *name, SearchObjective *o) {
  for (int i = 0; i < SO_COUNT; i++)
    if (strcmp(objectives[i].name, name) == 0) {
      *o = (SearchObjective)i;
      return true;
    }
  return false;
}

/* ---- figures ---- */

/* What the program adds up over groups: seconds, joules, bytes. */
typedef struct Cost {
  double lat, energy, traffic;
} Cost;

static double figure_of(Cost c, SearchObjective o) {
  switch (o) {
  case SO_LATENCY:
    return c.lat;
  case SO_ENERGY:
    return c.energy;
  case SO_EDP:
    return c.lat * c.energy;
  case SO_TRAFFIC:
  case SO_COUNT:
    break;
  }
  return c.traffic;
}

static Cost eval_cost(const Eval *ev) {
  return (Cost){ev->seconds, ev->energy_pj * 1e-12, ev->read + ev->write};
}

double search_figure(const Eval *ev, SearchObjective o) {
  return figure_of(eval_cost(ev), o);
}

/* The two additive figures a prefix keeps the front of: the objective's,
 * then the one that breaks its ties (EDP: both of its factors). */
static void key_of(Cost c, SearchObjective o, double *k1, double *k2) {
  switch (o) {
  case SO_ENERGY:
    *k1 = c.energy, *k2 = c.lat;
    return;
  case SO_TRAFFIC:
    *k1 = c.traffic, *k2 = c.lat;
    return;
  default:
    *k1 = c.lat, *k2 = c.energy;
  }
}

/* ---- one candidate group ---- */

typedef struct Ctx {
  const Cascade *c;
  const Shape *s;
  const Arch *a;
  const Pair *pairs;
  const Nodes *nodes;
  ModelOpts o;
  Design design; /* the row that prices a partition: no baseline field */
  MapMemo *memo;
  Diag *d;
  int *group_of; /* scratch, per Einsum */
  long budget;   /* candidate groups it may price (0: all) */
  const SearchControl *ctl;
  double t0; /* when it started */
  SearchResult *r;
  /* Every priced spill variant: the tensors it sends off chip by choice
   * (a slice of chosen_t), numbered as the program's entries cite them. */
  int nchosen, cap_chosen, nchosen_t, cap_chosen_t;
  struct Chosen *chosen;
  int *chosen_t;
  /* The candidate fusion levels (level.c), each group priced at each:
   * the levels' pricing, the architecture's own first. A is the given
   * architecture, which prices a plan mixing them (each group names its
   * level: docs/search.md, "The space", item 6). */
  int nlev;
  struct Level *lev;
  Regroup *regroup; /* each candidate group's plan, every other node
                       alone, patched in time of the group */
  EdgeIndex out; /* the cascade's edges by producer (spill_candidates) */
  GroupMemo *groups; /* the caller's (SearchControl), or NULL */
  GroupMemoStats kept; /* what this search took from it, and priced */
} Ctx;

/* Pricing groups alone at one fusion level (program): the model's pricer
 * on the level's architecture; per node, the layer's clock where a group
 * starting there starts (every node before it alone) and its binding's
 * budget count alone, and that count over every node. */
typedef struct Level {
  const SearchLevel *at;
  GroupPricer *pricer;
  double *start_at;
  int *capped;
  long capped_all;
  Shelf *shelf; /* its groups in the memo (Ctx.groups), or NULL */
} Level;

typedef struct Chosen {
  int first, n; /* in Ctx.chosen_t */
} Chosen;

/* Number the groups of a partition in run order: node k starts a new
 * group where START[k]. */
static Plan *plan_of(Ctx *x, const bool *start) {
  int g = -1;
  for (int k = 0; k < x->nodes->n; k++) {
    g += start[k];
    const Node *nd = &x->nodes->nodes[k];
    for (int i = 0; i < nd->n; i++)
      x->group_of[nd->einsums[i]] = g;
  }
  Diag ignore = {0}; /* a grouping that cannot run is no candidate */
  return fusion_plan_groups(x->c, x->s, ST_FULL, x->group_of, &ignore);
}

/* ---- spill variants ---- */

/* A group's candidates for going off chip by choice: every subset of at
 * most this many; past it, none, the distance rule's and each one alone
 * (docs/search.md). */
enum { SPILL_SUBSETS_MAX = 4, SPILL_CAND_MAX = 64 };

/* Group G's intermediates that may go off chip by choice, into CAND (at
 * most SPILL_CAND_MAX): a member's output handed over to another member
 * (an edge that orders them) and never off chip otherwise -- what the
 * model holds for the group and could send off (group.c). OUT: the
 * cascade's edges by producer (an edge's producer is its tensor's). */
static int spill_candidates(const Cascade *c, const EdgeIndex *out,
                            const Plan *p, int g, int *cand) {
  int k = 0;
  const Group *gr = &p->groups[g];
  for (int m = 0; m < gr->n && k < SPILL_CAND_MAX; m++) {
    int e = gr->einsums[m], t = c->einsums[e]->out.tensor;
    int from = c->tensors[t].producer;
    bool handed = false;
    for (int q = from < 0 ? 0 : out->at[from];
         from >= 0 && q < out->at[from + 1] && !handed; q++) {
      const Edge *ed = &c->edges[out->ord[q]];
      handed = ed->tensor == t && ed->consumer != e &&
               edge_orders(c, ed) && p->group_of[ed->consumer] == g;
    }
    if (handed && p->onchip[t])
      cand[k++] = t;
  }
  return k;
}

/* Variants of a group with K candidates (ideal pays no spill: one). */
static int variants_of(const ModelOpts *o, int k) {
  if (o->accounting != ACCOUNT_ACHIEVED || k == 0)
    return 1;
  return k <= SPILL_SUBSETS_MAX ? 1 << k : k + 2;
}

int search_spill_variants(const Cascade *c, const Plan *p, int g,
                          const ModelOpts *o) {
  int cand[SPILL_CAND_MAX];
  EdgeIndex out = cascade_edge_index(c, EDGES_BY_PRODUCER);
  int k = spill_candidates(c, &out, p, g, cand);
  edge_index_free(&out);
  return variants_of(o, k);
}

/* Variant V of K candidates CAND into SPILLED: a subset (its bits), or
 * past SPILL_SUBSETS_MAX none (0), the distance rule's (1: OUT, the
 * cascade's edges by producer, gives each candidate's readers), or
 * candidate V - 2 alone. */
static void variant_apply(const Cascade *c, const EdgeIndex *out,
                          const ModelOpts *o, const int *cand, int k, int v,
                          bool *spilled) {
  for (int j = 0; j < k; j++)
    spilled[cand[j]] =
        k <= SPILL_SUBSETS_MAX ? (v >> j & 1) != 0
        : v == 1 ? model_distance_spills(c, out, cand[j], o->spill_distance)
                 : v == j + 2;
}

void search_spill_variant(const Cascade *c, const Plan *p, int g,
                          const ModelOpts *o, int v, bool *spilled) {
  int cand[SPILL_CAND_MAX];
  EdgeIndex out = cascade_edge_index(c, EDGES_BY_PRODUCER);
  int k = spill_candidates(c, &out, p, g, cand);
  if (v > 0)
    variant_apply(c, &out, o, cand, k, v, spilled);
  edge_index_free(&out);
}

/* Record the tensors SPILLED names among CAND as variant number (the
 * return) of X's store. */
static int variant_store(Ctx *x, const bool *spilled, const int *cand,
                         int k) {
  Chosen ch = {x->nchosen_t, 0};
  for (int j = 0; j < k; j++)
    if (spilled[cand[j]]) {
      VEC_PUSH(x->chosen_t, x->nchosen_t, x->cap_chosen_t, cand[j]);
      ch.n++;
    }
  VEC_PUSH(x->chosen, x->nchosen, x->cap_chosen, ch);
  return x->nchosen - 1;
}

/* The N tensors T as a variant of X's store (a kept one: variant_store
 * stored them so). */
static int variant_store_list(Ctx *x, const int *t, int n) {
  Chosen ch = {x->nchosen_t, n};
  for (int q = 0; q < n; q++)
    VEC_PUSH(x->chosen_t, x->nchosen_t, x->cap_chosen_t, t[q]);
  VEC_PUSH(x->chosen, x->nchosen, x->cap_chosen, ch);
  return x->nchosen - 1;
}

static int spilled_count(const bool *spilled, const int *cand, int k) {
  int n = 0;
  for (int j = 0; j < k; j++)
    n += spilled[cand[j]];
  return n;
}

/* ---- a group's prices ---- */

/* What a shelf of the memo keeps (a word of its key): the candidate
 * groups of the program, or a named design's plans. */
enum { SHELF_GROUPS, SHELF_PLANS };

/* The shelf of X's memo for pricing on A as design D under O, of KIND
 * with NSLOTS slots. */
static Shelf *open_shelf(const Ctx *x, const Arch *a, Design d,
                         const ModelOpts *o, int kind, int nslots) {
  uint64_t *key;
  int n = model_group_key(x->c, x->s, a, d, o, &key);
  key = xrealloc(key, ((size_t)n + 1) * sizeof *key);
  key[n++] = (uint64_t)kind;
  return shelf_open(x->groups, key, n, nslots);
}

/* The slot of candidate group [I, J) in a shelf of the program's. */
static int slot_of(const Ctx *x, int i, int j) {
  return i * (x->nodes->n + 1) + j;
}

/* Seconds of CYCLES. */
static double seconds_of(const Ctx *x, double cycles) {
  return cycles / x->a->clock_hz;
}

/* The figures of group G of EV. */
static Cost group_figures(const Ctx *x, const Eval *ev, int g) {
  const GroupEval *ge = &ev->g[g];
  Cost c = {seconds_of(x, ge->cycles), 0, 0};
  for (int k = ge->first; k < ge->first + ge->n; k++) {
    c.energy += ev->e[k].energy_pj * 1e-12;
    c.traffic += ev->e[k].read + ev->e[k].write;
  }
  return c;
}

/* The budget count of the plan where nodes [I, J) are one group (its
 * binding counted CAPPED) and every other node stands alone, as pricing
 * that plan whole counts it. */
static long capped_with(const Level *lv, int i, int j, int capped) {
  long n = lv->capped_all + capped;
  for (int k = i; k < j; k++)
    n -= lv->capped[k];
  return n;
}

/* A kept price of a group whose binding counted CAPPED, its variants to
 * come (keep_variant), their time in BILL (taken); without a bill, one
 * that says the grouping cannot run. */
static Kept *kept_new(long capped, GroupBill *bill) {
  Kept *k = xcalloc(1, sizeof *k);
  k->norun = !bill;
  k->capped = capped;
  k->spill_at = xcalloc(1, sizeof *k->spill_at);
  if (bill) {
    k->bills = xmalloc(sizeof *k->bills);
    k->bills[k->nbills++] = bill;
  }
  return k;
}

/* One more variant of K: its figures C (their time aside, which the bill
 * keeps) and the tensors SPILLED names among CAND (N of them), in that
 * order (variant_store's). */
static void keep_variant(Kept *k, Cost c, const bool *spilled,
                         const int *cand, int n) {
  for (int j = 0; j < n; j++)
    if (spilled[cand[j]])
      VEC_PUSH(k->spill_t, k->nt, k->cap_t, cand[j]);
  if (k->nv + 1 > k->cap_v) {
    k->cap_v = 2 * (k->nv + 1);
    size_t cap = (size_t)k->cap_v + 1;
    k->energy = xrealloc(k->energy, cap * sizeof *k->energy);
    k->traffic = xrealloc(k->traffic, cap * sizeof *k->traffic);
    k->spill_at = xrealloc(k->spill_at, cap * sizeof *k->spill_at);
  }
  k->energy[k->nv] = c.energy;
  k->traffic[k->nv] = c.traffic;
  k->spill_at[++k->nv] = k->nt;
}

/* Price the group of nodes [I, J) fused at level LV under each of its
 * spill variants, as group I of BASE, the plan where every other node
 * stands alone (the model's pricer: the group alone, its binding once):
 * OUT[v] its cost, VAR[v] the variant's number in X's store; the count
 * (*FAILED when the model failed). OUT and VAR have room for
 * SPILL_CAND_MAX + 2 (at least 2^SPILL_SUBSETS_MAX). With a shelf, the
 * prices are kept there, with their bill. */
static int group_costs(Ctx *x, Level *lv, Plan *base, int i, int j,
                       Cost *out, int *var, bool *failed) {
  *failed = false;
  const Eval *bound = model_group_bind(lv->pricer, base, i);
  if (!bound) {
    *failed = true;
    return 0;
  }
  x->r->bind_capped += capped_with(lv, i, j, bound->bind_capped);
  Kept *keep = lv->shelf ? kept_new(bound->bind_capped,
                                    group_bill_new(lv->pricer))
                         : NULL;
  int cand[SPILL_CAND_MAX];
  int k = spill_candidates(x->c, &x->out, base, i, cand);
  int nv = variants_of(&x->o, k), priced = 0;
  size_t nt = (size_t)x->c->ntensors + 1;
  bool *spilled = base->spilled = xcalloc(nt, sizeof *spilled);
  for (int m = 0; !*failed && m < nv; m++) {
    memset(spilled, 0, nt * sizeof *spilled);
    variant_apply(x->c, &x->out, &x->o, cand, k, m, spilled);
    if (m == 1 && k > SPILL_SUBSETS_MAX &&
        spilled_count(spilled, cand, k) < 2)
      continue; /* the rule's is none or one alone: priced anyway */
    var[priced] = variant_store(x, spilled, cand, k);
    const Eval *ev = model_group_price(lv->pricer, lv->start_at[i]);
    *failed = ev == NULL;
    if (!ev)
      continue;
    out[priced] = group_figures(x, ev, i);
    if (keep) {
      keep_variant(keep, out[priced], spilled, cand, k);
      group_bill_add(keep->bills[0], lv->pricer);
    }
    priced++;
  }
  free(base->spilled); /* as made: binding the next reads no spills */
  base->spilled = NULL;
  x->r->variants += priced;
  if (keep && !*failed)
    shelf_put(x->groups, lv->shelf, slot_of(x, i, j), keep);
  else
    kept_free(keep);
  return *failed ? 0 : priced;
}

/* The group of nodes [I, J) at level LV as the memo keeps it: a kept
 * price whose comparisons of times hold at LV's bandwidths and clock
 * gives OUT and VAR as group_costs would (their time from its bill);
 * the count, 0 where none does (or none is kept), -1 where the memo
 * keeps that the grouping cannot run. */
static int kept_costs(Ctx *x, Level *lv, int i, int j, Cost *out,
                      int *var) {
  double cycles[SPILL_CAND_MAX + 2];
  const Kept *k = shelf_first(x->groups, lv->shelf, slot_of(x, i, j));
  if (k && k->norun)
    return -1;
  for (; k; k = k->next) {
    if (!group_bill_cycles(k->bills[0], lv->at->a, lv->start_at[i], cycles))
      continue;
    x->r->bind_capped += capped_with(lv, i, j, k->capped);
    for (int v = 0; v < k->nv; v++) {
      var[v] = variant_store_list(x, &k->spill_t[k->spill_at[v]],
                                  k->spill_at[v + 1] - k->spill_at[v]);
      out[v] = (Cost){seconds_of(x, cycles[v]), k->energy[v], k->traffic[v]};
    }
    x->r->variants += k->nv;
    x->kept.served++;
    return k->nv;
  }
  x->kept.refused += shelf_first(x->groups, lv->shelf, slot_of(x, i, j)) != NULL;
  return 0;
}

/* ---- the program ---- */

/* A partition of a prefix on its front: its cost, and where its last
 * group starts (the front entry of that shorter prefix it extends). */
typedef struct Entry {
  Cost cost;
  int from, prev;
  int var;   /* the spill variant of its last group (Ctx.chosen) */
  int level; /* the level its last group is fused at (Ctx.lev) */
} Entry;

typedef struct Front {
  int n, cap;
  Entry *e;
} Front;

/* Add E to F unless an entry dominates it; drop those it dominates. */
static void front_add(Front *f, Entry e, SearchObjective o) {
  double a1, a2;
  key_of(e.cost, o, &a1, &a2);
  int w = 0;
  for (int k = 0; k < f->n; k++) {
    double b1, b2;
    key_of(f->e[k].cost, o, &b1, &b2);
    if (b1 <= a1 && b2 <= a2)
      return; /* dominated (or equal): keep the first */
    if (!(a1 <= b1 && a2 <= b2))
      f->e[w++] = f->e[k];
  }
  f->n = w;
  VEC_PUSH(f->e, f->n, f->cap, e);
}

/* Every node alone at level LV: the plan each group's plan extends (the
 * nodes before a group stand alone there), priced whole as the program's
 * first plan was: the layer's clock at each node, and each node's binding
 * count alone (only when some binding stopped at its budget). False (diag
 * set) when the architecture cannot run the cascade. */
static bool kept_singletons(Ctx *x, Level *lv);

static bool singletons(Ctx *x, Level *lv) {
  if (lv->shelf && kept_singletons(x, lv))
    return true;
  int n = x->nodes->n;
  bool *start = xcalloc((size_t)n + 1, sizeof *start);
  for (int k = 0; k < n; k++)
    start[k] = true;
  Plan *p = plan_of(x, start);
  free(start);
  if (!p)
    return true; /* no group runs with its nodes before it alone */
  p->spilled = xcalloc((size_t)x->c->ntensors + 1, sizeof *p->spilled);
  Eval *ev = model_eval_memo(x->c, x->s, lv->at->a, x->pairs, x->design,
                             p, &x->o, x->memo, x->d);
  if (!ev)
    return false;
  for (int k = 0; k < n; k++)
    lv->start_at[k] = ev->g[k].start;
  lv->capped_all = ev->bind_capped;
  for (int k = 0; lv->capped_all > 0 && k < n; k++) {
    const Eval *b = model_group_bind(lv->pricer, ev->plan, k);
    lv->capped[k] = b ? b->bind_capped : 0;
  }
  eval_free(ev);
  return true;
}

/* singletons() from the memo: each node alone is a candidate group the
 * program prices (its first variant sends nothing off chip by choice, as
 * that plan does), priced alone as in the plan (search.h), so where each
 * is kept with a bill that holds here, the layer's clock at each node is
 * theirs added up as compose_layer adds them, and the plan's binding
 * count their counts'. False where one is not (then the plan is priced
 * whole). */
static bool kept_singletons(Ctx *x, Level *lv) {
  int n = x->nodes->n;
  double t = 0, cycles[SPILL_CAND_MAX + 2];
  long all = 0;
  for (int k = 0; k < n; k++) {
    const Kept *kp = shelf_first(x->groups, lv->shelf, slot_of(x, k, k + 1));
    while (kp && !kp->norun &&
           !group_bill_cycles(kp->bills[0], lv->at->a, t, cycles))
      kp = kp->next;
    if (!kp || kp->norun)
      return false;
    lv->start_at[k] = t;
    lv->capped[k] = (int)kp->capped;
    all += kp->capped;
    t += cycles[0];
  }
  lv->capped_all = all;
  return true;
}

/* Has the search's time run out? Says so in R once it has. */
static bool out_of_time(Ctx *x) {
  if (x->ctl->seconds > 0 && now_seconds() - x->t0 >= x->ctl->seconds)
    x->r->timed_out = true;
  return x->r->timed_out;
}

/* Tell the progress callback the share DONE (at every step: level.c
 * tells the user every few seconds, over all the levels). */
static void progress(Ctx *x, double done) {
  if (x->ctl->progress)
    x->ctl->progress(x->ctl->ctx, done, now_seconds() - x->t0);
}

/* The share of the program's work done once prefixes up to J of N are:
 * every prefix prices the groups ending there (J of them), or one past
 * the budget. */
static double program_share(const Ctx *x, int j, int n) {
  return x->budget > 0 ? (double)j / n
                       : (double)j * (j + 1) / ((double)n * (n + 1));
}

/* Fill FRONT[0..n] over the candidate groups; false if the model failed.
 * Past the time limit it stops, FRONT[n] then empty. */
static bool program_fill(Ctx *x, SearchObjective o, Front *front,
                         long *priced) {
  int n = x->nodes->n;
  front[0].n = 0;
  VEC_PUSH(front[0].e, front[0].n, front[0].cap,
           ((Entry){{0, 0, 0}, -1, -1, -1, -1}));
  for (int j = 1; j <= n; j++) {
    progress(x, 0.9 * program_share(x, j - 1, n));
    for (int i = 0; i < j; i++) {
      if (front[i].n == 0)
        continue;
      if (out_of_time(x)) {
        front[n].n = 0; /* no partition is whole */
        return true;
      }
      Plan *base = NULL; /* the group's plan, made once for every level */
      bool made = false;
      for (int l = 0; l < x->nlev; l++) {
        if (x->budget > 0 && *priced >= x->budget && i < j - 1) {
          x->r->stopped = true; /* past the budget: single nodes only */
          x->r->skipped++;
          continue;
        }
        Level *lv = &x->lev[l];
        Cost g[SPILL_CAND_MAX + 2];
        int var[SPILL_CAND_MAX + 2];
        int nv = lv->shelf ? kept_costs(x, lv, i, j, g, var) : 0;
        if (nv < 0)
          break; /* kept: the grouping cannot run */
        if (nv == 0 && !made) {
          base = regroup_plan(x->regroup, i, j);
          made = true;
          if (!base && lv->shelf)
            shelf_put(x->groups, lv->shelf, slot_of(x, i, j),
                      kept_new(0, NULL));
        }
        if (nv == 0 && !base)
          break; /* the grouping cannot run: no candidate at any level */
        if (nv == 0) {
          bool failed = false;
          nv = group_costs(x, lv, base, i, j, g, var, &failed);
          if (failed)
            return false;
          if (nv == 0)
            continue;
        }
        (*priced)++;
        /* What the group hands a later one goes off chip whatever the
         * levels (docs/model.md, "A fusion level per group"): its price
         * owes nothing to the level of the group before it. */
        for (int v = 0; v < nv; v++)
          for (int k = 0; k < front[i].n; k++) {
            Cost c = front[i].e[k].cost;
            Entry e = {{c.lat + g[v].lat, c.energy + g[v].energy,
                        c.traffic + g[v].traffic},
                       i, k, var[v], l};
            front_add(&front[j], e, o);
          }
      }
    }
  }
  return true;
}

/* The program: its pricers of groups alone, one per level, made for X's
 * options as they are now; false if the model failed. */
static bool program(Ctx *x, SearchObjective o, Front *front, long *priced) {
  int n = x->nodes->n;
  x->regroup =
      regroup_new(x->c, x->s, fusion_plan_alone(x->c, x->s, x->nodes));
  bool ok = true;
  for (int l = 0; l < x->nlev; l++) {
    Level *lv = &x->lev[l];
    lv->pricer = model_group_pricer_new(x->c, x->s, lv->at->a, x->pairs,
                                        x->design, &x->o, x->memo, x->d);
    if (x->groups) {
      model_group_pricer_bills(lv->pricer);
      lv->shelf = open_shelf(x, lv->at->a, x->design, &x->o, SHELF_GROUPS,
                             (n + 1) * (n + 1));
    }
    lv->start_at = xcalloc((size_t)n + 1, sizeof *lv->start_at);
    lv->capped = xcalloc((size_t)n + 1, sizeof *lv->capped);
    ok = ok && singletons(x, lv);
  }
  ok = ok && program_fill(x, o, front, priced);
  regroup_free(x->regroup);
  x->regroup = NULL;
  for (int l = 0; l < x->nlev; l++) {
    shelf_close(x->groups, x->lev[l].shelf);
    model_group_pricer_free(x->lev[l].pricer);
    free(x->lev[l].start_at);
    free(x->lev[l].capped);
  }
  x->kept.priced = *priced - x->kept.served;
  return ok;
}

/* The partition behind the best entry of FRONT[n], as group starts, the
 * level of the group starting at each start into LEVEL (per node), and
 * the intermediates its groups' variants send off chip, into SPILLED (per
 * tensor). */
static bool *best_partition(const Ctx *x, const Front *front, int n,
                            SearchObjective o, int *level, bool *spilled) {
  const Front *f = &front[n];
  int best = 0;
  for (int k = 1; k < f->n; k++)
    if (figure_of(f->e[k].cost, o) < figure_of(f->e[best].cost, o))
      best = k;
  bool *start = xcalloc((size_t)n + 1, sizeof *start);
  for (int j = n, k = best; j > 0;) {
    const Entry *e = &front[j].e[k];
    start[e->from] = true;
    level[e->from] = e->level;
    const Chosen *ch = &x->chosen[e->var];
    for (int q = 0; q < ch->n; q++)
      spilled[x->chosen_t[ch->first + q]] = true;
    k = e->prev;
    j = e->from;
  }
  return start;
}

/* ---- the latency-energy front ---- */

static void point_add(SearchResult *r, int *cap, SearchPoint p) {
  VEC_PUSH(r->pareto, r->npareto, *cap, p);
}

/* The program's front at the whole cascade, as points (its keys are
 * latency and energy for these objectives). */
static void front_points(const Front *front, int n, SearchResult *r,
                         int *cap) {
  for (int k = 0; k < front[n].n; k++) {
    int groups = 0;
    for (int j = n, q = k; j > 0; groups++) {
      const Entry *e = &front[j].e[q];
      q = e->prev;
      j = e->from;
    }
    Cost c = front[n].e[k].cost;
    point_add(r, cap, (SearchPoint){c.lat, c.energy, groups, DES_COUNT});
  }
}

static int by_seconds(const void *a, const void *b) {
  const SearchPoint *x = a, *y = b;
  if (x->seconds != y->seconds)
    return (x->seconds > y->seconds) - (x->seconds < y->seconds);
  return (x->joules > y->joules) - (x->joules < y->joules);
}

void search_pareto_filter(SearchResult *r) {
  if (r->npareto == 0)
    return; /* traffic: no front kept */
  qsort(r->pareto, (size_t)r->npareto, sizeof *r->pareto, by_seconds);
  int w = 0;
  for (int k = 0; k < r->npareto; k++)
    if (w == 0 ||
        r->pareto[k].joules < r->pareto[w - 1].joules * (1 - 1e-12))
      r->pareto[w++] = r->pareto[k];
  r->npareto = w;
}

/* ---- the named designs beside the program ---- */

/* Keep CAND (owned), priced at fusion level LEVEL (-1: its groups' own),
 * if it beats R's best. */
static void consider(SearchResult *r, Eval *cand, Design from, int level,
                     SearchObjective o) {
  if (!cand)
    return;
  double f = search_figure(cand, o);
  if (!r->best || f < r->found) {
    eval_free(r->best);
    r->best = cand;
    r->found = f;
    r->from = from;
    r->fusion_level = level;
  } else {
    eval_free(cand);
  }
}

/* Past the budget, the named designs are priced while the search is
 * younger than this: on a short cascade all of them (Mamba-1's take
 * 50 ms, and one is often the best), on 2000 Einsums (0.1 s each) a few,
 * so that a budget bounds the whole search to about a second. */
#define BUDGET_NAMED_S 1.0

/* Is the search past its budget's time for named designs? */
static bool named_past_budget(const Ctx *x) {
  return x->r->stopped && now_seconds() - x->t0 > BUDGET_NAMED_S;
}

/* ---- the named designs' plans kept in the memo ----
 *
 * A named design's plan is priced whole (model_eval_memo), and a sweep's
 * next point at another bandwidth or clock prices the same plan to the
 * same bills: the memo keeps the plan, its energy and traffic, and a bill
 * per group, priced alone (a group's price owes nothing to the rest of
 * its plan but its start: search.h), whose times add up to the layer's
 * as compose_layer adds them. */

/* Group after group of K's bills at A from cycle 0: the layer's cycles
 * into *CYCLES; false where a comparison of times moved. */
static bool kept_plan_cycles(const Kept *k, const Arch *a, double *cycles) {
  double t = 0;
  for (int g = 0; g < k->nbills; g++) {
    double c;
    if (!group_bill_cycles(k->bills[g], a, t, &c))
      return false;
    t += c;
  }
  *cycles = t;
  return true;
}

/* The kept price of EV, design D's plan under MO on level LV's
 * architecture (its groups priced alone, each a bill), or NULL where
 * those do not give EV's time (then it is priced whole at every point). */
static Kept *keep_plan(Ctx *x, const SearchLevel *lv, Design d,
                       const ModelOpts *mo, const Eval *ev) {
  Diag ignore = {0};
  GroupPricer *gp = model_group_pricer_new(x->c, x->s, lv->a, x->pairs, d,
                                           mo, x->memo, &ignore);
  if (!gp)
    return NULL;
  model_group_pricer_bills(gp);
  Kept *k = kept_new(0, NULL);
  k->norun = false;
  k->bills = xcalloc((size_t)ev->ngroups + 1, sizeof *k->bills);
  bool ok = true;
  for (int g = 0; ok && g < ev->ngroups; g++) {
    ok = model_group_bind(gp, ev->plan, g) != NULL;
    if (ok)
      k->bills[k->nbills++] = group_bill_new(gp);
    ok = ok && model_group_price(gp, ev->g[g].start) != NULL;
    if (ok)
      group_bill_add(k->bills[g], gp);
  }
  model_group_pricer_free(gp);
  double cycles;
  if (!ok || !kept_plan_cycles(k, lv->a, &cycles) || cycles != ev->cycles) {
    kept_free(k);
    return NULL;
  }
  keep_variant(k, eval_cost(ev), NULL, NULL, 0);
  k->plan = plan_copy(x->c, ev->plan);
  return k;
}

/* Design D's plan under stitcher ST at level LV as the caller priced it
 * (SearchControl.named), or NULL: only its own stitcher's (OWN), on the
 * given architecture. */
static const Eval *given_plan(const Ctx *x, const SearchLevel *lv, Design d,
                              Stitcher st, Stitcher own) {
  const Eval *const *named = x->ctl->named;
  return named && lv->a == x->a && st == own ? named[d] : NULL;
}

/* Do plans A and B of C group the same Einsums in the same order, each
 * group tiling the same ranks at the same level, under the same label?
 * Then they are priced the same: the rest of a plan (how each read is
 * served, what goes off chip) is its grouping's (fusion.h, "the plan's
 * geometry"), and its writes and transfers are compared too. */
static bool same_grouping(const Cascade *c, const Plan *a, const Plan *b) {
  if (a->ngroups != b->ngroups || a->strategy != b->strategy ||
      a->any != b->any || a->nxfers != b->nxfers ||
      (a->spilled != NULL) != (b->spilled != NULL))
    return false;
  for (int g = 0; g < a->ngroups; g++) {
    const Group *ga = &a->groups[g], *gb = &b->groups[g];
    if (ga->n != gb->n || ga->ntiled != gb->ntiled ||
        memcmp(ga->einsums, gb->einsums, (size_t)ga->n * sizeof *ga->einsums) ||
        memcmp(ga->tiled, gb->tiled, (size_t)ga->ntiled * sizeof *ga->tiled) ||
        strcmp(ga->level, gb->level) != 0)
      return false;
  }
  return memcmp(a->written, b->written,
                (size_t)c->ntensors * sizeof *a->written) == 0;
}

/* A design's plan priced under one of its stitchers (its grouping, its
 * figures): another stitcher's plan of the same grouping is that price
 * again (three stitchers often agree: 5 of the 8 other stitchers' plans
 * of each `reproduce` search). Without a GroupMemo only: with one, the
 * memo keeps each stitcher's plan (its counts are a sweep's). */
typedef struct Stitched {
  Plan *plan; /* owned */
  Cost cost;
  int groups;
} Stitched;

/* EV's plan and price into SEEN[*N]. */
static void remember(const Ctx *x, Stitched *seen, int *n, const Eval *ev) {
  seen[(*n)++] = (Stitched){plan_copy(x->c, ev->plan), eval_cost(ev),
                            ev->ngroups};
}

/* A named design's plan of cost C in GROUPS groups counted among R's
 * (and, where CAP asks, put on its front). */
static void count_named(SearchResult *r, int *cap, Cost c, int groups,
                        Design d) {
  r->named++;
  if (*cap >= 0)
    point_add(r, cap, (SearchPoint){c.lat, c.energy, groups, d});
}

/* The price among the N in SEEN of a plan grouped as P, or NULL. */
static const Stitched *stitched_as(const Ctx *x, const Stitched *seen, int n,
                                   const Plan *p) {
  for (int k = 0; k < n; k++)
    if (same_grouping(x->c, seen[k].plan, p))
      return &seen[k];
  return NULL;
}

/* Every design but the bound, under every stitcher it stitches with, at
 * level LV (its plan fuses every group there); past the time limit, or
 * the budget's time for them, none but a first schedule (the rest counted
 * in named_skipped). With the memo, a plan it keeps whose bills hold
 * here, or one the caller priced, is priced whole only where it beats
 * the best so far; a plan grouped as another stitcher's already priced
 * is not priced again (it could not beat that one). */
static bool named_designs(Ctx *x, const SearchLevel *lv,
                          const ModelOverrides *ov, SearchResult *r,
                          SearchObjective o, int *cap) {
  for (int d = 0; d < DES_COUNT; d++) {
    ModelOpts mo = model_opts_with(ov, (Design)d);
    Stitcher own = mo.stitch;
    if (mo.bound)
      continue;
    bool stitches = design_strategy((Design)d) != ST_UNFUSED &&
                    mo.plan == PLAN_STITCHED;
    progress(x, 0.9 + 0.1 * d / DES_COUNT);
    /* One shelf for the design's stitchers, a slot each: a plan is kept
     * whole, its stitcher in it. */
    ModelOpts keyed = mo;
    keyed.stitch = STITCH_GREEDY;
    Shelf *shelf = x->groups ? open_shelf(x, lv->a, (Design)d, &keyed,
                                          SHELF_PLANS, STITCH_COUNT)
                             : NULL;
    Stitched seen[STITCH_COUNT];
    int nseen = 0;
    bool ok = true;
    for (int st = 0; ok && st < (stitches ? STITCH_COUNT : 1); st++) {
      if (r->best && (named_past_budget(x) || out_of_time(x))) {
        r->named_skipped++; /* one schedule at least: not this one */
        continue;
      }
      if (stitches)
        mo.stitch = (Stitcher)st;
      const Kept *k = shelf_first(x->groups, shelf, st);
      if (k && k->norun)
        continue; /* kept: the design has no plan here */
      double cycles = 0;
      while (k && !kept_plan_cycles(k, lv->a, &cycles))
        k = k->next;
      const Eval *given = k ? NULL : given_plan(x, lv, (Design)d, mo.stitch,
                                                own);
      if (given) {
        count_named(r, cap, eval_cost(given), given->ngroups, (Design)d);
        if (stitches && !shelf)
          remember(x, seen, &nseen, given);
        if (r->best && !(search_figure(given, o) < r->found))
          continue; /* as consider() would: priced whole only to win */
      }
      Plan *p = NULL;
      if (k) {
        Cost c = {seconds_of(x, cycles), k->energy[0], k->traffic[0]};
        x->kept.plans_served++;
        count_named(r, cap, c, k->nbills, (Design)d);
        if (r->best && !(figure_of(c, o) < r->found))
          continue; /* as consider() would: priced whole only to win */
        p = plan_copy(x->c, k->plan);
      } else {
        Diag pd = {0};
        p = model_plan(x->c, x->s, x->pairs, (Design)d, &mo, &pd);
        if (!p) {
          if (shelf)
            shelf_put(x->groups, shelf, st, kept_new(0, NULL));
          continue; /* Algorithm 1 over too many ranks */
        }
        p->bind = mo.bind == BIND_COST ? PLAN_BIND_COST : PLAN_BIND_RULE;
        /* The plan prices as this design prices it, whatever its label
         * allows: a plan file says so, and `eval --plan` takes it. */
        snprintf(p->design, sizeof p->design, "%s", design_name((Design)d));
        p->any = p->any || mo.plan != PLAN_STITCHED;
        /* (The caller's plan, here to win, is priced whole.) */
        const Stitched *same = given ? NULL : stitched_as(x, seen, nseen, p);
        if (same) { /* priced: as consider() would, not kept again */
          plan_free(p);
          count_named(r, cap, same->cost, same->groups, (Design)d);
          continue;
        }
      }
      Eval *ev = model_eval_memo(x->c, x->s, lv->a, x->pairs, (Design)d, p,
                                 &mo, x->memo, x->d);
      ok = ev != NULL;
      if (!ok)
        break;
      if (!k && !given) {
        if (stitches && !shelf)
          remember(x, seen, &nseen, ev);
        x->kept.plans_priced += shelf != NULL;
        Kept *keep = shelf ? keep_plan(x, lv, (Design)d, &mo, ev) : NULL;
        if (keep)
          shelf_put(x->groups, shelf, st, keep);
        count_named(r, cap, eval_cost(ev), ev->ngroups, (Design)d);
      }
      consider(r, ev, (Design)d, lv->level, o);
    }
    shelf_close(x->groups, shelf);
    for (int q = 0; q < nseen; q++)
      plan_free(seen[q].plan);
    if (!ok)
      return false;
  }
  return true;
}

Strategy search_label(const Cascade *c, const Pair *pairs, const Plan *p) {
  for (int st = 0; st < ST_COUNT; st++) {
    bool ok = true;
    for (int k = 0; ok && k < c->nedges; k++) {
      const Edge *e = &c->edges[k];
      ok = p->group_of[e->producer] != p->group_of[e->consumer] ||
           edge_in_recurrence(c, e) ||
           (st != ST_UNFUSED && strategy_allows((Strategy)st, pairs[k].cls));
    }
    if (ok)
      return (Strategy)st;
  }
  return ST_FULL;
}

/* Price the program's partition whole, as the plan it is: its groups,
 * each group's level (LEVEL, per node starting one), the intermediates
 * they send off chip by choice (SPILLED, owned from here) and the binding
 * it was priced under, all of which the plan carries (a plan file prices
 * as the search priced it). A plan whose groups share a level is priced
 * on that level's architecture (*AT: the level, of the given
 * architecture's); one that mixes them names each group's level and is
 * priced on the given one (*AT -1). */
static Eval *found_eval(Ctx *x, const bool *start, const int *level,
                        bool *spilled, int *at) {
  Plan *p = plan_of(x, start);
  if (!p) {
    free(spilled);
    return NULL;
  }
  p->strategy = search_label(x->c, x->pairs, p);
  p->spilled = spilled;
  p->bind = x->o.bind == BIND_COST ? PLAN_BIND_COST : PLAN_BIND_RULE;
  int first = -1;
  bool mixed = false;
  for (int k = 0, g = 0; k < x->nodes->n; k++)
    if (start[k]) {
      const SearchLevel *lv = x->lev[level[k]].at;
      snprintf(p->groups[g].level, sizeof p->groups[g].level, "%s",
               x->a->levels[lv->level].name);
      mixed = mixed || (first >= 0 && level[k] != first);
      first = first < 0 ? level[k] : first;
      g++;
    }
  for (int g = 0; !mixed && g < p->ngroups; g++)
    p->groups[g].level[0] = 0; /* one level: the architecture's, moved */
  *at = mixed ? -1 : x->lev[first].at->level;
  return model_eval_memo(x->c, x->s, mixed ? x->a : x->lev[first].at->a,
                         x->pairs, x->design, p, &x->o, x->memo, x->d);
}

/* The bound for objective O: the ideal over the levels, each of its groups
 * at its own where that is least (model_ideal_least); for EDP, the least
 * time times the least energy where that is lower (each the least over
 * the levels: under sequential composition no plan has less of either,
 * while no one assignment of levels need give both). */
static bool bound(Ctx *x, const ModelOverrides *ov, SearchObjective o,
                  SearchResult *r) {
  ModelOpts io = model_opts_with(ov, DES_IDEAL);
  IdealBy by = o == SO_ENERGY    ? IDEAL_BY_ENERGY
               : o == SO_TRAFFIC ? IDEAL_BY_TRAFFIC
                                 : IDEAL_BY_TIME;
  r->bound = model_ideal_least(
      x->c, x->s, x->a, x->pairs, DES_IDEAL,
      model_plan(x->c, x->s, x->pairs, DES_IDEAL, &io, x->d), &io, by,
      x->memo, x->d);
  if (!r->bound)
    return false;
  r->lower = search_figure(r->bound, o);
  if (o != SO_EDP || x->nlev == 1)
    return true;
  Eval *e = model_ideal_least(
      x->c, x->s, x->a, x->pairs, DES_IDEAL,
      model_plan(x->c, x->s, x->pairs, DES_IDEAL, &io, x->d), &io,
      IDEAL_BY_ENERGY, x->memo, x->d);
  if (!e)
    return false;
  r->lower = fmin(r->lower, r->bound->seconds * e->energy_pj * 1e-12);
  eval_free(e);
  return true;
}

static bool run(Ctx *x, const ModelOverrides *ov, SearchObjective o,
                SearchResult *r) {
  int n = x->nodes->n;
  Front *front = xcalloc((size_t)n + 1, sizeof *front);
  bool ok = program(x, o, front, &r->priced);
  int cap = o == SO_TRAFFIC ? -1 : 0; /* -1: no latency-energy front */
  if (ok && front[n].n > 0) {
    bool *spilled = xcalloc((size_t)x->c->ntensors + 1, sizeof *spilled);
    int *level = xcalloc((size_t)n + 1, sizeof *level), at = -1;
    bool *start = best_partition(x, front, n, o, level, spilled);
    Eval *ev = found_eval(x, start, level, spilled, &at);
    free(start);
    free(level);
    ok = ev != NULL;
    consider(r, ev, DES_COUNT, at, o);
    if (cap >= 0)
      front_points(front, n, r, &cap);
  }
  for (int j = 0; j <= n; j++)
    free(front[j].e);
  free(front);
  for (int l = 0; ok && l < x->nlev; l++)
    ok = named_designs(x, x->lev[l].at, ov, r, o, &cap);
  search_pareto_filter(r);
  return ok && bound(x, ov, o, r);
}

Nodes *search_nodes(const Cascade *c, const Shape *s) {
  Nodes *m = fusion_merge(c, s), *one = fusion_singletons(c);
  int n = one->n;
  int *order = xmalloc(((size_t)n + 1) * sizeof *order), w = 0;
  bool *done = xcalloc((size_t)n + 1, sizeof *done);
  for (int k = 0; k < m->n; k++)
    for (int i = 0; i < m->nodes[k].n; i++) {
      int j = one->node_of[m->nodes[k].einsums[i]];
      if (!done[j]) {
        done[j] = true;
        order[w++] = j;
      }
    }
  Node *by = xmalloc(((size_t)n + 1) * sizeof *by);
  for (int q = 0; q < n; q++)
    by[q] = one->nodes[order[q]];
  for (int q = 0; q < n; q++) {
    one->nodes[q] = by[q];
    for (int i = 0; i < by[q].n; i++)
      one->node_of[by[q].einsums[i]] = q;
  }
  free(by);
  free(done);
  free(order);
  nodes_free(m);
  return one;
}

SearchResult *search_levels(const Cascade *c, const Shape *s, const Arch *a,
                            const SearchLevel *lv, int nlev,
                            const Pair *pairs, const ModelOverrides *o,
                            SearchObjective obj, const SearchControl *ctl,
                            MapMemo *memo, Diag *d) {
  Design plain = design_of_strategy(ST_FULL);
  SearchResult *r = xcalloc(1, sizeof *r);
  long budget = ctl->budget;
  Ctx x = {.c = c, .s = s, .a = a, .pairs = pairs, .design = plain,
           .o = model_opts_with(o, plain), .memo = memo, .d = d,
           .budget = budget, .ctl = ctl, .t0 = now_seconds(), .r = r,
           .nlev = nlev, .groups = ctl->groups};
  if (o->bind < 0) /* the search's own groups bind by cost */
    x.o.bind = BIND_COST;
  x.lev = xcalloc((size_t)nlev, sizeof *x.lev);
  for (int l = 0; l < nlev; l++)
    x.lev[l].at = &lv[l];
  Nodes *nodes = search_nodes(c, s);
  x.nodes = nodes;
  x.group_of = xcalloc((size_t)c->neinsums + 1, sizeof *x.group_of);
  x.out = cascade_edge_index(c, EDGES_BY_PRODUCER);
  r->budget = budget;
  r->nodes = nodes->n;
  /* Every partition, each of its groups at each level: L (L + 1)^(n-1). */
  r->partitions = nlev * pow(nlev + 1, nodes->n - 1);
  r->groups = (long)nlev * nodes->n * (nodes->n + 1) / 2;
  r->from = DES_COUNT;
  r->levels = nlev;
  bool ok = run(&x, o, obj, r);
  if (x.groups)
    group_memo_count(x.groups, &x.kept);
  free(x.lev);
  free(x.group_of);
  edge_index_free(&x.out);
  free(x.chosen);
  free(x.chosen_t);
  nodes_free(nodes);
  if (!ok) {
    search_free(r);
    return NULL;
  }
  return r;
}

void search_free(SearchResult *r) {
  if (!r)
    return;
  arch_free(r->arch);
  eval_free(r->best);
  eval_free(r->bound);
  free(r->pareto);
  free(r);
}
