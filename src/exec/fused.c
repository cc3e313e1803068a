/* fused.c — the fused executor: run a fusion plan group by group, each
 * group as one loop nest over tiles of the ranks its tensors share.
 *
 * The tensors a group keeps on chip (produced and consumed inside it) live
 * in tile buffers: one tile of the shared ranks at a time, plus a halo of
 * the previous tile where a window or a recurrence reads back (TTX[i-3],
 * H[i-1]). Everything else is an off-chip array. Every element a group
 * reads from or writes to an off-chip array is marked in its bitmap, so the
 * bytes counted are each distinct element once per group — the model's
 * ideal accounting. A recurrence never spans groups (plans that part one
 * are refused), so reads inside it (the lagged read, and reads between
 * the Einsums of its cycle) stay on chip, as in the model.
 *
 * A group whose Einsums read a tensor of the group ahead of the current
 * tile cannot be tiled: it runs as one tile. */
#include "run.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bitmaps of 64-bit words, with a count of the bits set: every element
 * counted once. Boxes are marked by the main thread, between runs. */
typedef struct Bits {
  uint64_t *w;
  int64_t count;
} Bits;

/* What run_tile decides at a schedule position of a unit (see Unit):
 * whether the scan kernel's pattern starts there among the AVAIL
 * positions it was given (-1: not asked yet), which depends on the
 * cascade alone, and the stretch grown from there (GROW_AVAIL -1: not
 * grown yet; SLICE 0: not cut), which depends on the extents of the tile
 * too (TEXT: those it was grown for). A prompt's scan group runs 19 tiles
 * a layer; each asked the cascade again (scan_find, grow_stretch). */
typedef struct Step {
  int scan_avail;
  bool scan;
  Scan sc;
  int grow_avail, n, split;
  int64_t slice;
  int64_t text[IR_MAX_RANKS];
} Step;

/* A unit's decisions: what it holds on chip, its halos, what its tiles
 * write, its tiling, what it releases, and for a unit of one tile (every
 * unit of a decode step) its members' regions and run_tile's steps. They
 * depend on the cascade, the shapes, the plan and the options only, never
 * on the values, so they are made at the unit's first run and replayed at
 * every later run of the same Exec (the layers and decode steps after the
 * first): a decode step then walks these few tables instead of the
 * cascade, whose structures the weights' stream has evicted from the
 * caches since the last layer. */
typedef struct Unit {
  bool ready;
  bool *onchip;     /* per tensor: held in a tile buffer */
  bool *made;       /* per tensor: produced by the unit */
  int64_t *halo;    /* per tensor: steps kept from the previous tile */
  int64_t *tail_len; /* per tensor: its state's steps to capture */
  char *written;    /* per on-chip tensor: Written */
  int nt;
  int trank[IR_MAX_RANKS];
  int64_t tsize[IR_MAX_RANKS], ttile[IR_MAX_RANKS];
  int *release; /* the tensors released once the unit has run */
  int nrelease;
  Region *base; /* per schedule position: the member's region (one tile) */
  Step *steps;  /* per schedule position */
} Unit;

/* Every group's Unit, kept in the Run from run to run (fused_forget),
 * with what a run needs whatever its units: Fused's per-run tables, in
 * one block (nothing of a run's values is kept, only their memory), and
 * the jobs that fill the next state's fronts. */
struct Units {
  int n;
  Unit *u;
  void *tables;         /* Fused's tables (fused_tables) */
  size_t tables_bytes;
  VmJob **next_fronts;  /* per tensor: the job writing the front of its
                           next state (fill_front_by); the halos' is the
                           Run's, for a front of another length */
};

typedef struct Fused {
  Run *r;
  const Plan *p;
  Sched sched;
  const int *scc; /* sched.scc */
  bool *member;   /* per Einsum: in the current unit */
  /* The current unit's decisions (its Unit's tables). */
  const bool *onchip;  /* per tensor: held in a tile buffer */
  const bool *made;    /* per tensor: produced by the current unit */
  const int64_t *halo; /* per tensor: steps kept from the previous tile */
  Step *steps;         /* the unit's steps */
  Array **buf;    /* per tensor: its tile buffer */
  Array **tail;   /* per tensor with an initialization: its last steps */
  Array **kept;   /* per on-chip tensor, with keep_all: its whole copy */
  int64_t *tail_len;
  bool *pending; /* per on-chip tensor: its halo's initialization not yet
                    written (filled before its first reader runs) */
  const char *written; /* per on-chip tensor: how much of its buffer the
                          unit writes (Written) */
  bool counting;        /* the caller asked for the bytes (ExecStats) */
  Bits **rmap, **wmap; /* per group and tensor ([g * ntensors + t]):
                          elements read / written */
  int gfirst, glast;      /* the unit's groups */
  /* The tiling of the current unit. */
  int nt;
  int trank[IR_MAX_RANKS];
  int64_t tsize[IR_MAX_RANKS], ttile[IR_MAX_RANKS];
  int64_t tlo[IR_MAX_RANKS], thi[IR_MAX_RANKS]; /* the current tile */
} Fused;

static int64_t rank_size(const Fused *f, int r) { return f->r->s->size[r]; }

static int first_dim(const Tensor *T, int r) {
  for (int k = 0; k < T->nranks; k++)
    if (T->ranks[k] == r)
      return k;
  return -1;
}

/* ---- counting ---- */

static void set_range(Bits *b, int64_t lo, int64_t hi) {
  while (lo < hi) {
    int64_t word = lo >> 6, end = (word + 1) << 6;
    if (end > hi)
      end = hi;
    int64_t len = end - lo;
    uint64_t m = len == 64 ? ~(uint64_t)0
                           : (((uint64_t)1 << len) - 1) << (lo & 63);
    b->count += __builtin_popcountll(m & ~b->w[word]);
    b->w[word] |= m;
    lo = end;
  }
}

static Bits *map_for(const Fused *f, Bits **maps, int t) {
  if (!maps[t]) {
    int64_t shape[IR_MAX_RANKS], n = 1;
    tensor_shape(f->r, t, shape);
    for (int k = 0; k < f->r->c->tensors[t].nranks; k++)
      n *= shape[k];
    maps[t] = xcalloc(1, sizeof(Bits));
    maps[t]->w = xcalloc((size_t)(n / 64 + 1), sizeof(uint64_t));
  }
  return maps[t];
}

/* Mark every element of tensor T in the product of the spans BOX (the
 * elements an access touches: ir.h): runs along the last coordinate when
 * its step is 1, else one by one. */
static void mark_spans(Fused *f, Bits **maps, int t, const Span *box) {
  const Tensor *T = &f->r->c->tensors[t];
  int n = T->nranks;
  int64_t shape[IR_MAX_RANKS];
  tensor_shape(f->r, t, shape);
  for (int k = 0; k < n; k++)
    if (box[k].count <= 0)
      return;
  Bits *map = map_for(f, maps, t);
  int64_t pos[IR_MAX_RANKS] = {0}; /* the step of each coordinate */
  for (;;) {
    int64_t off = 0;
    for (int k = 0; k + 1 < n; k++)
      off = (off + box[k].first + pos[k] * box[k].step) * shape[k + 1];
    if (n == 0) {
      set_range(map, 0, 1);
    } else {
      const Span *last = &box[n - 1];
      if (last->step == 1)
        set_range(map, off + last->first, off + last->first + last->count);
      else
        for (int64_t j = 0; j < last->count; j++)
          set_range(map, off + last->first + j * last->step,
                    off + last->first + j * last->step + 1);
    }
    int k = n - 2;
    while (k >= 0 && ++pos[k] == box[k].count) {
      pos[k] = 0;
      k--;
    }
    if (k < 0)
      break;
  }
}

/* Group G's bitmaps (read or written). */
static Bits **group_maps(const Fused *f, Bits **maps, int g) {
  return maps + (size_t)g * (size_t)f->r->c->ntensors;
}

/* Count, for group G, what T's initialization reads to write STEPS steps
 * before the start over the box [LO, HI) of T's other dimensions. */
static void count_front(Fused *f, int g, int t, int64_t steps,
                        const int64_t *lo, const int64_t *hi) {
  const Einsum *ini = f->r->c->tensors[t].init;
  Region reg;
  Span box[IR_MAX_RANKS];
  front_region(f->r, t, steps, lo, hi, &reg);
  for (int k = 0; k < ini->nreads; k++) {
    access_spans(f->r->s, ini->reads[k], &reg, box);
    mark_spans(f, group_maps(f, f->rmap, g), ini->reads[k]->tensor, box);
  }
}

/* How many steps before the start of its tensor's initialized rank access
 * A reaches over region RG (0: none, or no initialization). */
static int64_t before_start(const Fused *f, const Access *a,
                            const Region *rg) {
  const Einsum *ini = f->r->c->tensors[a->tensor].init;
  if (!ini)
    return 0;
  Span sp = index_span(f->r->s, &a->idx[ini->out.cond_dim], rg);
  return sp.count > 0 && sp.first < 0 ? -sp.first : 0;
}

/* Does on-chip T's halo hold what reads before its start see (filled, and
 * counted, by start_halo)? Elsewhere such reads find the steps in front of
 * T's array or read the initialization through vm_read, and each reader
 * counts them. */
static bool halo_serves(const Fused *f, int t) {
  const Tensor *T = &f->r->c->tensors[t];
  return f->onchip[t] && f->nt > 0 && f->halo[t] > 0 && T->init &&
         T->init->out.cond_dim == first_dim(T, f->trank[f->nt - 1]);
}

/* What Einsum E moves over region RG, as the plan's geometry says: its
 * reads from off-chip memory, what its reads before a start need of the
 * initializations' inputs, its output if the plan writes it; counted for
 * E's group. */
static void count_einsum(Fused *f, int e, const Region *rg) {
  if (!f->counting)
    return;
  const Einsum *E = f->r->c->einsums[e];
  int g = f->p->group_of[e];
  Span box[IR_MAX_RANKS];
  int64_t lo[IR_MAX_RANKS], hi[IR_MAX_RANKS];
  for (int k = 0; k < E->nreads; k++) {
    const Access *a = E->reads[k];
    int64_t steps = halo_serves(f, a->tensor) ? 0 : before_start(f, a, rg);
    if (f->onchip[a->tensor] && steps == 0)
      continue;
    access_spans(f->r->s, a, rg, box);
    if (steps > 0) {
      for (int d = 0; d < a->n; d++) {
        lo[d] = box[d].first;
        hi[d] = box[d].first + box[d].step * (box[d].count - 1) + 1;
      }
      count_front(f, g, a->tensor, steps, lo, hi);
    }
    if (!f->onchip[a->tensor] && f->p->src[e][k] == SRC_DRAM)
      mark_spans(f, group_maps(f, f->rmap, g), a->tensor, box);
  }
  if (f->p->written[E->out.tensor]) {
    access_spans(f->r->s, &E->out, rg, box);
    mark_spans(f, group_maps(f, f->wmap, g), E->out.tensor, box);
  }
}

/* What each group of the unit reads of on-chip T before its start, served
 * by the halo that start_halo fills over the box [LO, HI): the steps each
 * group's own reads reach, counted for that group. */
static void count_halo(Fused *f, int t, const int64_t *lo,
                       const int64_t *hi) {
  const Cascade *c = f->r->c;
  for (int g = f->gfirst; f->counting && g <= f->glast; g++) {
    int64_t reach = 0;
    for (int e = 0; e < c->neinsums; e++) {
      const Einsum *E = c->einsums[e];
      if (!f->member[e] || f->p->group_of[e] != g)
        continue;
      Region full;
      region_full(f->r->s, E, &full);
      for (int k = 0; k < E->nreads; k++)
        if (E->reads[k]->tensor == t) {
          int64_t n = before_start(f, E->reads[k], &full);
          reach = n > reach ? n : reach;
        }
    }
    if (reach > 0)
      count_front(f, g, t, reach, lo, hi);
  }
}

static void flush_counts(Fused *f) {
  ExecStats *st = f->r->st;
  int nt = f->r->c->ntensors;
  for (int i = f->gfirst * nt; i < (f->glast + 1) * nt; i++)
    for (int w = 0; w < 2; w++) {
      int t = i % nt;
      Bits **m = w ? &f->wmap[i] : &f->rmap[i];
      if (!*m)
        continue;
      double bytes = 4.0 * (double)(*m)->count;
      if (st) {
        (w ? st->write : st->read)[t] += bytes;
        if (w)
          st->write_total += bytes;
        else
          st->read_total += bytes;
      }
      free((*m)->w);
      free(*m);
      *m = NULL;
    }
}

/* ---- the tiling of a unit ---- */

/* The unit's common outer loops: the ranks the plan lets it tile. */
static void unit_ranks(Fused *f) {
  f->nt = plan_tile_ranks(f->r->c, f->member, f->trank);
  for (int j = 0; j < f->nt; j++)
    f->tsize[j] = rank_size(f, f->trank[j]);
}

/* How far back (>= 0) a read reaches along a tiled rank of the tensor it
 * reads, relative to the reader's tile; -1 if it reads ahead, or reads the
 * rank through some other variable, and so cannot be tiled. */
static int64_t reach_back(const Fused *f, int e, const Access *a, int r) {
  const Cascade *c = f->r->c;
  int64_t lo, hi;
  int k = first_dim(&c->tensors[a->tensor], r);
  if (!read_offset(f->r, c->einsums[e], a, k, &lo, &hi) || hi > 0)
    return -1;
  return -lo;
}

/* Check that the unit can walk its tiles, and find each tensor's halo
 * (into U's). False: run it as one tile. */
static bool tileable(const Fused *f, Unit *u) {
  const Cascade *c = f->r->c;
  int inner = f->nt - 1;
  for (int e = 0; e < c->neinsums; e++) {
    if (!f->member[e])
      continue;
    const Einsum *E = c->einsums[e];
    for (int k = 0; k < E->nreads; k++) {
      const Access *a = E->reads[k];
      int t = a->tensor;
      if (!f->made[t] || f->p->src[e][k] == SRC_RECURRENCE)
        continue;
      for (int j = 0; j < f->nt; j++) {
        int64_t back = reach_back(f, e, a, f->trank[j]);
        if (back < 0 || (back > 0 && j != inner))
          return false;
        if (f->onchip[t] && back > u->halo[t])
          u->halo[t] = back;
      }
    }
  }
  /* Lagged reads inside a recurrence read the previous step: a halo of
   * the lag along the recurrence's rank (which must be the inner one). */
  for (int i = 0; i < c->nedges; i++) {
    const Edge *ed = &c->edges[i];
    if (!ed->lagged || !f->member[ed->consumer] || !f->onchip[ed->tensor])
      continue;
    for (int k = 0; k < ed->acc[0]->n; k++) {
      int lag = ed->acc[0]->idx[k].lag;
      int r = c->tensors[ed->tensor].ranks[k];
      if (lag <= 0)
        continue;
      bool tiled = false;
      for (int j = 0; j < f->nt; j++)
        tiled = tiled || f->trank[j] == r;
      if (tiled && (f->nt == 0 || f->trank[inner] != r))
        return false;
      if (tiled && lag > u->halo[ed->tensor])
        u->halo[ed->tensor] = lag;
    }
  }
  return true;
}

/* How much of an on-chip tensor's tile buffer a tile writes: all of it,
 * or, where the scan kernel keeps the tensor inside (scan.c), nothing
 * (T, U, the folded producers' outputs) or only the last step (the state
 * S read by nothing else; and its halo). */
typedef enum { W_ALL, W_NONE, W_LAST } Written;

/* Elements of tensor T's tile buffer for tiles of the given sizes. */
static double tile_elems(const Fused *f, int t, const int64_t *tile) {
  const Tensor *T = &f->r->c->tensors[t];
  double n = 1;
  for (int k = 0; k < T->nranks; k++) {
    int64_t ext = rank_size(f, T->ranks[k]);
    for (int j = 0; j < f->nt; j++)
      if (f->trank[j] == T->ranks[k] && first_dim(T, f->trank[j]) == k)
        ext = tile[j] + (j == f->nt - 1 ? f->halo[t] : 0);
    n *= (double)ext;
  }
  return n;
}

/* Bytes of the unit's tile buffers that tiles TILE write. */
static double tile_bytes(const Fused *f, const int64_t *tile) {
  double bytes = 0;
  int64_t last[IR_MAX_RANKS]; /* a tile one step long along the inner rank */
  memcpy(last, tile, sizeof *tile * (size_t)f->nt);
  if (f->nt > 0)
    last[f->nt - 1] = 1;
  for (int t = 0; t < f->r->c->ntensors; t++)
    if (f->onchip[t] && f->written[t] != W_NONE)
      bytes += 4 * tile_elems(f, t, f->written[t] == W_LAST ? last : tile);
  return bytes;
}

/* The bytes of the weights (inputs of the cascade) that the unit's
 * products read: each tile streams them again, packed in fp32
 * (kernel_gemm_pack), or as stored for a matrix-vector product. */
static double weight_bytes(const Fused *f) {
  const Cascade *c = f->r->c;
  bool *seen = xcalloc((size_t)c->ntensors + 1, sizeof *seen);
  double bytes = 0;
  for (int e = 0; e < c->neinsums; e++) {
    const Einsum *E = c->einsums[e];
    if (!f->member[e] || !einsum_is_gemm(c, E))
      continue;
    for (int k = 0; k < E->nreads; k++) {
      int t = E->reads[k]->tensor;
      if (c->tensors[t].producer >= 0 || seen[t])
        continue;
      seen[t] = true;
      int64_t shape[IR_MAX_RANKS];
      tensor_shape(f->r, t, shape);
      double n = 1;
      for (int d = 0; d < c->tensors[t].nranks; d++)
        n *= (double)shape[d];
      bytes += 4 * n;
    }
  }
  free(seen);
  return bytes;
}

/* A tile's buffers hold at least this many times the bytes of the weights
 * the unit's products stream (choose_tile). */
enum { WEIGHT_SHARE = 4 };

/* The tile. Under the plan's geometry the off-chip traffic does not depend
 * on it (each distinct element once per group), so what is left to choose
 * is the fewest tiles whose buffers fit (the buffer, or the weights the
 * tiles' products stream if more): ranks are filled innermost first
 * (consecutive steps of a recurrence), each to the largest extent that
 * fits (by bisection: the buffers only grow with the tile), and the last
 * rank that does not fit whole is cut into equal tiles, as many as that
 * extent needs. The inner tile covers the halos. */
static void choose_tile(Fused *f) {
  const Cascade *c = f->r->c;
  int64_t min_inner = 1;
  for (int t = 0; t < c->ntensors; t++)
    if (f->onchip[t] && f->halo[t] > min_inner)
      min_inner = f->halo[t];
  int64_t tile[IR_MAX_RANKS];
  for (int j = 0; j < f->nt; j++)
    tile[j] = 1;
  /* Tiles whose buffers hold less than the weights the unit's products
   * stream each tile would spend longer streaming weights than computing:
   * a 512-token mamba2-130m prefill under full, in tiles of 6 tokens (2
   * MiB), ran its projections as matrix-vector products, each tile
   * streaming the layer's weights. And a unit of several tiles first
   * packs those weights whole (kernel_gemm_pack: fp32, in pages the
   * system maps and clears again for every layer), then reads the pack
   * once per tile: at a buffer of once the weights (15 MB a layer, 3
   * tiles of 171 tokens), a 512-token prompt under full took 83 000 more
   * page faults than the interpreter's and 0.71-0.76 of its speed. So the
   * buffer is at least WEIGHT_SHARE times those weights' bytes: packing
   * and re-reading them is then a small part of what a tile moves, and
   * such a prompt of the 130m and 370m models is one tile, its products
   * the interpreter's (no pack). */
  double cap = fmax(f->r->o->buffer_bytes, WEIGHT_SHARE * weight_bytes(f));
  for (int j = f->nt - 1; j >= 0; j--) {
    int64_t lo = 1, hi = f->tsize[j]; /* the largest that fits, in [1, hi] */
    tile[j] = hi;
    if (tile_bytes(f, tile) > cap) {
      while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        tile[j] = mid;
        if (tile_bytes(f, tile) <= cap)
          lo = mid;
        else
          hi = mid - 1;
      }
      int64_t n = (f->tsize[j] + lo - 1) / lo; /* equal tiles */
      tile[j] = (f->tsize[j] + n - 1) / n;
      break;
    }
  }
  for (int j = 0; j < f->nt; j++)
    f->ttile[j] = tile[j];
  if (f->nt > 0 && f->ttile[f->nt - 1] < min_inner)
    f->ttile[f->nt - 1] =
        min_inner < f->tsize[f->nt - 1] ? min_inner : f->tsize[f->nt - 1];
}

/* ---- buffers and views ---- */

static bool alloc_buffers(Fused *f) {
  const Cascade *c = f->r->c;
  for (int t = 0; t < c->ntensors; t++) {
    if (!f->onchip[t])
      continue;
    const Tensor *T = &c->tensors[t];
    int64_t shape[IR_MAX_RANKS];
    tensor_shape(f->r, t, shape);
    for (int j = 0; j < f->nt; j++) {
      int k = first_dim(T, f->trank[j]);
      shape[k] = f->ttile[j] + (j == f->nt - 1 ? f->halo[t] : 0);
    }
    f->buf[t] = run_array(f->r, T->nranks, shape);
    if (!f->buf[t]) {
      diag_error(f->r->d, c->path, T->loc, "tile of %s too large", T->name);
      return false;
    }
    f->r->views[t] = view_of(f->buf[t]->data, shape, T->nranks);
    f->r->live += 4.0 * (double)f->buf[t]->n;
  }
  if (f->r->live > f->r->peak)
    f->r->peak = f->r->live;
  return true;
}

static void free_buffers(Fused *f) {
  for (int t = 0; t < f->r->c->ntensors; t++)
    if (f->buf[t]) {
      f->r->live -= 4.0 * (double)f->buf[t]->n;
      run_drop(f->r, f->buf[t]);
      f->buf[t] = NULL;
      if (!f->r->borrowed[t]) /* else advanced in place: next_state's */
        memset(&f->r->views[t], 0, sizeof f->r->views[t]);
    }
}

/* Move the last HALO steps of the previous tile to the front of T's
 * buffer along the inner tiled dimension. */
static void shift_halo(Fused *f, int t, int64_t prev_len) {
  int64_t h = f->halo[t];
  if (h == 0)
    return;
  const Tensor *T = &f->r->c->tensors[t];
  View *v = &f->r->views[t];
  int k = first_dim(T, f->trank[f->nt - 1]);
  int64_t outer = 1, inner = v->stride[k];
  for (int d = 0; d < k; d++)
    outer *= v->extent[d];
  for (int64_t o = 0; o < outer; o++) {
    float *base = v->data + o * v->extent[k] * inner;
    memmove(base, base + prev_len * inner, sizeof(float) * (size_t)(h * inner));
  }
}

/* Does the unit run as one tile? */
static bool one_tile(const Fused *f) {
  for (int j = 0; j < f->nt; j++)
    if (f->ttile[j] < f->tsize[j])
      return false;
  return true;
}

/* The box of T's other dimensions that the current tile's halo covers
 * (the outer tiled ranks' tile, the rest whole). */
static void halo_box(const Fused *f, int t, int64_t *lo, int64_t *hi) {
  const Tensor *T = &f->r->c->tensors[t];
  for (int d = 0; d < T->nranks; d++) {
    lo[d] = 0;
    hi[d] = rank_size(f, T->ranks[d]);
    for (int j = 0; j + 1 < f->nt; j++)
      if (first_dim(T, f->trank[j]) == d) {
        lo[d] = f->tlo[j];
        hi[d] = f->thi[j];
      }
  }
}

/* Before the first tile along the inner rank, the halo of on-chip T holds
 * what reads before the start see: T's initialization (when it conditions
 * that rank), counted as its inputs' reads, or zeros. The initialization
 * is written only once something reads the halo (fill_reads), in the
 * first tile: a state the scan kernel advances in place never is, and a
 * later tile's halo is the previous tile's steps (walk_tiles). */
static void start_halo(Fused *f, int t) {
  const Tensor *T = &f->r->c->tensors[t];
  int inner = f->nt - 1, k = first_dim(T, f->trank[inner]);
  int64_t h = f->halo[t];
  if (h == 0)
    return;
  if (T->init && T->init->out.cond_dim == k) {
    int64_t lo[IR_MAX_RANKS], hi[IR_MAX_RANKS];
    halo_box(f, t, lo, hi);
    count_halo(f, t, lo, hi);
    f->pending[t] = true;
    return;
  }
  const View *v = &f->r->views[t];
  int64_t outer = 1, inner_n = v->stride[k];
  for (int d = 0; d < k; d++)
    outer *= v->extent[d];
  for (int64_t o = 0; o < outer; o++)
    memset(v->data + o * v->extent[k] * inner_n, 0,
           sizeof(float) * (size_t)(h * inner_n));
}

/* Point the on-chip tensors' views at the current tile. */
static void place_tile(Fused *f) {
  const Cascade *c = f->r->c;
  for (int t = 0; t < c->ntensors; t++) {
    if (!f->onchip[t])
      continue;
    const Tensor *T = &c->tensors[t];
    View *v = &f->r->views[t];
    for (int j = 0; j < f->nt; j++) {
      int k = first_dim(T, f->trank[j]);
      int64_t h = j == f->nt - 1 ? f->halo[t] : 0;
      v->origin[k] = f->tlo[j] - h;
    }
  }
}

/* ---- copies out of the tile buffers ---- */

/* The box [LO, HI) of on-chip T that the current tile computed: not its
 * halo, not stale rows past its end. False if it is empty. */
static bool tile_box(const Fused *f, int t, int64_t *lo, int64_t *hi) {
  const Tensor *T = &f->r->c->tensors[t];
  const View *v = &f->r->views[t];
  for (int k = 0; k < T->nranks; k++) {
    lo[k] = v->origin[k] < 0 ? 0 : v->origin[k];
    hi[k] = v->origin[k] + v->extent[k];
    int64_t size = rank_size(f, T->ranks[k]);
    if (hi[k] > size)
      hi[k] = size;
    for (int j = 0; j < f->nt; j++)
      if (first_dim(T, f->trank[j]) == k) {
        lo[k] = f->tlo[j] > lo[k] ? f->tlo[j] : lo[k];
        hi[k] = f->thi[j] < hi[k] ? f->thi[j] : hi[k];
      }
  }
  for (int k = 0; k < T->nranks; k++)
    if (lo[k] >= hi[k])
      return false;
  return true;
}

/* Copy the non-empty box [LO, HI) of view V (N >= 1 dimensions) into DST,
 * whose dimension k starts at coordinate AT[k] of V's: row by row along
 * the last dimension, contiguous in both. */
static void copy_box(const View *v, int n, const int64_t *lo,
                     const int64_t *hi, Array *dst, const int64_t *at) {
  int64_t pos[IR_MAX_RANKS];
  memcpy(pos, lo, sizeof(int64_t) * (size_t)n);
  for (;;) {
    int64_t src = 0, to = 0, stride = 1;
    for (int k = n - 1; k >= 0; k--) {
      src += (pos[k] - v->origin[k]) * v->stride[k];
      to += (pos[k] - at[k]) * stride;
      stride *= dst->shape[k];
    }
    memcpy(dst->data + to, v->data + src,
           sizeof(float) * (size_t)(hi[n - 1] - lo[n - 1]));
    int k = n - 2;
    while (k >= 0 && ++pos[k] == hi[k]) {
      pos[k] = lo[k];
      k--;
    }
    if (k < 0)
      break;
  }
}

/* Copy the steps of on-chip T that a next pass needs from its buffer (a
 * tensor with an initialization has at least its conditioned dimension). */
static void capture_tail(Fused *f, int t) {
  const Tensor *T = &f->r->c->tensors[t];
  int cond = T->init->out.cond_dim;
  int64_t steps = rank_size(f, T->ranks[cond]);
  int64_t shape[IR_MAX_RANKS], at[IR_MAX_RANKS] = {0};
  if (!f->tail[t]) {
    tensor_shape(f->r, t, shape);
    shape[cond] = f->tail_len[t];
    f->tail[t] = run_array(f->r, T->nranks, shape); /* written whole */
  }
  int64_t lo[IR_MAX_RANKS], hi[IR_MAX_RANKS];
  at[cond] = steps - f->tail_len[t];
  if (!tile_box(f, t, lo, hi))
    return;
  if (lo[cond] < at[cond])
    lo[cond] = at[cond];
  if (lo[cond] < hi[cond])
    copy_box(&f->r->views[t], T->nranks, lo, hi, f->tail[t], at);
}

/* Keep a whole copy of on-chip T, tile by tile, when the caller asked for
 * every produced tensor (keep_all: `exec --keep`): the copy is the
 * caller's, not the plan's, so no byte of it is counted as traffic. */
static bool keep_tile(Fused *f, int t) {
  const Tensor *T = &f->r->c->tensors[t];
  int64_t lo[IR_MAX_RANKS], hi[IR_MAX_RANKS], at[IR_MAX_RANKS] = {0};
  if (!f->kept[t]) {
    int64_t shape[IR_MAX_RANKS];
    tensor_shape(f->r, t, shape);
    f->kept[t] = array_new(T->nranks, shape);
    if (!f->kept[t]) {
      diag_error(f->r->d, f->r->c->path, T->loc,
                 "%s is too large to keep a copy of", T->name);
      return false;
    }
  }
  if (T->nranks == 0)
    f->kept[t]->data[0] = f->r->views[t].data[0];
  else if (tile_box(f, t, lo, hi))
    copy_box(&f->r->views[t], T->nranks, lo, hi, f->kept[t], at);
  return true;
}

/* Hand the unit's kept copies over as the tensors' arrays (exec.c's
 * collect returns them with the results). */
static void hand_over_kept(Fused *f) {
  Run *r = f->r;
  for (int t = 0; t < r->c->ntensors; t++)
    if (f->kept[t]) {
      r->arrays[t] = f->kept[t];
      r->borrowed[t] = false;
      r->front[t] = 0;
      r->live += 4.0 * (double)f->kept[t]->n;
      f->kept[t] = NULL;
    }
  if (r->live > r->peak)
    r->peak = r->live;
}

/* ---- running a unit ---- */

static bool run_member(Fused *f, int e, const Region *rg) {
  if (!vm_exec(run_job(f->r, 0, e), rg, f->r->d))
    return false;
  count_einsum(f, e, rg);
  return true;
}

/* E's region in the current tile: its variables over the tiled ranks
 * restricted to the tile. */
static void tile_region(const Fused *f, int e, Region *rg) {
  const Einsum *E = f->r->c->einsums[e];
  region_full(f->r->s, E, rg);
  for (int j = 0; j < f->nt; j++) {
    int v = var_over(E, f->trank[j]);
    if (v >= 0) {
      rg->lo[v] = f->tlo[j];
      rg->hi[v] = f->thi[j];
    }
  }
}

/* The schedule's node at position I: an Einsum, or a recurrence's
 * members. Returns how many positions it spans. */
static int node_len(const Fused *f, int i) {
  const Sched *sc = &f->sched;
  int e = sc->order[i], n = 1;
  while (f->scc[e] >= 0 && i + n < sc->n && f->scc[sc->order[i + n]] == f->scc[e])
    n++;
  return n;
}

/* Extend a stretch from position I over the following nodes of the unit
 * while they share a rank to slice; GEMMs stay out (they run whole, on
 * every worker). Returns the positions it spans; *SPLIT its rank. */
/* The unit's members from schedule position I on (consecutive). */
static int members_from(const Fused *f, int i) {
  int n = 0;
  while (i + n < f->sched.n && f->member[f->sched.order[i + n]])
    n++;
  return n;
}

/* Does the scan kernel's pattern start at position I, within its first
 * AVAIL positions? */
static bool scan_at(const Fused *f, int i, int avail, Scan *sc) {
  return scan_find(f->r, &f->sched.order[i], avail, sc);
}

/* Mark what the unit's scan patterns leave unwritten. The tile is priced
 * by what is written (tile_bytes): Mamba-2's [B, I, H, P, N] arrays HX,
 * HH and H (768 KB a token in mamba2-130m), never materialized by the
 * kernel, once cut a prompt into tiles of 3 tokens under a 2 MiB buffer:
 * 171 tiles of the scan's group for 512 tokens, and under full its
 * projections run as matrix-vector products, every weight streamed once
 * per tile (0.22 of the interpreter's speed at 128 tokens). Pages of a buffer
 * that nothing writes are never touched, so they cost no memory; where
 * the kernel refuses a region (scan_run) the vector machine writes the
 * whole buffer, as before. */
static void mark_written(const Fused *f, Unit *u) {
  const Cascade *c = f->r->c;
  memset(u->written, W_ALL, (size_t)c->ntensors);
  for (int i = 0; i < f->sched.n; i++) {
    Scan sc;
    if (!f->member[f->sched.order[i]] ||
        !scan_at(f, i, members_from(f, i), &sc))
      continue;
    int inner[] = {sc.mul, sc.prod, sc.dprod, sc.fprod};
    for (size_t k = 0; k < sizeof inner / sizeof inner[0]; k++) {
      int t = inner[k] >= 0 ? c->einsums[inner[k]]->out.tensor : -1;
      if (t >= 0 && scan_internal(f->r, &sc, t))
        u->written[t] = W_NONE;
    }
    int ts = c->einsums[sc.add]->out.tensor;
    if (scan_read_inside(f->r, &sc, ts) &&
        tensor_state_steps(f->r->s, ts) <= 1)
      u->written[ts] = W_LAST;
  }
}

static int grow_stretch(const Fused *f, int i, int avail, const Region *base,
                        int *split) {
  const Sched *sc = &f->sched;
  const Cascade *c = f->r->c;
  int n = 0;
  *split = -1;
  Scan scan;
  while (n < avail && (n == 0 || !scan_at(f, i + n, avail - n, &scan))) {
    int len = node_len(f, i + n);
    if (n + len > avail)
      break;
    bool gemm = false;
    for (int k = 0; k < len; k++)
      gemm = gemm || einsum_is_gemm(c, c->einsums[sc->order[i + n + k]]);
    int r = gemm ? -1 : stretch_rank(f->r, &sc->order[i], n + len, base);
    if (r < 0)
      break;
    *split = r;
    n += len;
  }
  return n;
}

/* Slices of about SLICE_BYTES of the stretch's outputs: what one member
 * writes is still in the cache (L2, or a slice of L3) when the next reads
 * it. But a recurrence runs a step at a time, and a step of fewer than
 * MIN_STEP elements would cost more in overhead than in work. */
enum { SLICE_BYTES = 1 << 20, MIN_STEP = 2048 };

static int64_t slice_extent(const Fused *f, const Stretch *st) {
  const Cascade *c = f->r->c;
  double per = 0, per_step = 0; /* per unit of the split rank */
  int64_t ext = 1;
  for (int k = 0; k < st->n; k++) {
    int e = st->members[k];
    const Einsum *E = c->einsums[e];
    const Region *b = &st->base[k];
    double n = 1;
    for (int v = 0; v < E->nvars; v++)
      if (VARSET_HAS(E->out_vars, v))
        n *= (double)(b->hi[v] - b->lo[v]);
    int sv = var_over(E, st->split);
    ext = b->hi[sv] - b->lo[sv];
    per += 4 * n / (double)ext;
    if (f->scc[e] >= 0) {
      int rv = var_over(E, recurrence_rank(c, e, f->scc));
      double steps = rv >= 0 ? (double)(b->hi[rv] - b->lo[rv]) : 1;
      per_step = fmax(per_step, n / (double)ext / steps);
    }
  }
  int workers = f->r->o->pool ? pool_size(f->r->o->pool) : 1;
  int64_t slice = (int64_t)(SLICE_BYTES / (per > 0 ? per : 1));
  if (per_step > 0 && slice * per_step < MIN_STEP)
    slice = (int64_t)ceil(MIN_STEP / per_step);
  int64_t fair = (ext + workers - 1) / workers; /* every worker has one */
  slice = slice < 1 ? 1 : slice > fair ? fair : slice;
  /* The workers take the slices in turn (run_stretch), so the slices are
   * made equal and as many as a multiple of the workers: cut at the size
   * alone, a 512-token prompt's norm (ri, mamba2-130m) ran as slices of
   * 170, 170, 170 and 2 tokens, one worker taking 340 while the other took
   * 172. Fewer slices rather than more where more would step a recurrence
   * in fewer than MIN_STEP elements. */
  int64_t n = (ext + slice - 1) / slice;
  int64_t up = (n + workers - 1) / workers * workers, down = n / workers * workers;
  int64_t even = (ext + up - 1) / up;
  if (per_step > 0 && (double)even * per_step < MIN_STEP && down > 0)
    even = (ext + down - 1) / down;
  return even;
}

/* scan_at, grow_stretch and slice_extent at position I, as decided the
 * first time (Step): the stretch again for a tile of other extents. */
static bool scan_step(Fused *f, int i, int avail, Scan *sc) {
  Step *s = &f->steps[i];
  if (s->scan_avail != avail) {
    s->scan_avail = avail;
    s->scan = scan_at(f, i, avail, &s->sc);
  }
  *sc = s->sc;
  return s->scan;
}

/* Is the current tile of the extents S was grown for? */
static bool same_extents(const Fused *f, const Step *s) {
  for (int j = 0; j < f->nt; j++)
    if (s->text[j] != f->thi[j] - f->tlo[j])
      return false;
  return true;
}

static int stretch_at(Fused *f, int i, int avail, const Region *base,
                      int *split) {
  Step *s = &f->steps[i];
  if (s->grow_avail != avail || !same_extents(f, s)) {
    s->grow_avail = avail;
    s->n = grow_stretch(f, i, avail, base, &s->split);
    s->slice = 0; /* a new stretch: cut anew */
    for (int j = 0; j < f->nt; j++)
      s->text[j] = f->thi[j] - f->tlo[j];
  }
  *split = s->split;
  return s->n;
}

static int64_t slice_at(Fused *f, int i, const Stretch *st) {
  Step *s = &f->steps[i];
  if (s->slice == 0)
    s->slice = slice_extent(f, st);
  return s->slice;
}

/* Write the pending halos that positions [I, I + N) read, but SKIP's. */
static bool fill_reads(Fused *f, int i, int n, int skip) {
  for (int p = i; p < i + n; p++) {
    const Einsum *E = f->r->c->einsums[f->sched.order[p]];
    for (int k = 0; k < E->nreads; k++) {
      int t = E->reads[k]->tensor;
      if (!f->pending[t] || t == skip)
        continue;
      int64_t lo[IR_MAX_RANKS], hi[IR_MAX_RANKS];
      halo_box(f, t, lo, hi);
      f->pending[t] = false;
      if (!fill_front(f->r, t, f->halo[t], lo, hi))
        return false;
    }
  }
  return true;
}

/* A linear recurrence and its read-out at position I, by the scan kernel
 * over their regions in the tile (BASE, by position), counted as the plan
 * places them: returns the positions it ran (0: none). */
static int run_scan(Fused *f, int i, int avail, const Region *base) {
  const Cascade *c = f->r->c;
  Run *r = f->r;
  Scan sc;
  if (!scan_step(f, i, avail, &sc))
    return 0;
  int tt = c->einsums[sc.mul]->out.tensor;
  int tu = sc.prod >= 0 ? c->einsums[sc.prod]->out.tensor : -1;
  bool wt = !scan_internal(r, &sc, tt);
  bool wu = tu >= 0 && !scan_internal(r, &sc, tu);
  /* The state advanced where its initialization read it, as the
   * interpreter does, when the unit is one tile (no later tile reads a
   * halo of it) and it is held on chip: nothing to capture, nothing to
   * copy into the next state. (The counts are the plan's either way.) */
  int ts = c->einsums[sc.add]->out.tensor;
  View held = r->views[ts];
  bool in_place = f->onchip[ts] && f->tail_len[ts] > 0 && one_tile(f) &&
                  !r->o->keep_all && scan_state_in_place(r, &sc);
  if (!fill_reads(f, i, sc.npos, in_place ? ts : -1))
    return -1;
  if (!scan_run(r, &sc, &f->sched.order[i], base, wt, wu)) {
    if (in_place) /* run as usual, in its tile buffer */
      scan_state_undo(r, &sc, &held);
    return 0;
  }
  if (in_place) {
    f->tail_len[ts] = 0;
    f->pending[ts] = false; /* read where it lies */
  }
  for (int k = 0; k < sc.npos; k++)
    count_einsum(f, f->sched.order[i + k], &base[k]);
  if (f->r->st)
    f->r->st->scan_einsums += sc.npos;
  return sc.npos;
}

/* The unit's Einsums over the current tile, in schedule order; a stretch
 * of them slice by slice, a recurrence a step at a time; matrix-vector
 * products together, one of them in the background (run_gemvs). What
 * runs while it does stops short of its first reader. */
static bool run_tile(Fused *f, const Region *kept) {
  const Cascade *c = f->r->c;
  const Sched *sc = &f->sched;
  /* Every member's region in the tile, by schedule position (KEPT: the
   * unit's, for its one tile). */
  Region *made = NULL;
  const Region *base = kept;
  if (!base) {
    made = xmalloc(((size_t)sc->n + 1) * sizeof *made);
    for (int k = 0; k < sc->n; k++)
      if (f->member[sc->order[k]])
        tile_region(f, sc->order[k], &made[k]);
    base = made;
  }
  bool ok = true;
  Background bg = {0};
  for (int i = 0; ok && i < sc->n;) {
    background_join(f->r, &bg, i + 1);
    if (!f->member[sc->order[i]]) {
      i++;
      continue;
    }
    int avail = background_avail(&bg, i, members_from(f, i));
    int done = run_scan(f, i, avail, &base[i]);
    if (done == 0) {
      done = run_gemvs(f->r, &sc->order[i], avail, i, &base[i], f->pending,
                       &bg);
      for (int k = 0; k < done; k++)
        count_einsum(f, sc->order[i + k], &base[i + k]);
    }
    if (done < 0) {
      ok = false;
      break;
    }
    if (done) {
      i += done;
      continue;
    }
    int split, n = stretch_at(f, i, avail, &base[i], &split);
    if (n == 0 && f->scc[sc->order[i]] >= 0) {
      n = node_len(f, i); /* a recurrence with no rank to slice */
      background_join(f->r, &bg, i + n);
    }
    if (!fill_reads(f, i, n > 0 ? n : 1, -1)) {
      ok = false;
      break;
    }
    if (n == 0 || (n == 1 && f->scc[sc->order[i]] < 0)) {
      /* A GEMM, or an Einsum alone: the VM spreads it over the pool. */
      ok = run_member(f, sc->order[i], &base[i]);
      i++;
      continue;
    }
    Stretch st = {.members = &sc->order[i], .n = n, .base = &base[i],
                  .split = split};
    st.slice = slice_at(f, i, &st);
    ok = run_stretch(f->r, &st, f->scc);
    for (int k = 0; ok && k < n; k++)
      count_einsum(f, sc->order[i + k], &base[i + k]);
    i += n;
  }
  background_join(f->r, &bg, sc->n + 1);
  free(made);
  for (int t = 0; ok && t < c->ntensors; t++) {
    if (f->onchip[t] && f->tail_len[t] > 0)
      capture_tail(f, t);
    if (f->onchip[t] && f->r->o->keep_all)
      ok = keep_tile(f, t);
  }
  return ok;
}

/* The unit's tiles; BASE: its members' regions when it is one tile
 * (Unit.base), or NULL. */
static bool walk_tiles(Fused *f, const Region *base) {
  int64_t idx[IR_MAX_RANKS] = {0};
  int64_t prev_len = 0;
  for (;;) {
    for (int j = 0; j < f->nt; j++) {
      f->tlo[j] = idx[j] * f->ttile[j];
      f->thi[j] = f->tlo[j] + f->ttile[j] < f->tsize[j] ? f->tlo[j] + f->ttile[j]
                                                        : f->tsize[j];
    }
    /* A tile that continues the previous one along the inner rank keeps
     * the halo (whether or not its initialization was ever written: the
     * previous tile's steps take its place); one that starts it afresh
     * reads the initialization. */
    if (f->nt > 0 && idx[f->nt - 1] > 0)
      for (int t = 0; t < f->r->c->ntensors; t++)
        if (f->onchip[t]) {
          shift_halo(f, t, prev_len);
          f->pending[t] = false;
        }
    place_tile(f);
    for (int t = 0; f->nt > 0 && idx[f->nt - 1] == 0 && t < f->r->c->ntensors;
         t++)
      if (f->onchip[t])
        start_halo(f, t);
    if (!run_tile(f, base))
      return false;
    if (f->nt > 0)
      prev_len = f->thi[f->nt - 1] - f->tlo[f->nt - 1];
    int j = f->nt - 1;
    while (j >= 0 && ++idx[j] * f->ttile[j] >= f->tsize[j])
      idx[j--] = 0;
    if (j < 0)
      break;
  }
  return true;
}

/* Is tensor T still needed once the groups up to LAST have run? Groups
 * run in the plan's order, which merging may have changed from the
 * cascade's (the chunked SSD's YO runs after HS), so time is the group. */
static bool needed_after(const Fused *f, int t, int last) {
  const Cascade *c = f->r->c;
  if (c->tensors[t].output || c->tensors[t].init || f->r->o->keep_all)
    return true;
  for (int k = 0; k < c->nedges; k++)
    if (c->edges[k].tensor == t && f->p->group_of[c->edges[k].consumer] > last)
      return true;
  return false;
}

/* Make U, the decisions of the unit of groups up to LAST (its members
 * marked in F), with F's tables pointing at U's. */
static void decide_unit(Fused *f, Unit *u, int last) {
  Run *r = f->r;
  const Cascade *c = r->c;
  const Sched *sc = &f->sched;
  size_t nt = (size_t)c->ntensors + 1;
  bool *made = xcalloc(nt, sizeof *made), *onchip = xcalloc(nt, sizeof *onchip);
  u->halo = xcalloc(nt, sizeof *u->halo);
  u->tail_len = xcalloc(nt, sizeof *u->tail_len);
  u->written = xcalloc(nt, sizeof *u->written);
  u->release = xcalloc(nt, sizeof *u->release);
  for (int e = 0; e < c->neinsums; e++)
    if (f->member[e]) {
      int t = c->einsums[e]->out.tensor;
      made[t] = true;
      onchip[t] = f->p->onchip[t];
    }
  u->made = made;
  u->onchip = onchip;
  f->made = made;
  f->onchip = onchip;
  f->halo = u->halo;
  f->written = u->written;
  unit_ranks(f);
  if (!tileable(f, u)) {
    f->nt = 0; /* one tile: the whole iteration space */
    memset(u->halo, 0, nt * sizeof *u->halo);
  }
  mark_written(f, u);
  choose_tile(f);
  u->nt = f->nt;
  memcpy(u->trank, f->trank, sizeof f->trank);
  memcpy(u->tsize, f->tsize, sizeof f->tsize);
  memcpy(u->ttile, f->ttile, sizeof f->ttile);
  for (int t = 0; t < c->ntensors; t++) {
    u->tail_len[t] = onchip[t] ? tensor_state_steps(r->s, t) : 0;
    if (c->tensors[t].producer >= 0 &&
        f->p->group_of[c->tensors[t].producer] <= last &&
        !needed_after(f, t, last))
      u->release[u->nrelease++] = t;
  }
  u->steps = xcalloc((size_t)sc->n + 1, sizeof *u->steps);
  for (int k = 0; k < sc->n; k++)
    u->steps[k] = (Step){.scan_avail = -1, .grow_avail = -1};
  if (one_tile(f)) {
    for (int j = 0; j < f->nt; j++) { /* the tile walk_tiles places */
      f->tlo[j] = 0;
      f->thi[j] = f->tsize[j];
    }
    u->base = xcalloc((size_t)sc->n + 1, sizeof *u->base);
    for (int k = 0; k < sc->n; k++)
      if (f->member[sc->order[k]])
        tile_region(f, sc->order[k], &u->base[k]);
  }
  u->ready = true;
}

/* Point F at U's decisions. */
static void use_unit(Fused *f, const Unit *u) {
  f->made = u->made;
  f->onchip = u->onchip;
  f->halo = u->halo;
  f->written = u->written;
  f->steps = u->steps;
  f->nt = u->nt;
  memcpy(f->trank, u->trank, sizeof f->trank);
  memcpy(f->tsize, u->tsize, sizeof f->tsize);
  memcpy(f->ttile, u->ttile, sizeof f->ttile);
  memcpy(f->tail_len, u->tail_len,
         sizeof *f->tail_len * (size_t)f->r->c->ntensors);
}

/* Run the unit of groups up to LAST, whose decisions are U's (made now
 * if they are not yet). */
static bool run_unit(Fused *f, Unit *u, int last) {
  Run *r = f->r;
  const Cascade *c = r->c;
  if (!u->ready)
    decide_unit(f, u, last);
  use_unit(f, u);
  memset(f->pending, 0, sizeof *f->pending * (size_t)c->ntensors);
  for (int t = 0; t < c->ntensors; t++)
    if (f->made[t] && !f->onchip[t] && !r->arrays[t] && !run_alloc(r, t))
      return false;
  bool ok = alloc_buffers(f) && walk_tiles(f, u->base);
  run_release_jobs(r, f->member); /* weights packed for the unit's tiles */
  free_buffers(f);
  hand_over_kept(f);
  flush_counts(f);
  for (int k = 0; ok && k < u->nrelease; k++)
    run_release(r, u->release[k]);
  return ok;
}

static void unit_free(Unit *u) {
  free((void *)u->made);
  free((void *)u->onchip);
  free(u->halo);
  free(u->tail_len);
  free(u->written);
  free(u->release);
  free(u->base);
  free(u->steps);
}

void fused_forget(Run *r) {
  if (!r->units)
    return;
  for (int g = 0; g < r->units->n; g++)
    unit_free(&r->units->u[g]);
  for (int t = 0; t < r->c->ntensors; t++)
    vm_job_free(r->units->next_fronts[t]);
  free(r->units->next_fronts);
  free(r->units->tables);
  free(r->units->u);
  free(r->units);
  r->units = NULL;
}

/* A recurrence's Einsums advance together, a step at a time: every plan
 * keeps them in one group (plan_can_run refuses one that parts them), so
 * each group runs alone, as one unit. The hand-off's check. */
static bool recurrences_whole(const Fused *f) {
  const Cascade *c = f->r->c;
  for (int e = 0; e < c->neinsums; e++)
    for (int m = 0; f->scc[e] >= 0 && m < c->neinsums; m++)
      if (f->scc[m] == f->scc[e] &&
          f->p->group_of[m] != f->p->group_of[e])
        return false;
  return true;
}

/* R's Units, made at its first fused run. */
static struct Units *units_of(Run *r) {
  if (!r->units) {
    const Cascade *c = r->c;
    size_t nt = (size_t)c->ntensors + 1, ne = (size_t)c->neinsums + 1,
           nmaps = nt * ((size_t)r->o->plan->ngroups + 1);
    struct Units *u = r->units = xcalloc(1, sizeof *r->units);
    u->n = r->o->plan->ngroups;
    u->u = xcalloc((size_t)u->n + 1, sizeof *u->u);
    u->tables_bytes = sizeof(Array *) * 3 * nt +
                      sizeof(Bits *) * 2 * nmaps + sizeof(int64_t) * nt +
                      sizeof(bool) * (ne + nt);
    u->tables = xcalloc(1, u->tables_bytes);
    u->next_fronts = xcalloc(nt, sizeof *u->next_fronts);
  }
  return r->units;
}

/* Point F's per-run tables into U's block, the widest types first (each
 * table starts aligned), and zero them but the bitmaps: those are NULL
 * from one run to the next (flush_counts frees each unit's), and only a
 * run that counts bytes makes any, so a decode step need not clear a
 * table of groups times tensors. */
static void fused_tables(Fused *f, struct Units *u) {
  const Cascade *c = f->r->c;
  size_t nt = (size_t)c->ntensors + 1, ne = (size_t)c->neinsums + 1,
         nmaps = nt * ((size_t)f->p->ngroups + 1);
  f->rmap = u->tables;
  f->wmap = f->rmap + nmaps;
  f->buf = (Array **)(f->wmap + nmaps);
  f->tail = f->buf + nt;
  f->kept = f->tail + nt;
  f->tail_len = (int64_t *)(f->kept + nt);
  f->member = (bool *)(f->tail_len + nt);
  f->pending = f->member + ne;
  memset(f->buf, 0, (size_t)((char *)(f->pending + nt) - (char *)f->buf));
}
_Static_assert(sizeof(Array *) == sizeof(Bits *) &&
                   _Alignof(Bits *) >= _Alignof(int64_t),
               "fused_tables' tables start aligned");

bool run_fused(Run *r, Tensors *next) {
  const Cascade *c = r->c;
  size_t nt = (size_t)c->ntensors + 1;
  Fused f = {.r = r, .p = r->o->plan};
  struct Units *units = units_of(r);
  fused_tables(&f, units);
  f.sched = r->sched;
  f.scc = f.sched.scc;
  f.counting = r->st != NULL;
  bool ok = true;
  assert(recurrences_whole(&f));
  for (int g = 0; ok && g < f.p->ngroups; g++) {
    for (int e = 0; e < c->neinsums; e++)
      f.member[e] = f.p->group_of[e] == g;
    f.gfirst = f.glast = g;
    ok = run_unit(&f, &units->u[g], g);
  }
  /* The next pass's state: from the arrays, or from the captured tails. */
  for (int t = 0; ok && next && t < c->ntensors; t++) {
    if (!c->tensors[t].init)
      continue;
    View saved = r->views[t];
    if (f.tail[t]) {
      /* The tail's last steps; in a pass shorter than the tail, those
       * before the start come from the initialization. */
      int cond = c->tensors[t].init->out.cond_dim;
      View *v = &r->views[t];
      *v = view_of(f.tail[t]->data, f.tail[t]->shape, f.tail[t]->ndim);
      v->origin[cond] =
          r->s->size[c->tensors[t].ranks[cond]] - f.tail[t]->shape[cond];
      if (v->origin[cond] < 0 &&
          !fill_front_by(r, &units->next_fronts[t], t, -v->origin[cond],
                         NULL, NULL))
        ok = false;
    }
    if (ok && r->views[t].data)
      ok = next_state(r, t, next);
    r->views[t] = saved;
  }
  for (size_t t = 0; t < nt; t++) {
    run_drop(r, f.tail[t]);
    array_free(f.kept[t]);
    if (units->next_fronts[t]) /* as run_reset the Run's init jobs */
      vm_job_release(units->next_fronts[t]);
  }
  return ok;
}
