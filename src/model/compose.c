/* compose.c — Einsums composed into a group's and a layer's latency:
 * one after another, or pipelined across the units (§VI "parallel
 * pipelining"), and the ideal design's pipelined lower bound. */
#include "price.h"

#include <math.h>
#include <stdlib.h>

/* Matrix and vector modes share PEs: their busy time adds up. */
static int physical(const Arch *a, int unit) {
  while (a->units[unit].mode_of >= 0)
    unit = a->units[unit].mode_of;
  return unit;
}

double einsum_cycles(const Ctx *x, const EinsumEval *r, double mem) {
  return (x->o.no_overlap ? r->compute_cycles + mem
                          : fmax(r->compute_cycles, mem)) +
         x->a->units[r->unit].pipeline;
}

double compose_span(const Ctx *x, const EinsumEval *ev, int n,
                    const double *mem) {
  const Arch *a = x->a;
  if (x->o.compose == COMPOSE_SEQUENTIAL) {
    double t = 0;
    for (int i = 0; i < n; i++)
      t += einsum_cycles(x, &ev[i], mem[i]);
    return t;
  }
  /* Parallel pipelining: every unit and the DRAM channel at once; the
   * group takes as long as its busiest resource. */
  double *busy = xcalloc((size_t)a->nunits + 1, sizeof *busy);
  double fill = 0, dram = 0, span = 0;
  for (int i = 0; i < n; i++) {
    busy[physical(a, ev[i].unit)] += ev[i].unit_cycles;
    if (ev[i].epilogue >= 0)
      busy[physical(a, ev[i].epilogue)] += ev[i].epilogue_cycles;
    fill = fmax(fill, a->units[ev[i].unit].pipeline);
    dram += mem[i];
  }
  span = dram;
  for (int u = 0; u < a->nunits; u++)
    span = fmax(span, busy[u]);
  free(busy);
  return span + fill;
}

/* The ideal design under parallel pipelining: the whole cascade as one
 * group, a lower bound rather than a schedule. Its DRAM time; the longest
 * single Einsum; and, for any weights w over the physical units, sum_e
 * min_u (w . the busy time E would add on u) -- no assignment of Einsums
 * to units keeps every unit's busy time below that (LP duality). The
 * weights are improved pairwise by ternary search; any weights give a
 * valid bound. */
static double ideal_pipelined(const Ctx *x, const EinsumEval *ev) {
  const Cascade *c = x->c;
  const Arch *a = x->a;
  int nu = a->nunits, n = c->neinsums;
  /* contrib[e][u][p]: busy on physical unit p if E runs on unit u. */
  double *contrib = xcalloc((size_t)n * (size_t)nu * (size_t)nu + 1,
                            sizeof *contrib);
  bool *ok = xcalloc((size_t)n * (size_t)nu + 1, sizeof *ok);
  double dram = 0, longest = 0, fill = INFINITY;
  for (int i = 0; i < n; i++)
    dram += (ev[i].read + ev[i].write) / x->bw;
  for (int e = 0; e < n; e++) {
    double best = INFINITY;
    for (int u = 0; u < nu; u++) {
      if (!unit_runs(x, e, u))
        continue;
      EinsumEval r = {0};
      price_compute(x, e, u, &r);
      ok[e * nu + u] = true;
      double *cu = &contrib[((size_t)e * nu + u) * nu];
      cu[physical(a, u)] += r.unit_cycles;
      if (r.epilogue >= 0)
        cu[physical(a, r.epilogue)] += r.epilogue_cycles;
      best = fmin(best, r.compute_cycles);
      fill = fmin(fill, a->units[u].pipeline);
    }
    longest = fmax(longest, best);
  }
  double *w = xcalloc((size_t)nu + 1, sizeof *w);
  int nphys = 0;
  for (int u = 0; u < nu; u++)
    nphys += physical(a, u) == u;
  for (int u = 0; u < nu; u++)
    w[u] = physical(a, u) == u ? 1.0 / nphys : 0;
  double bound = 0;
  for (int sweep = 0; sweep < 4; sweep++)
    for (int p = 0; p < nu; p++)
      for (int q = p + 1; q < nu; q++) {
        if (physical(a, p) != p || physical(a, q) != q)
          continue;
        double tot = w[p] + w[q], lo = 0, hi = tot;
        for (int it = 0; it < 60; it++) {
          double m1 = lo + (hi - lo) / 3, m2 = hi - (hi - lo) / 3;
          double f[2];
          for (int s = 0; s < 2; s++) {
            w[p] = s ? m2 : m1;
            w[q] = tot - w[p];
            f[s] = 0;
            for (int e = 0; e < n; e++) {
              double best = INFINITY;
              for (int u = 0; u < nu; u++) {
                if (!ok[e * nu + u])
                  continue;
                const double *cu = &contrib[((size_t)e * nu + u) * nu];
                double v = 0;
                for (int k = 0; k < nu; k++)
                  v += w[k] * cu[k];
                best = fmin(best, v);
              }
              f[s] += best;
            }
          }
          if (f[0] < f[1])
            lo = m1;
          else
            hi = m2;
          bound = fmax(bound, fmax(f[0], f[1]));
        }
        w[p] = (lo + hi) / 2;
        w[q] = tot - w[p];
      }
  free(w);
  free(ok);
  free(contrib);
  return fmax(fmax(dram, bound), longest) + (isfinite(fill) ? fill : 0);
}

void compose_layer(Ctx *x) {
  Eval *ev = x->ev;
  const Arch *a = x->a;
  double t = 0;
  bool ideal_pipe = x->o.bound && x->o.compose == COMPOSE_PIPELINED;
  for (int g = 0; g < ev->ngroups; g++) {
    GroupEval *ge = &ev->g[g];
    EinsumEval *e = &ev->e[ge->first];
    double *mem = xcalloc((size_t)ge->n + 1, sizeof *mem);
    ge->start = t;
    ge->mem_cycles = 0;
    for (int i = 0; i < ge->n; i++) {
      mem[i] = e[i].mem_cycles;
      ge->mem_cycles += mem[i];
      ge->busy[a->units[e[i].unit].role] += e[i].unit_cycles;
      if (e[i].epilogue >= 0)
        ge->busy[a->units[e[i].epilogue].role] += e[i].epilogue_cycles;
    }
    if (x->o.compose == COMPOSE_PIPELINED && !ideal_pipe) {
      ge->cycles = compose_span(x, e, ge->n, mem);
      for (int i = 0; i < ge->n; i++) {
        e[i].start = t;
        e[i].end = t + ge->cycles;
      }
    } else {
      double clock = t;
      for (int i = 0; i < ge->n; i++) {
        e[i].start = clock;
        clock += e[i].cycles;
        e[i].end = clock;
      }
      ge->cycles = clock - t;
    }
    free(mem);
    t += ge->cycles;
    ge->end = t;
  }
  if (ideal_pipe) { /* one span for the whole cascade */
    t = ideal_pipelined(x, ev->e);
    for (int i = 0; i < ev->n; i++) {
      ev->e[i].start = 0;
      ev->e[i].end = t;
    }
    for (int g = 0; g < ev->ngroups; g++) {
      ev->g[g].start = 0;
      ev->g[g].end = ev->g[g].cycles = t;
    }
  }
  ev->cycles = t;
  ev->seconds = t / a->clock_hz;
}
