/* area.c — the area model (docs/architecture.md, "Area"): what a compute
 * unit's PEs and an on-chip memory cost in mm2 at the architecture file's
 * technology node. A level's instances each take its area. */
#include "arch.h"

#include <math.h>

/* One PE: every functional unit its operation classes need, as many as
 * the fastest of those classes' rates, and its share of the
 * interconnect. */
static double pe_area(const Arch *a, const Unit *u) {
  double area = a->area.interconnect;
  for (int f = 0; f < a->area.nfus; f++) {
    const FuncUnit *fu = &a->area.fus[f];
    double rate = 0;
    for (int k = 0; k < OPC_COUNT; k++)
      if (fu->ops[k])
        rate = fmax(rate, u->rate[k]);
    area += rate * fu->area;
  }
  return area;
}

double arch_unit_area(const Arch *a, int unit) {
  if (!a->area.given)
    return NAN;
  const Unit *u = &a->units[unit];
  return u->mode_of >= 0 ? 0 : u->pes * pe_area(a, u);
}

double arch_level_area(const Arch *a, int level) {
  if (!a->area.given)
    return NAN;
  const MemLevel *lv = &a->levels[level];
  if (level == 0 || !isfinite(lv->capacity))
    return 0;
  return lv->instances * lv->capacity *
         (lv->area_per_byte + (lv->ports - 1) * lv->port_area_per_byte);
}

double arch_area(const Arch *a) {
  double total = 0;
  for (int u = 0; u < a->nunits; u++)
    total += arch_unit_area(a, u);
  for (int l = 0; l < a->nlevels; l++)
    total += arch_level_area(a, l);
  return total;
}
