/* isa_wide.h — the wide kernels of isa.c written once, for any vector
 * width: included by isa.c once per instruction set (AVX2 + FMA, then
 * AVX-512), with the vocabulary below defined first (and undefined at
 * the end), so that the AVX2 and AVX-512 kernels are one text (no
 * include guard: a template). What
 * differs between the sets is the vocabulary, and each set's own dot
 * block (dot_block_SUF, isa.c: two accumulators a row with 8 lanes, four
 * with 16), which the dot path here calls.
 *
 *   WIDE(name)        the name with the set's suffix (name_avx2)
 *   WIDE_ATTR         the set's target attribute
 *   V, L              the vector type and its lanes (fp32)
 *   MR, NR            the micro-kernel's tile: MR rows of 2 vectors
 *   UNROLL_MR,        pragmas: unroll the loops over the tile's rows,
 *   UNROLL_K          and the k loop of a chain
 *   NACC, ACC_SUM(a)  the dot block's accumulators per row of A, and
 *                     their sum
 *   V_ZERO V_LOAD V_LOADU V_STORE V_STOREU V_BCAST V_FMADD V_ADD V_SUM
 *   MASK, MASK_BELOW(n)          lanes [0, n) of one vector (n may be
 *   V_MASKLOAD(p, m) V_MASKSTORE(p, m, v)      below 0 or above L)
 */

/* MR x NR: 2 MR vector accumulators, 2 B vectors and a broadcast; C's
 * tile fetched ahead first (prefetch_tile). Each CHAIN of k is summed
 * apart and added to the tile's sum. */
WIDE_ATTR static inline __attribute__((always_inline)) void
WIDE(micro_acc)(int64_t kc, const float *a, const float *b, const float *c,
                int64_t c_m, int64_t c_n, int mr, int nr, V acc[MR][2]) {
  prefetch_tile(c, c_m, c_n, mr, nr);
  float sum[MR * NR] __attribute__((aligned(4 * L))) = {0};
  for (int64_t p0 = 0; p0 < kc; p0 += CHAIN) {
    UNROLL_MR
    for (int i = 0; i < MR; i++)
      acc[i][0] = acc[i][1] = V_ZERO();
    int64_t p1 = min64(kc, p0 + CHAIN);
    UNROLL_K
    for (int64_t p = p0; p < p1; p++) {
      V b0 = V_LOADU(b), b1 = V_LOADU(b + L);
      UNROLL_MR
      for (int i = 0; i < MR; i++) {
        V ai = V_BCAST(a + i);
        acc[i][0] = V_FMADD(ai, b0, acc[i][0]);
        acc[i][1] = V_FMADD(ai, b1, acc[i][1]);
      }
      a += MR;
      b += NR;
    }
    UNROLL_MR
    for (int i = 0; i < MR; i++)
      for (int h = 0; h < 2; h++) {
        float *si = sum + i * NR + h * L;
        V_STORE(si, V_ADD(V_LOAD(si), acc[i][h]));
      }
  }
  UNROLL_MR
  for (int i = 0; i < MR; i++) {
    acc[i][0] = V_LOAD(sum + i * NR);
    acc[i][1] = V_LOAD(sum + i * NR + L);
  }
}

/* The tile's MR x NR corner (a partial one too: rows past MR untouched,
 * columns past NR masked) into C, rows C_M apart and contiguous. */
WIDE_ATTR static inline __attribute__((always_inline)) void
WIDE(store_rows)(V acc[MR][2], float *c, int64_t c_m, int mr, int nr,
                 bool overwrite) {
  MASK m0 = MASK_BELOW(nr), m1 = MASK_BELOW(nr - L);
  UNROLL_MR
  for (int i = 0; i < MR; i++) {
    if (i >= mr)
      break;
    float *ci = c + i * c_m;
    if (!overwrite) {
      acc[i][0] = V_ADD(acc[i][0], V_MASKLOAD(ci, m0));
      acc[i][1] = V_ADD(acc[i][1], V_MASKLOAD(ci + L, m1));
    }
    V_MASKSTORE(ci, m0, acc[i][0]);
    V_MASKSTORE(ci + L, m1, acc[i][1]);
  }
}

/* The whole tile, C's rows contiguous. */
WIDE_ATTR static inline __attribute__((always_inline)) void
WIDE(store_full)(V acc[MR][2], float *c, int64_t c_m, bool overwrite) {
  UNROLL_MR
  for (int i = 0; i < MR; i++) {
    float *ci = c + i * c_m;
    if (!overwrite) {
      acc[i][0] = V_ADD(acc[i][0], V_LOADU(ci));
      acc[i][1] = V_ADD(acc[i][1], V_LOADU(ci + L));
    }
    V_STOREU(ci, acc[i][0]);
    V_STOREU(ci + L, acc[i][1]);
  }
}

/* Any tile at any strides, through a buffer (C's columns strided and its
 * rows too: the product is transposed where only the columns are, see
 * route). Inlined, as every write-back is: ACC's address must not escape,
 * or the accumulators would live in memory through the k loop. */
WIDE_ATTR static inline __attribute__((always_inline)) void
WIDE(store_strided)(V acc[MR][2], float *c, int64_t c_m, int64_t c_n, int mr,
                    int nr, bool overwrite) {
  float tile[MR_MAX * NR_MAX];
  UNROLL_MR
  for (int i = 0; i < MR; i++) {
    V_STOREU(tile + i * NR_MAX, acc[i][0]);
    V_STOREU(tile + i * NR_MAX + L, acc[i][1]);
  }
  tile_store(tile, c, c_m, c_n, mr, nr, overwrite);
}

WIDE_ATTR static void WIDE(micro)(int64_t kc, const float *a, const float *b,
                                  float *c, int64_t c_m, int64_t c_n, int mr,
                                  int nr, bool overwrite) {
  V acc[MR][2];
  WIDE(micro_acc)(kc, a, b, c, c_m, c_n, mr, nr, acc);
  if (c_n != 1)
    WIDE(store_strided)(acc, c, c_m, c_n, mr, nr, overwrite);
  else if (mr == MR && nr == NR)
    WIDE(store_full)(acc, c, c_m, overwrite);
  else
    WIDE(store_rows)(acc, c, c_m, mr, nr, overwrite);
}

/* The dot path: W's rows one after another, each from end to end (W's
 * rows are consecutive in memory: one sequential stream, which reads
 * faster than DOT_COLS streams side by side), left to the hardware
 * prefetcher (a software fetch 2, 8 or 16 KiB ahead was slower on a
 * quiet machine, 1 and 2 threads: bench/RESULTS.md); each KC block by
 * dot_block_SUF into NACC accumulators per row of A, summed into the
 * row's total. A row's sums run in the same order whatever ROWS is: its
 * result does not depend on how many rows of A are computed with it.
 * ROWS is a constant in each instantiation (WITH_ROWS_3). */
WIDE_ATTR static inline __attribute__((always_inline)) void
WIDE(dot_rows)(int rows, DType t, int64_t k, const float *a, int64_t lda,
               const void *const *w, float *out) {
  for (int j = 0; j < DOT_COLS; j++) {
    V total[DOT_ROWS];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
      total[r] = V_ZERO();
    for (int64_t k0 = 0; k0 < k; k0 += KC) {
      V acc[DOT_ROWS][NACC];
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int q = 0; q < NACC; q++)
          acc[r][q] = V_ZERO();
      WIDE(dot_block)(rows, t, k0, min64(k0 + KC, k), a, lda, w[j], acc);
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++)
        total[r] = V_ADD(total[r], ACC_SUM(acc[r]));
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
      out[r * DOT_COLS + j] = V_SUM(total[r]);
  }
}

WIDE_ATTR static void WIDE(dot)(int rows, int64_t k, const float *a,
                                int64_t lda, const void *const *w,
                                float *out) {
  WITH_ROWS_3(rows, WIDE(dot_rows), DT_F32, k, a, lda, w, out);
}

WIDE_ATTR static void WIDE(dot_f16)(int rows, int64_t k, const float *a,
                                    int64_t lda, const void *const *w,
                                    float *out) {
  WITH_ROWS_3(rows, WIDE(dot_rows), DT_F16, k, a, lda, w, out);
}

WIDE_ATTR static void WIDE(dot_bf16)(int rows, int64_t k, const float *a,
                                     int64_t lda, const void *const *w,
                                     float *out) {
  WITH_ROWS_3(rows, WIDE(dot_rows), DT_BF16, k, a, lda, w, out);
}

/* The vocabulary undefined, for the next set's. */
#undef WIDE
#undef WIDE_ATTR
#undef V
#undef L
#undef MR
#undef NR
#undef UNROLL_MR
#undef UNROLL_K
#undef NACC
#undef ACC_SUM
#undef V_ZERO
#undef V_LOAD
#undef V_LOADU
#undef V_STORE
#undef V_STOREU
#undef V_BCAST
#undef V_FMADD
#undef V_ADD
#undef V_SUM
#undef MASK
#undef MASK_BELOW
#undef V_MASKLOAD
#undef V_MASKSTORE
