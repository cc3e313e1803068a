/* test_group_memo.c — candidate groups' prices kept across searches
 * (search.h's GroupMemo, model.h's bills): the key is every field of the
 * architecture but the levels' bandwidths and the clock; a search served
 * from the memo finds what a search of its own finds, to the bit, where
 * it serves the groups (another bandwidth or clock, a comparison of
 * times that moves) and where it must not (another buffer, a level's
 * energy, an operation's, a unit, an option); and a memo that must drop
 * what it holds still gives the same. */
#include <stdlib.h>

#include "../../src/embed/embed.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
#include "../../src/search/search.h"
#include "test.h"

static Arch *load_arch(const char *name) {
  Diag d = {0};
  Source src;
  Arch *a = NULL;
  if (source_open("archs", name, &src, &d)) {
    a = arch_parse(src.path, src.text, src.len, &d);
    source_free(&src);
  }
  if (!a)
    test_fail(__FILE__, __LINE__, "%s: %s", name, d.msg);
  return a;
}

static bool same_key(const Arch *a, const Arch *b) {
  uint64_t *ka, *kb;
  int na = model_arch_key(a, &ka), nb = model_arch_key(b, &kb);
  bool same = na == nb && memcmp(ka, kb, (size_t)na * sizeof *ka) == 0;
  free(ka);
  free(kb);
  return same;
}

/* A value of field F other than V that the field can hold (a share
 * halved, a flag flipped, a count or quantity doubled, zero made one). */
static double other_value(const ArchField *f, double v) {
  if (f->kind == LF_FLAG)
    return v == 0;
  if (f->kind == LF_SHARE)
    return v / 2;
  if (!isfinite(v) || v == 0)
    return 1;
  return 2 * v;
}

/* Every field of every level and unit of the shipped architectures moves
 * the key -- but a bandwidth, which moves it only where it appears or
 * goes (the tile choice weighs times where DRAM's is the only one) --
 * and so do the energies, the word and the kernel; the clock does not. */
TEST(group_memo_key_is_every_field_but_the_times) {
  const char *names[] = {"mambalaya", "h100", "eyeriss"};
  for (int n = 0; n < 3; n++) {
    Arch *base = load_arch(names[n]), *a = load_arch(names[n]);
    if (!base || !a)
      return;
    for (int l = 0; l < a->nlevels; l++)
      for (int k = 0; k < MEM_LEVEL_NFIELDS; k++) {
        const ArchField *f = &mem_level_fields[k];
        double v = arch_field_value(&a->levels[l], f);
        bool bandwidth = f->dim && strcmp(f->dim, "bytes/s") == 0;
        arch_field_set(&a->levels[l], f, other_value(f, v));
        bool moved = !same_key(base, a);
        bool expect = !bandwidth || !isfinite(v);
        if (moved != expect)
          test_fail(__FILE__, __LINE__, "%s: level %s's %s %s the key",
                    names[n], a->levels[l].name, f->key,
                    moved ? "moves" : "does not move");
        if (bandwidth && isfinite(v)) { /* none: a level without it */
          arch_field_set(&a->levels[l], f, INFINITY);
          CHECK(!same_key(base, a));
        }
        arch_field_set(&a->levels[l], f, v);
      }
    for (int u = 0; u < a->nunits; u++)
      for (int k = 0; k < COMPUTE_UNIT_NFIELDS; k++) {
        const ArchField *f = &compute_unit_fields[k];
        double v = arch_field_value(&a->units[u], f);
        arch_field_set(&a->units[u], f, other_value(f, v));
        if (same_key(base, a))
          test_fail(__FILE__, __LINE__, "%s: unit %s's %s does not move the "
                    "key", names[n], a->units[u].name, f->key);
        arch_field_set(&a->units[u], f, v);
      }
    CHECK(same_key(base, a));
    a->units[0].rate[OPC_MACC] *= 2;
    CHECK(!same_key(base, a));
    a->units[0].rate[OPC_MACC] /= 2;
    a->units[a->nunits - 1].pes *= 2;
    CHECK(!same_key(base, a));
    a->units[a->nunits - 1].pes /= 2;
    a->op_pj[OPC_EXP] += 1;
    CHECK(!same_key(base, a));
    a->op_pj[OPC_EXP] -= 1;
    a->word_bytes *= 2;
    CHECK(!same_key(base, a));
    a->word_bytes /= 2;
    a->kernel_s += 1e-6;
    CHECK(!same_key(base, a));
    a->kernel_s = base->kernel_s;
    a->clock_hz *= 3;
    CHECK(same_key(base, a));
    arch_free(a);
    arch_free(base);
  }
}

/* One searched case: mamba-130m, B = 8, I tokens, prefill. */
typedef struct Case {
  Cascade *c;
  Shape *s;
  Pair *pairs;
} Case;

static bool case_open(Case *k, double tokens) {
  Diag d = {0};
  Source src;
  *k = (Case){0};
  if (!source_open("specs", "mamba1", &src, &d))
    return false;
  k->c = spec_parse(src.path, src.text, src.len, &d);
  source_free(&src);
  Setting set[2] = {{"B", 8}, {"I", tokens}};
  k->s = k->c ? shape_bind(k->c, preset_sizes("mamba-130m"), set, 2, true, &d)
              : NULL;
  if (!k->s) {
    test_fail(__FILE__, __LINE__, "mamba1: %s", d.msg);
    return false;
  }
  k->pairs = fusion_classify(k->c, k->s);
  return true;
}

static void case_close(Case *k) {
  free(k->pairs);
  shape_free(k->s);
  cascade_free(k->c);
}

/* Do two searches find the same, to the bit: the schedule (its plan, its
 * figures), where it came from, the bound, the front, the counts? */
static bool same_search(const SearchResult *a, const SearchResult *b) {
  if (a->found != b->found || a->lower != b->lower || a->from != b->from ||
      a->fusion_level != b->fusion_level || a->priced != b->priced ||
      a->variants != b->variants || a->named != b->named ||
      a->bind_capped != b->bind_capped || a->npareto != b->npareto)
    return false;
  for (int k = 0; k < a->npareto; k++)
    if (a->pareto[k].seconds != b->pareto[k].seconds ||
        a->pareto[k].joules != b->pareto[k].joules ||
        a->pareto[k].groups != b->pareto[k].groups ||
        a->pareto[k].from != b->pareto[k].from)
      return false;
  const Eval *x = a->best, *y = b->best;
  if (x->seconds != y->seconds || x->energy_pj != y->energy_pj ||
      x->read != y->read || x->write != y->write ||
      x->ngroups != y->ngroups || x->plan->ngroups != y->plan->ngroups)
    return false;
  for (int e = 0; e < x->n; e++)
    if (x->plan->group_of[e] != y->plan->group_of[e] ||
        x->e[e].unit != y->e[e].unit || x->e[e].cycles != y->e[e].cycles)
      return false;
  return true;
}

/* Search K on A (options O) with the memo M, and alone (both with the
 * mapping memo MAPS, whose answers are the mapping searches'): the same?
 * The memo's counts before and after into *BEFORE, *AFTER. */
static bool searched_same(const Case *k, const Arch *a,
                          const ModelOverrides *o, GroupMemo *m,
                          MapMemo *maps, GroupMemoStats *before,
                          GroupMemoStats *after) {
  Diag d = {0};
  SearchControl ctl = {.groups = m};
  group_memo_stats(m, before);
  SearchResult *kept = search_best_ctl(k->c, k->s, a, k->pairs, o,
                                       SO_LATENCY, &ctl, maps, &d);
  group_memo_stats(m, after);
  SearchResult *alone =
      search_best(k->c, k->s, a, k->pairs, o, SO_LATENCY, maps, &d);
  bool same = kept && alone && same_search(kept, alone);
  search_free(kept);
  search_free(alone);
  return same;
}

/* What an architecture variant changes, and whether the memo may serve
 * its groups from the first search's bills. */
typedef struct Variant {
  const char *what;
  bool served;
} Variant;

/* Variant V of mambalaya (A, changed in place from the file). */
static void vary(Arch *a, int v, ModelOverrides *o) {
  switch (v) {
  case 1: a->levels[0].bandwidth *= 0.5; break;
  case 2: a->clock_hz *= 1.25; break;
  case 3: a->levels[0].bandwidth *= 3; a->clock_hz *= 0.75; break;
  case 4: a->levels[1].capacity /= 2; break;
  case 5: a->levels[1].read_pj *= 2; break;
  case 6: a->levels[2].write_pj *= 2; break;
  case 7: a->op_pj[OPC_MACC] *= 2; break;
  case 8: a->units[1].pes /= 2; break;
  case 9: a->units[0].pipeline += 2; break;
  case 10: o->reserve_share = 0.5; break;
  default: break;
  }
}

/* A search served from the memo is the search alone, on mambalaya with
 * each variant: served where only the DRAM bandwidth or the clock moved
 * (every candidate group from a bill, or priced where a comparison of
 * times moved: a 1 MiB buffer at 128 tokens has many such groups), not
 * served where anything a bill reads moved. */
TEST(group_memo_serves_only_the_times) {
  static const Variant variants[] = {
      {"mambalaya", false},     {"DRAM at half", true},
      {"clock x 1.25", true},   {"DRAM x 3, clock x 0.75", true},
      {"buffer halved", false}, {"buffer's read energy", false},
      {"registers' write energy", false}, {"MACC energy", false},
      {"1D mode's PEs", false}, {"2D array's pipeline", false},
      {"reserve share", false}};
  enum { NV = sizeof variants / sizeof variants[0] };
  Case k;
  if (!case_open(&k, 128))
    return;
  GroupMemo *m = group_memo_new(false, GROUP_MEMO_BYTES);
  MapMemo *maps = map_memo_new(false);
  long refused = 0;
  for (int v = 0; v < NV; v++) {
    Arch *a = load_arch("mambalaya");
    if (!a)
      break;
    a->levels[1].capacity = 1024.0 * 1024;
    ModelOverrides o = model_no_overrides();
    vary(a, v, &o);
    GroupMemoStats b, e;
    if (!searched_same(&k, a, &o, m, maps, &b, &e))
      test_fail(__FILE__, __LINE__, "%s: the search with the memo differs "
                "from the search alone", variants[v].what);
    long served = e.served - b.served, priced = e.priced - b.priced;
    refused += e.refused - b.refused;
    if ((served > 0) != variants[v].served || priced + served == 0)
      test_fail(__FILE__, __LINE__, "%s: %ld groups served, %ld priced",
                variants[v].what, served, priced);
    if (variants[v].served)
      CHECK(e.plans_served > b.plans_served);
    arch_free(a);
  }
  CHECK(refused > 0); /* the guards were exercised */
  group_memo_free(m);
  map_memo_free(maps);
  case_close(&k);
}

/* A memo held to a few bytes drops every shelf once no search has it
 * open, and prices everything again: the same schedules. */
TEST(group_memo_dropped_gives_the_same) {
  Case k;
  if (!case_open(&k, 64))
    return;
  GroupMemo *m = group_memo_new(false, 1);
  MapMemo *maps = map_memo_new(false);
  for (int v = 0; v < 3; v++) {
    Arch *a = load_arch("mambalaya");
    if (!a)
      break;
    ModelOverrides o = model_no_overrides();
    vary(a, v, &o);
    GroupMemoStats b, e;
    CHECK(searched_same(&k, a, &o, m, maps, &b, &e));
    CHECK_INT(e.served - b.served, 0);
    CHECK(e.dropped > b.dropped);
    CHECK_INT(e.shelves, 0);
    arch_free(a);
  }
  group_memo_free(m);
  map_memo_free(maps);
  case_close(&k);
}
