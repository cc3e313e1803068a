/* accelforge_classes.c — one published figure per AccelForge component
 * class, for the energies and throughputs a file leaves to hwcomponents'
 * models (accelforge_classes.h). Each row cites where its numbers come
 * from; docs/compat.md repeats the table. The figures are at their
 * sources' own technology nodes: hwcomponents scales a model to the
 * file's `tech_node`, the translation does not (and says so). */
#include "accelforge_classes.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

/* Nothing: AccelForge itself gives a `component_class: Dummy` (any
 * letter case; components.py, _is_dummy) 0 J and an unlimited
 * throughput. */
static AfcFigures dummy(double size_bits, AfcWidths w) {
  (void)size_bits, (void)w;
  return (AfcFigures){0, INFINITY, "AccelForge's Dummy: no energy",
                      "AccelForge's Dummy: unlimited"};
}

/* LPDDR4: hwcomponents-cacti's DRAM table (hwcomponents_cacti.py, _DRAM,
 * "LPDDR4": public LPDDR4 data) gives 8 pJ per bit and 50 * 2^20
 * accesses per second of its bus, 64 bits wide unless `width` is given:
 * 3.355e9 bits/s. */
static AfcFigures lpddr4(double size_bits, AfcWidths w) {
  (void)size_bits, (void)w;
  return (AfcFigures){8, 50.0 * 1024 * 1024 * 64,
                      "hwcomponents-cacti's LPDDR4 table: 8 pJ/bit",
                      "hwcomponents-cacti's LPDDR4 table: 50*2^20 accesses/s "
                      "of a 64-bit bus"};
}

/* An SRAM's read or write: hwcomponents asks CACTI, which mambalaya does
 * not run. Horowitz ("Computing's energy problem", ISSCC 2014, 45 nm)
 * gives a 64-bit access at 10 pJ for 8 KB, 20 pJ for 32 KB and 100 pJ
 * for 1 MB; between them the energy is interpolated in the logarithms of
 * size and energy (a power law through the two points), outside them it
 * is the nearest point's. The throughput is CACTI's too: unlimited
 * (never the bottleneck), as a file's `throughput: inf`. */
static AfcFigures sram(double size_bits, AfcWidths w) {
  (void)w;
  static const double kb[] = {8, 32, 1024}, pj64[] = {10, 20, 100};
  enum { N = sizeof kb / sizeof kb[0] };
  double size_kb = size_bits / 8 / 1024, pj = pj64[0];
  for (int i = 0; i + 1 < N; i++)
    if (size_kb > kb[i]) {
      double t = fmin(1, log(size_kb / kb[i]) / log(kb[i + 1] / kb[i]));
      pj = pj64[i] * pow(pj64[i + 1] / pj64[i], t);
    }
  return (AfcFigures){pj / 64, INFINITY,
                      "Horowitz, ISSCC 2014: a 64-bit SRAM access at 10 pJ "
                      "(8 KB), 20 pJ (32 KB), 100 pJ (1 MB), interpolated "
                      "in log size",
                      "CACTI's, not run: unlimited"};
}

/* An integer MAC: hwcomponents-library's AladdinIntMAC (aladdin.py), an
 * adder and a multiplier of Aladdin (Shao et al., ISCA 2014) at 40 nm
 * and a 1 ns cycle: a 32-bit add 0.21 pJ, linear in the adder's width; a
 * 32 x 32-bit multiply 12.68 pJ, quadratic in the multiplier's; one
 * operation per ns. */
static AfcFigures intmac(double size_bits, AfcWidths w) {
  (void)size_bits;
  double pj = 0.21 * w.adder / 32 + 12.68 * pow(w.multiplier / 32, 2);
  return (AfcFigures){pj, 1e9,
                      "Aladdin (ISCA 2014) at 40 nm, as hwcomponents' "
                      "AladdinIntMAC: 0.21 pJ per 32-bit add x adder_width/32 "
                      "+ 12.68 pJ per 32-bit multiply x (multiplier_width/"
                      "32)^2",
                      "Aladdin's 1 ns cycle"};
}

typedef enum { AFC_DUMMY, AFC_LPDDR4, AFC_SRAM, AFC_INTMAC, AFC_COUNT } Afc;

static const struct {
  const char *names[4]; /* hwcomponents' component_name, the first shown */
  bool memory, compute; /* which nodes it may stand for */
  bool widths;          /* reads a unit's operand widths */
  AfcFigures (*figures)(double size_bits, AfcWidths w);
} classes[] = {
    [AFC_DUMMY] = {{"Dummy"}, true, true,
                   false, dummy},
    [AFC_LPDDR4] = {{"LPDDR4", "DRAMLPDDR4", "DRAM_LPDDR4"}, true, false,
                    false, lpddr4},
    [AFC_SRAM] = {{"SmartBufferSRAM", "smart_buffer_sram",
                   "smartbuffer_sram"}, true, false, false, sram},
    [AFC_INTMAC] = {{"IntMAC", "AladdinIntMAC"}, false, true, true, intmac},
};
_Static_assert(sizeof classes / sizeof classes[0] == AFC_COUNT,
               "a row per component class");

int afc_find(const char *name) {
  for (int c = 0; c < AFC_COUNT; c++)
    for (int i = 0; i < 4 && classes[c].names[i]; i++)
      if (strcasecmp(classes[c].names[i], name) == 0)
        return c;
  return -1;
}

const char *afc_name(int cls) { return classes[cls].names[0]; }

bool afc_fits(int cls, bool memory) {
  return memory ? classes[cls].memory : classes[cls].compute;
}

bool afc_reads_widths(int cls) { return classes[cls].widths; }

AfcFigures afc_figures(int cls, double size_bits, AfcWidths w) {
  return classes[cls].figures(size_bits, w);
}
