/* test_memo.c — the mapping memo (src/model/memo.c): every answer is the
 * search's, and a problem asked again soon is not searched again, across
 * the memo's generations. */
#include "../../src/model/model.h"
#include "test.h"

/* Problem K: a copy of K + 2 elements, y[i] = x[i] (one variable). */
static MapProblem copy_problem(long k) {
  MapProblem p = {.nvars = 1, .ntensors = 2, .capacity = 1e12};
  p.size[0] = (double)(k + 2);
  for (int t = 0; t < 2; t++) {
    MapTensor *T = &p.t[t];
    T->vars = VARSET_BIT(0);
    T->elems = p.size[0];
    T->ndims = 1;
    T->dim_vars[0] = VARSET_BIT(0);
    T->dim_coef[0][0] = 1;
    T->output = t == 1;
    T->dram = true;
  }
  return p;
}

/* The same answer, field by field (a Mapping's padding is no part of
 * it). */
static bool same_mapping(const Mapping *a, const Mapping *b) {
  bool same = a->norder == b->norder && a->traffic == b->traffic &&
              a->footprint == b->footprint && a->fits == b->fits &&
              a->evaluated == b->evaluated && a->pinned == b->pinned &&
              a->coarsened == b->coarsened;
  for (int k = 0; same && k < a->norder; k++)
    same = a->order[k] == b->order[k];
  for (int v = 0; same && v < MAP_MAX_VARS; v++)
    same = a->tile[v] == b->tile[v];
  for (int t = 0; same && t < MAP_MAX_TENSORS; t++)
    same = a->read[t] == b->read[t] && a->write[t] == b->write[t];
  return same;
}

/* Asking N distinct problems twice, in the same order: the first pass
 * searches each (N misses), the second finds each (N hits) -- N is past
 * what one table cleared when full kept (16,384: the memo before issue
 * 35, which missed most of the second pass) and within two of the
 * memo's generations. Each answer is map_search's, byte for byte. */
TEST(memo_asked_again_is_found_across_generations) {
  enum { N = 40000 };
  MapMemo *memo = map_memo_new(false);
  int wrong = 0;
  for (int pass = 0; pass < 2; pass++)
    for (long k = 0; k < N; k++) {
      MapProblem p = copy_problem(k);
      Mapping got, want;
      map_search_memo(memo, &p, &got);
      if (k % 997 == 0 || pass == 1) {
        map_search(&p, &want);
        wrong += !same_mapping(&got, &want);
      }
    }
  long hits, misses;
  map_memo_stats(memo, &hits, &misses);
  CHECK_INT(wrong, 0);
  CHECK_INT(misses, N);
  CHECK_INT(hits, N);
  map_memo_free(memo);
}

/* C[m,n] = A[m,k] * B[k,n], 32 each way; variables m=0, k=1, n=2. */
static MapProblem gemm32(double capacity) {
  MapProblem p = {.nvars = 3, .ntensors = 3, .capacity = capacity};
  static const VarSet vars[3] = {VARSET_BIT(0) | VARSET_BIT(1),
                                 VARSET_BIT(1) | VARSET_BIT(2),
                                 VARSET_BIT(0) | VARSET_BIT(2)};
  for (int v = 0; v < 3; v++)
    p.size[v] = 32;
  for (int t = 0; t < 3; t++) {
    MapTensor *T = &p.t[t];
    T->vars = vars[t];
    T->elems = 32 * 32;
    T->output = t == 2;
    T->dram = true;
    for (int v = 0; v < 3; v++)
      if (VARSET_HAS(vars[t], v)) {
        T->dim_vars[T->ndims] = VARSET_BIT(v);
        T->dim_coef[T->ndims][v] = 1;
        T->ndims++;
      }
  }
  return p;
}

/* Problems that differ only in the capacity they are given are two
 * problems: the memo answers each with its own search -- all of the GEMM
 * held, each tensor moved once (3 x 1024), and in 288 elements 16x16
 * tiles of C with A and B refetched (5120: test_model.c's textbook
 * tiling). */
TEST(memo_keys_the_capacity) {
  MapMemo *memo = map_memo_new(true);
  MapProblem p = gemm32(1e9);
  Mapping big, small, want;
  map_search_memo(memo, &p, &big);
  p.capacity = 288;
  map_search_memo(memo, &p, &small);
  map_search(&p, &want);
  CHECK(same_mapping(&small, &want));
  CHECK_NEAR(big.traffic, 3 * 1024, 0);
  CHECK_NEAR(small.traffic, 5120, 0);
  map_search_memo(memo, &p, &small); /* asked again: found */
  CHECK(same_mapping(&small, &want));
  long hits, misses;
  map_memo_stats(memo, &hits, &misses);
  CHECK_INT(hits, 1);
  CHECK_INT(misses, 2);
  map_memo_free(memo);
}
