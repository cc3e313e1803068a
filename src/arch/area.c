/* area.c — the area model (docs/architecture.md, "Area"): what a compute
 * unit's PEs and an on-chip memory cost in mm2 at the architecture file's
 * technology node, by component class (compute, nonlinear, interconnect,
 * memory: the same classes on every architecture, so that two totals
 * compare like for like). A level's instances each take its area. */
#include "arch.h"

#include <math.h>

static const char *const nonlinear_hw_names[] = {"separate", "marca"};
_Static_assert(sizeof nonlinear_hw_names / sizeof nonlinear_hw_names[0] ==
                   NONLINEAR_COUNT,
               "a name per reading of the nonlinear hardware");

const char *nonlinear_hw_name(NonlinearHw h) {
  return (unsigned)h < NONLINEAR_COUNT ? nonlinear_hw_names[h] : "?";
}

static const char *const area_class_names[] = {"compute", "nonlinear",
                                               "interconnect", "memory"};
_Static_assert(sizeof area_class_names / sizeof area_class_names[0] ==
                   AREA_CLASS_COUNT,
               "a name per area class");

const char *area_class_name(AreaClass c) {
  return (unsigned)c < AREA_CLASS_COUNT ? area_class_names[c] : "?";
}

/* How many of functional unit FU a PE of U has: the fastest rate among
 * the classes of FU that U performs (0 if none). */
static double fu_rate(const FuncUnit *fu, const Unit *u) {
  double rate = 0;
  for (int k = 0; k < OPC_COUNT; k++)
    if (fu->ops[k])
      rate = fmax(rate, u->rate[k]);
  return rate;
}

/* The fastest rate of U's nonlinear functional units: under MARCA's
 * reading, what its FMAs must also sustain. */
static double nonlinear_rate(const Arch *a, const Unit *u) {
  double rate = 0;
  for (int f = 0; f < a->area.nfus; f++)
    if (a->area.fus[f].nonlinear)
      rate = fmax(rate, fu_rate(&a->area.fus[f], u));
  return rate;
}

/* One PE's area of class C (not AREA_MEMORY) with nonlinear hardware H:
 * each functional unit its classes need, as many as the fastest rate;
 * under MARCA's reading the nonlinear ones are the FMA's (the unit
 * performing macc) multipliers and adders, which it then has enough of
 * for both. */
static double pe_area(const Arch *a, const Unit *u, AreaClass c,
                      NonlinearHw h) {
  if (c == AREA_INTERCONNECT)
    return a->area.interconnect;
  double area = 0;
  for (int f = 0; f < a->area.nfus; f++) {
    const FuncUnit *fu = &a->area.fus[f];
    double rate = fu_rate(fu, u);
    if (fu->nonlinear && h == NONLINEAR_MARCA)
      rate = 0;
    else if (fu->ops[OPC_MACC] && h == NONLINEAR_MARCA)
      rate = fmax(rate, nonlinear_rate(a, u));
    if ((c == AREA_NONLINEAR) == fu->nonlinear)
      area += rate * fu->area;
  }
  return area;
}

static double unit_area(const Arch *a, int unit, AreaClass c,
                        NonlinearHw h) {
  if (!a->area.given)
    return NAN;
  const Unit *u = &a->units[unit];
  if (c == AREA_MEMORY || u->mode_of >= 0)
    return 0;
  return u->pes * pe_area(a, u, c, h);
}

double arch_unit_area_class(const Arch *a, int unit, AreaClass c) {
  return unit_area(a, unit, c, a->area.nonlinear);
}

double arch_unit_area(const Arch *a, int unit) {
  double area = 0;
  for (int c = 0; c < AREA_CLASS_COUNT; c++)
    area += arch_unit_area_class(a, unit, (AreaClass)c);
  return area;
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

/* Each class's area with nonlinear hardware H into OUT. */
static void by_class(const Arch *a, NonlinearHw h,
                     double out[AREA_CLASS_COUNT]) {
  for (int c = 0; c < AREA_CLASS_COUNT; c++)
    out[c] = a->area.given ? 0 : NAN;
  for (int u = 0; u < a->nunits; u++)
    for (int c = 0; c < AREA_CLASS_COUNT; c++)
      out[c] += unit_area(a, u, (AreaClass)c, h);
  for (int l = 0; l < a->nlevels; l++)
    out[AREA_MEMORY] += arch_level_area(a, l);
}

void arch_area_by_class(const Arch *a, double out[AREA_CLASS_COUNT]) {
  by_class(a, a->area.nonlinear, out);
}

double arch_area_as(const Arch *a, NonlinearHw h) {
  double cls[AREA_CLASS_COUNT], total = 0;
  by_class(a, h, cls);
  for (int c = 0; c < AREA_CLASS_COUNT; c++)
    total += cls[c];
  return total;
}

double arch_area(const Arch *a) { return arch_area_as(a, a->area.nonlinear); }
