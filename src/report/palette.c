/* palette.c — one colour per design in every chart (report.h, "colours"),
 * so that a design reads the same in reproduce's figures and in a study's,
 * and no two series of one chart share a hue: the fusion strategies keep
 * Okabe & Ito's colours, which stay distinct under the common forms of
 * colour blindness; the other designs take colours none of them is close
 * to (two blues, #0072B2 and #56B4E9, read as one on a printed page). */
#include "report.h"

/* Per design, in the DESIGNS table's order, and best (searched) last: the
 * colour, a lighter tint and a darker shade (a study's other stitchers of
 * the design). */
typedef struct Shades {
  const char *main, *tint, *dark;
} Shades;

static const Shades SHADES[] = {
    {"#000000", "#BBBBBB", "#555555"}, /* Best unfused */
    {"#999999", "#DDDDDD", "#666666"}, /* Ideal fusion */
    {"#CC79A7", "#EBC9DC", "#8E4A70"}, /* MARCA-like */
    {"#8C564B", "#D1BBB7", "#5A372F"}, /* Geens-like */
    {"#999933", "#D6D6AD", "#66661F"}, /* FLAT */
    {"#0072B2", "#99C7E0", "#004C77"}, /* RI */
    {"#E69F00", "#F5D899", "#9A6A00"}, /* RI+RSb */
    {"#009E73", "#99D8C5", "#00694D"}, /* RI+RSb+RSp */
    {"#D55E00", "#EEBF99", "#8E3F00"}, /* Fully fused */
    {"#882255", "#CFA7BB", "#5B1739"}, /* best (searched) */
};
_Static_assert(sizeof SHADES / sizeof SHADES[0] == DES_COUNT + 1,
               "a colour per design, and best (searched)");
_Static_assert(SHADE_COUNT == 3, "a colour per shade (Shades)");
_Static_assert(DES_UNFUSED == 0 && DES_IDEAL == 1 && DES_MARCA == 2 &&
                   DES_GEENS == 3 && DES_FLAT == 4 && DES_RI == 5 &&
                   DES_RI_RSB == 6 && DES_RI_RSB_RSP == 7 && DES_FULL == 8,
               "the rows follow the DESIGNS table");

const char *design_color(Design d, Shade s) {
  const Shades *r = &SHADES[d >= 0 && d <= DES_COUNT ? (int)d : DES_COUNT];
  return s == SHADE_TINT ? r->tint : s == SHADE_DARK ? r->dark : r->main;
}

/* The on-chip levels, outermost first (cycled past the fifth); off-chip
 * memory and the operations have colours of their own. */
static const char *const LEVEL_COLOR[] = {"#0072B2", "#CC79A7", "#999933",
                                          "#882255", "#E69F00"};
enum { NLEVEL_COLORS = sizeof LEVEL_COLOR / sizeof LEVEL_COLOR[0] };

const char *level_color(const Arch *a, int l) {
  if (arch_level_role(a, l) == LEVEL_OFFCHIP)
    return "#D55E00";
  int k = 0;
  for (int j = 0; j < l; j++)
    k += arch_level_role(a, j) != LEVEL_OFFCHIP;
  return LEVEL_COLOR[k % NLEVEL_COLORS];
}

const char *ops_color(void) { return "#009E73"; }

const char *palette_color(int k) {
  return SHADES[(k % PALETTE_COLORS + PALETTE_COLORS) % PALETTE_COLORS].main;
}
