/* gpu.c — what a GPU's kernels add to the model (docs/architecture.md,
 * "GPU kernels"): each is a field of the architecture file, and an
 * architecture without them is priced exactly as before.
 *
 *   efficiency  a unit reaches this share of its peak: its cycles are
 *               divided by it (the memory levels' share is applied to
 *               their bandwidths when the file is loaded);
 *   tile, sms   a matrix Einsum's output is cut into tiles of
 *               [tile_m, tile_n], one per SM at a time; the tiles run in
 *               waves of `sms`, a last partial wave costing a whole one,
 *               and a tile's K steps run on its SM's share of the PEs:
 *                 cycles = waves x tile_m x tile_n x K / split
 *                          / (pes / sms x macc rate x efficiency),
 *               where a GEMM of fewer rows than tile_m has tiles of its
 *               rows (rounded up to 16, the MMA's), and one of fewer
 *               tiles than SMs splits K over split = floor(sms / tiles)
 *               of them;
 *   kernel      a fixed time per kernel: a group of a plan is one kernel
 *               (an unfused Einsum its own), so each group starts after
 *               it (compose.c); the ideal bound pays one for the layer,
 *               the least any plan pays;
 *   latency,    a kernel's threads wait on off-chip memory: every kernel
 *   threads     waits one round trip (`latency`) before its first byte,
 *               so it is part of the fixed cost; a kernel whose threads
 *               each wait on several accesses one after another (a loop
 *               whose each step loads, then stores) waits the others in
 *               waves of blocks, sms x threads / block at a time
 *               (gpu_wait_seconds). The waits add to the transfer rather
 *               than overlap it: a memory queue's latency grows with its
 *               load, so that the bandwidth a kernel reaches is what its
 *               bytes in flight over the latency allow (Little's law),
 *               and transfer + waits is that time (docs/architecture.md,
 *               "GPU kernels"). */
#include "price.h"

#include <math.h>

/* Rows and columns of E's output as a GEMM sees it: its last variable
 * the columns, the others the rows. */
static void output_dims(const Ctx *x, const Einsum *e, double *rows,
                        double *cols) {
  *rows = *cols = 1;
  for (int k = 0; k < e->out.n; k++) {
    const Index *ix = &e->out.idx[k];
    double n = ix->nterms == 1
                   ? (double)x->s->size[e->vars[ix->var[0]].rank]
                   : 1;
    if (k == e->out.n - 1)
      *cols = n;
    else
      *rows *= n;
  }
}

double gpu_wave_cycles(const Ctx *x, int e, const Unit *u) {
  const Work *w = &x->work[e];
  double rows, cols;
  output_dims(x, x->c->einsums[e], &rows, &cols);
  /* A skinny GEMM's tile is no taller than its rows (rounded up to the
   * MMA's 16), and when its tiles leave SMs idle its K is split over
   * them (CUTLASS's split-K; cuBLAS's heuristics choose both). */
  double tm = fmin(u->tile_m, 16 * ceil(rows / 16));
  double tiles = ceil(rows / tm) * ceil(cols / u->tile_n);
  double split = fmax(1, floor(u->sms / tiles));
  double waves = ceil(tiles / u->sms);
  double per_sm = (double)u->pes / u->sms * u->rate[OPC_MACC] * u->efficiency;
  return waves * tm * u->tile_n * ceil(w->reduced / split) / per_sm;
}

void gpu_compute(const Ctx *x, int e, EinsumEval *r) {
  const Unit *u = &x->a->units[r->unit];
  if (u->sms > 0 && x->work[e].matrix)
    r->unit_cycles = gpu_wave_cycles(x, e, u);
  else
    r->unit_cycles /= u->efficiency;
  if (r->epilogue >= 0)
    r->epilogue_cycles /= x->a->units[r->epilogue].efficiency;
  r->compute_cycles = fmax(r->unit_cycles, r->epilogue_cycles);
}

double gpu_kernel_cycles(const Arch *a) {
  return (a->kernel_s + a->levels[0].latency) * a->clock_hz;
}

/* The unit whose `threads` and `sms` place a kernel's blocks, or NULL. */
static const Unit *sm_unit(const Arch *a) {
  for (int i = 0; i < a->nunits; i++)
    if (a->units[i].threads)
      return &a->units[i];
  return NULL;
}

double gpu_wait_seconds(const Arch *a, const GpuKernel *k) {
  const Unit *u = sm_unit(a);
  if (!u || k->blocks <= 0 || k->steps <= 0)
    return 0;
  double per_sm = fmax(1, floor((double)u->threads / k->block));
  if (k->per_sm > 0)
    per_sm = fmin(per_sm, k->per_sm);
  double waits = ceil(k->blocks / (u->sms * per_sm)) * k->steps;
  return (waits - 1) * a->levels[0].latency; /* the first: the kernel's */
}
