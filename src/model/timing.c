/* timing.c — a group's price split in two (model.h, "a group's price at
 * any bandwidth and clock"): its bill, which no level's bandwidth and not
 * the clock changes, and its time at a bandwidth and clock, from the
 * bill.
 *
 * What a price reads of the bandwidths and the clock, and so what a bill
 * keeps to give the same figures elsewhere:
 *   - each member's memory time, the slowest level's bytes over its
 *     bandwidth (level_cycles): the bill keeps the bytes of every level
 *     that has a bandwidth;
 *   - the latency binding (bind_for_latency), which moves a member to the
 *     unit where compute and memory composed take the least: the bill
 *     keeps its compute on each unit it weighs, in its order;
 *   - the group's composition from its start (compose_group), with a
 *     GPU's kernel time: recomputed, by the same rule (compose_cycles);
 *   - the tile choice (group.c), which weighs candidate tiles by their
 *     time where a member refetches weights or a tile overbooks: the
 *     pricer keeps each comparison (its Trace: the two trials' members'
 *     moves and the outcome), and the bill serves a bandwidth and clock
 *     only where every comparison comes out the same -- the choice made
 *     is then the same, step by step, and so is everything it chose.
 * Energy and traffic follow the bill alone; the caller keeps them. */
#include "price.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void model_group_pricer_bills(GroupPricer *gp) {
  if (!gp->x.trace)
    gp->x.trace = xcalloc(1, sizeof *gp->x.trace);
}

/* ---- the bill ---- */

/* A member's compute on one unit (price_compute's). */
typedef struct Option {
  int unit, epilogue;
  double compute, unit_cycles, epilogue_cycles;
} Option;

/* A member's bytes at each level with a bandwidth (read, write and
 * instances per level), one row per distinct set a variant gave it: the
 * spill variants of a group change a few members each. */
typedef struct Row {
  int member, at; /* its bytes: bytes[at .. at + 3 nfin) */
  int prev;       /* the member's row added before it, or -1 */
} Row;

/* A member whose row a variant changes from the variant before's. */
typedef struct Move {
  int member, row;
} Move;

struct GroupBill {
  ModelOpts o;
  int n;      /* members */
  int nfin;   /* levels with a bandwidth */
  int *fin;   /* their indices */
  Option *as; /* per member: its compute as bound (what the prices start
                 from, and the trials compose) */
  int *alt_at; /* per member: the units the latency binding weighs, in
                  its order, ALT[alt_at[i] .. alt_at[i + 1]) (none where
                  it does not rebind) */
  Option *alt;
  int nv, cap_v;
  /* Per variant v, the members whose rows differ from variant v - 1's
   * (every member for the first): MOVE[move_at[v] .. move_at[v + 1]) --
   * a spill variant sends a few members' tensors off chip. */
  int *move_at;
  int nmoves, cap_moves;
  Move *move;
  int *row_now; /* per member: its row in the variant added last */
  int nrows, cap_rows, nbytes, cap_bytes;
  Row *row;
  int *last_row; /* per member: its row added last */
  double *bytes;
  /* The comparisons of times every variant's price made, each once, and
   * their trials, each once (a variant weighs many of the tiles the one
   * before it weighed). */
  int ntrials, cap_trials, nelems, cap_elems, ncmp, cap_cmp;
  TraceTrial *trial;
  double *elems;
  TraceCompare *cmp;
};

static Option option_of(const EinsumEval *r) {
  return (Option){r->unit, r->epilogue, r->compute_cycles, r->unit_cycles,
                  r->epilogue_cycles};
}

/* R's compute as O has it (the fields the composition reads). */
static void option_set(EinsumEval *r, const Option *o) {
  r->unit = o->unit;
  r->epilogue = o->epilogue;
  r->compute_cycles = o->compute;
  r->unit_cycles = o->unit_cycles;
  r->epilogue_cycles = o->epilogue_cycles;
}

GroupBill *group_bill_new(GroupPricer *gp) {
  Ctx *x = &gp->x;
  const Arch *a = x->a;
  GroupBill *b = xcalloc(1, sizeof *b);
  b->o = x->o;
  b->n = x->plan->groups[gp->g].n;
  b->fin = xmalloc(((size_t)a->nlevels + 1) * sizeof *b->fin);
  for (int l = 0; l < a->nlevels; l++)
    if (arch_level_has_bandwidth(&a->levels[l]))
      b->fin[b->nfin++] = l;
  size_t n = (size_t)b->n + 1;
  b->as = xmalloc(n * sizeof *b->as);
  b->last_row = xmalloc(n * sizeof *b->last_row);
  b->row_now = xmalloc(n * sizeof *b->row_now);
  b->alt_at = xmalloc((n + 1) * sizeof *b->alt_at);
  int nalt = 0, cap = 0;
  for (int i = 0; i < b->n; i++) {
    const EinsumEval *r = &gp->computed[i];
    b->as[i] = option_of(r);
    b->alt_at[i] = nalt;
    int cand[BIND_MAX_CAND];
    int k = latency_candidates(x, r->einsum, cand);
    for (int j = 0; j < k; j++) {
      EinsumEval t = *r;
      price_compute(x, r->einsum, cand[j], &t);
      VEC_PUSH(b->alt, nalt, cap, option_of(&t));
    }
  }
  b->alt_at[b->n] = nalt;
  return b;
}

/* Member I's row of BY (3 nfin doubles), found among its rows (newest
 * first: a variant most often repeats the one before) or added. */
static int row_for(GroupBill *b, int i, const double *by) {
  size_t len = 3 * (size_t)b->nfin * sizeof *by;
  int last = b->nv > 0 ? b->last_row[i] : -1; /* none before the first */
  for (int r = last; r >= 0; r = b->row[r].prev)
    if (memcmp(&b->bytes[b->row[r].at], by, len) == 0)
      return r;
  VEC_PUSH(b->row, b->nrows, b->cap_rows, ((Row){i, b->nbytes, last}));
  b->last_row[i] = b->nrows - 1;
  for (int k = 0; k < 3 * b->nfin; k++)
    VEC_PUSH(b->bytes, b->nbytes, b->cap_bytes, by[k]);
  return b->nrows - 1;
}

/* Trial K of trace T, found among B's or added: its number in B. */
static int trial_for(GroupBill *b, const Trace *t, int k) {
  const TraceTrial *tr = &t->trial[k];
  const double *e = &t->elems[tr->at];
  for (int q = 0; q < b->ntrials; q++) {
    const TraceTrial *o = &b->trial[q];
    if (o->n == tr->n && o->traffic == tr->traffic &&
        memcmp(&b->elems[o->at], e, (size_t)tr->n * sizeof *e) == 0)
      return q;
  }
  int at = b->nelems;
  for (int i = 0; i < tr->n; i++)
    VEC_PUSH(b->elems, b->nelems, b->cap_elems, e[i]);
  VEC_PUSH(b->trial, b->ntrials, b->cap_trials,
           ((TraceTrial){at, tr->n, tr->traffic}));
  return b->ntrials - 1;
}

/* Does comparison C of T come out as it did at every bandwidth and
 * clock? A trial's time only grows with each member's moves (more bytes
 * at one bandwidth are more cycles; compose_span adds them or takes the
 * most), so where trial A moves at most what B moves at every member, A
 * is never slower, and where A moves at least as much, never faster;
 * the choice's order (tile_faster) then decides as it does between equal
 * times -- by traffic -- or by the time, which then only confirms it. */
static bool settled(const Trace *t, const TraceCompare *c) {
  const TraceTrial *a = &t->trial[c->a], *b = &t->trial[c->b];
  bool le = true, ge = true;
  for (int i = 0; i < a->n && (le || ge); i++) {
    double x = t->elems[a->at + i], y = t->elems[b->at + i];
    le = le && x <= y;
    ge = ge && x >= y;
  }
  bool by_traffic = tile_faster(1, a->traffic, 1, b->traffic);
  return c->better ? le && by_traffic : ge && !by_traffic;
}

void group_bill_add(GroupBill *b, const GroupPricer *gp) {
  const Eval *ev = gp->x.ev;
  const Trace *t = gp->x.trace;
  if (b->nv + 2 > b->cap_v) {
    b->cap_v = 2 * b->cap_v + 4;
    b->move_at = xrealloc(b->move_at, (size_t)b->cap_v * sizeof *b->move_at);
  }
  b->move_at[b->nv] = b->nmoves;
  double *by = xmalloc((3 * (size_t)b->nfin + 1) * sizeof *by);
  for (int i = 0; i < b->n; i++) {
    for (int f = 0; f < b->nfin; f++) {
      const LevelUse *u = &ev->use[(size_t)i * (size_t)ev->nlevels +
                                   (size_t)b->fin[f]];
      by[3 * f] = u->read;
      by[3 * f + 1] = u->write;
      by[3 * f + 2] = u->instances;
    }
    int r = row_for(b, i, by);
    if (b->nv == 0 || b->row_now[i] != r) {
      b->row_now[i] = r;
      VEC_PUSH(b->move, b->nmoves, b->cap_moves, ((Move){i, r}));
    }
  }
  b->move_at[b->nv + 1] = b->nmoves;
  free(by);
  for (int k = 0; k < t->ncmp; k++) {
    if (settled(t, &t->cmp[k]))
      continue;
    TraceCompare c = {trial_for(b, t, t->cmp[k].a), trial_for(b, t, t->cmp[k].b),
                 t->cmp[k].better};
    bool seen = false;
    for (int q = 0; q < b->ncmp && !seen; q++)
      seen = b->cmp[q].a == c.a && b->cmp[q].b == c.b &&
             b->cmp[q].better == c.better;
    if (!seen)
      VEC_PUSH(b->cmp, b->ncmp, b->cap_cmp, c);
  }
  b->nv++;
}

int group_bill_variants(const GroupBill *b) { return b->nv; }

size_t group_bill_bytes(const GroupBill *b) {
  return sizeof *b +
         (size_t)b->n * (sizeof *b->as + sizeof *b->alt_at + sizeof *b->fin +
                         sizeof *b->last_row + sizeof *b->row_now) +
         (size_t)b->alt_at[b->n] * sizeof *b->alt +
         (size_t)b->cap_v * sizeof *b->move_at +
         (size_t)b->cap_moves * sizeof *b->move +
         (size_t)b->cap_rows * sizeof *b->row +
         (size_t)b->cap_bytes * sizeof *b->bytes +
         (size_t)b->cap_trials * sizeof *b->trial +
         (size_t)b->cap_elems * sizeof *b->elems +
         (size_t)b->cap_cmp * sizeof *b->cmp;
}

void group_bill_free(GroupBill *b) {
  if (!b)
    return;
  free(b->fin);
  free(b->as);
  free(b->alt_at);
  free(b->alt);
  free(b->move_at);
  free(b->move);
  free(b->row_now);
  free(b->row);
  free(b->last_row);
  free(b->bytes);
  free(b->trial);
  free(b->elems);
  free(b->cmp);
  free(b);
}

/* ---- the time of a bill ---- */

/* Does every comparison of times come out on X as it did (AS: the
 * members' compute as bound; LAT, MEM: scratch for every trial, and for
 * the members)? */
static bool same_choices(const GroupBill *b, const Ctx *x,
                         const EinsumEval *as, double *lat, double *mem) {
  for (int k = 0; k < b->ntrials; k++) {
    const TraceTrial *t = &b->trial[k];
    memcpy(mem, &b->elems[t->at], (size_t)t->n * sizeof *mem);
    lat[k] = trial_latency(x, as, t->n, mem, NULL);
  }
  for (int k = 0; k < b->ncmp; k++) {
    const TraceCompare *c = &b->cmp[k];
    if (tile_faster(lat[c->a], b->trial[c->a].traffic, lat[c->b],
                    b->trial[c->b].traffic) != c->better)
      return false;
  }
  return true;
}

/* A member's time at one row of bytes: the unit it runs on then (the
 * latency binding's), that unit's compute, its memory and its cycles. */
typedef struct Timed {
  Option on;
  double mem, cycles;
} Timed;

/* Member I with row W's bytes priced as price_einsum prices it on X (R:
 * scratch): its memory time, the latency binding's unit, its cycles. */
static Timed member_time(const GroupBill *b, const Ctx *x, const Row *w,
                         EinsumEval *r) {
  const Arch *a = x->a;
  const double *by = &b->bytes[w->at];
  int i = w->member;
  Timed t = {b->as[i], 0, 0};
  for (int f = 0; f < b->nfin; f++) {
    double c = level_cycles(&a->levels[b->fin[f]], by[3 * f + 2],
                            a->clock_hz, by[3 * f], by[3 * f + 1]);
    if (c > t.mem)
      t.mem = c;
  }
  /* bind_for_latency's walk over the units it weighs, in its order;
   * the cycles of the unit it keeps are those it kept. */
  option_set(r, &t.on);
  t.cycles = einsum_cycles(x, r, t.mem);
  for (int k = b->alt_at[i]; k < b->alt_at[i + 1]; k++) {
    const Option *o = &b->alt[k];
    if (o->unit == t.on.unit)
      continue;
    option_set(r, o);
    double cyc = einsum_cycles(x, r, t.mem);
    if (latency_rebinds(cyc, t.cycles)) {
      t.cycles = cyc;
      t.on = *o;
    }
  }
  return t;
}

/* The scratch group_bill_cycles takes on the stack (a group of up to
 * ~16 members): it runs for every kept group of every later search of a
 * sweep, where an allocation each was a twentieth of its time. */
enum { BILL_SCRATCH = 16 * 1024 };

bool group_bill_cycles(const GroupBill *b, const Arch *a, double start,
                       double *cycles) {
  Ctx x = {.a = a, .o = b->o, .word = a->word_bytes,
           .bw = dram_bytes_per_cycle(a)};
  size_t n = (size_t)b->n + 1;
  /* The members as bound (the trials compose them), a variant's members
   * (compose_cycles reads them), each row's time, the trials' times and
   * the members' memory. */
  size_t need = 2 * n * sizeof(EinsumEval) +
                (size_t)b->nrows * sizeof(Timed) +
                (n + (size_t)b->ntrials) * sizeof(double);
  _Alignas(max_align_t) unsigned char scratch[BILL_SCRATCH];
  EinsumEval *as =
      need <= sizeof scratch ? (EinsumEval *)scratch : xmalloc(need);
  EinsumEval *e = as + n;
  Timed *row = (Timed *)(e + n);
  double *mem = (double *)(row + b->nrows);
  for (int i = 0; i < b->n; i++)
    option_set(&as[i], &b->as[i]);
  bool ok = same_choices(b, &x, as, mem + n, mem);
  for (int r = 0; ok && r < b->nrows; r++)
    row[r] = member_time(b, &x, &b->row[r], &e[0]);
  for (int v = 0; ok && v < b->nv; v++) {
    /* The members a variant moves to another row take that row's time;
     * the others keep the times they had in the variant before. */
    for (int k = b->move_at[v]; k < b->move_at[v + 1]; k++) {
      const Move *m = &b->move[k];
      const Timed *t = &row[m->row];
      option_set(&e[m->member], &t->on);
      e[m->member].mem_cycles = t->mem;
      e[m->member].cycles = t->cycles;
    }
    cycles[v] = compose_cycles(&x, 0, e, b->n, start);
  }
  if ((unsigned char *)as != scratch)
    free(as);
  return ok;
}

/* ---- the key ---- */

typedef struct Words {
  int n, cap;
  uint64_t *w;
} Words;

static void put(Words *k, uint64_t w) { VEC_PUSH(k->w, k->n, k->cap, w); }

static void put_double(Words *k, double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  put(k, u);
}

static void put_text(Words *k, const char *s) {
  size_t len = s ? strlen(s) : 0;
  put(k, (uint64_t)len);
  for (size_t i = 0; i < len; i += 8) {
    uint64_t w = 0;
    memcpy(&w, s + i, len - i < 8 ? len - i : 8);
    put(k, w);
  }
}

/* A field of a level or unit (arch.h's tables): its value, but a
 * bandwidth's (a quantity in bytes/s), of which only whether there is
 * one (the tile choice weighs time only where DRAM's is the only one). */
static void put_field(Words *k, const void *rec, const ArchField *f) {
  double v = arch_field_value(rec, f);
  if (f->dim && strcmp(f->dim, "bytes/s") == 0)
    put(k, isfinite(v));
  else
    put_double(k, v);
}

/* Every field of A but the clock and the levels' bandwidths. */
static void put_arch(Words *k, const Arch *a) {
  put_text(k, a->name);
  put(k, (uint64_t)a->word_bytes);
  put_double(k, a->kernel_s);
  put(k, (uint64_t)a->nlevels);
  put(k, (uint64_t)a->fusion_level);
  for (int l = 0; l < a->nlevels; l++) {
    put_text(k, a->levels[l].name);
    for (int f = 0; f < MEM_LEVEL_NFIELDS; f++)
      put_field(k, &a->levels[l], &mem_level_fields[f]);
  }
  put(k, (uint64_t)a->nunits);
  for (int u = 0; u < a->nunits; u++) {
    const Unit *U = &a->units[u];
    put_text(k, U->name);
    put(k, (uint64_t)U->role);
    put(k, (uint64_t)U->pes);
    put(k, (uint64_t)U->rows);
    put(k, (uint64_t)U->cols);
    put(k, (uint64_t)(int64_t)U->mode_of);
    for (int c = 0; c < OPC_COUNT; c++)
      put_double(k, U->rate[c]);
    put(k, (uint64_t)(int64_t)U->epilogue);
    put(k, (uint64_t)U->reduction);
    put(k, (uint64_t)U->tile_m);
    put(k, (uint64_t)U->tile_n);
    for (int f = 0; f < COMPUTE_UNIT_NFIELDS; f++)
      put_field(k, U, &compute_unit_fields[f]);
  }
  for (int c = 0; c < OPC_COUNT; c++)
    put_double(k, a->op_pj[c]);
  put(k, (uint64_t)a->nbindings);
  for (int i = 0; i < a->nbindings; i++) {
    put_text(k, a->bindings[i].tensor);
    put(k, (uint64_t)a->bindings[i].unit);
  }
  /* The area section prices nothing, but it is the file's: kept, so that
   * the key is every field of the file but the times. */
  const ArchArea *ar = &a->area;
  put(k, ar->given);
  put_double(k, ar->node_nm);
  put_double(k, ar->interconnect);
  put(k, (uint64_t)ar->nonlinear);
  put(k, (uint64_t)ar->nfus);
  for (int i = 0; i < ar->nfus; i++) {
    put_text(k, ar->fus[i].name);
    for (int c = 0; c < OPC_COUNT; c++)
      put(k, ar->fus[i].ops[c]);
    put_double(k, ar->fus[i].area);
    put(k, ar->fus[i].nonlinear);
  }
}

/* The options, each by its row (model.h's MODEL_OPTIONS), and the
 * design's baseline fields. */
static void put_opts(Words *k, const ModelOpts *o) {
#define OPT_WORD_BOOL(field) put(k, (uint64_t)(int64_t)o->field);
#define OPT_WORD_SWITCH(field) put(k, (uint64_t)(int64_t)o->field);
#define OPT_WORD_ENUM(field) put(k, (uint64_t)(int64_t)o->field);
#define OPT_WORD_INT(field) put(k, (uint64_t)(int64_t)o->field);
#define OPT_WORD_SHARE(field) put_double(k, o->field);
#define OPT_WORD(K, name, field, ...) OPT_WORD_##K(field)
  MODEL_OPTIONS(OPT_WORD)
#undef OPT_WORD
#undef OPT_WORD_BOOL
#undef OPT_WORD_SWITCH
#undef OPT_WORD_ENUM
#undef OPT_WORD_INT
#undef OPT_WORD_SHARE
  put(k, (uint64_t)o->plan);
  put(k, o->bound);
  put(k, o->hold_whole);
  put(k, o->bind_alone);
}

int model_arch_key(const Arch *a, uint64_t **key) {
  Words k = {0};
  put_arch(&k, a);
  *key = k.w;
  return k.n;
}

int model_group_key(const Cascade *c, const Shape *s, const Arch *a,
                    Design d, const ModelOpts *o, uint64_t **key) {
  Words k = {0};
  put(&k, (uint64_t)(uintptr_t)c);
  put(&k, (uint64_t)(uintptr_t)s->model);
  for (int r = 0; r < c->nranks; r++)
    put(&k, (uint64_t)s->size[r]);
  for (int i = 0; i < c->nsyms; i++)
    put_double(&k, s->sym[i]);
  put(&k, (uint64_t)d);
  put_opts(&k, o);
  put_arch(&k, a);
  *key = k.w;
  return k.n;
}
