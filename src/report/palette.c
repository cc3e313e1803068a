/* palette.c — one colour per design in every chart (report.h, "colours"),
 * so that a design reads the same in reproduce's figures and in a study's,
 * and no two series of one chart share a hue: the fusion strategies keep
 * Okabe & Ito's colours, which stay distinct under the common forms of
 * colour blindness; the other designs take colours none of them is close
 * to (two blues, #0072B2 and #56B4E9, read as one on a printed page). */
#include "report.h"

/* Per design, and best (searched) last: the colour, a lighter tint and a
 * darker shade (a study's other stitchers of the design). */
static const char *const SHADES[DES_COUNT + 1][SHADE_COUNT] = {
    [DES_UNFUSED] = {"#000000", "#BBBBBB", "#555555"},
    [DES_IDEAL] = {"#999999", "#DDDDDD", "#666666"},
    [DES_MARCA] = {"#CC79A7", "#EBC9DC", "#8E4A70"},
    [DES_GEENS] = {"#8C564B", "#D1BBB7", "#5A372F"},
    [DES_FLAT] = {"#999933", "#D6D6AD", "#66661F"},
    [DES_RI] = {"#0072B2", "#99C7E0", "#004C77"},
    [DES_RI_RSB] = {"#E69F00", "#F5D899", "#9A6A00"},
    [DES_RI_RSB_RSP] = {"#009E73", "#99D8C5", "#00694D"},
    [DES_FULL] = {"#D55E00", "#EEBF99", "#8E3F00"},
    [DES_COUNT] = {"#882255", "#CFA7BB", "#5B1739"},
};
_Static_assert(sizeof SHADES / sizeof SHADES[0] == DES_COUNT + 1,
               "a colour per design, and best (searched)");

const char *design_color(Design d, Shade s) {
  int k = d >= 0 && d <= DES_COUNT ? (int)d : DES_COUNT;
  return SHADES[k][s >= 0 && s < SHADE_COUNT ? s : SHADE_MAIN];
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
