/* accelforge_classes.h — the figures an AccelForge component class stands
 * for, where the file leaves them to it. AccelForge asks hwcomponents'
 * models (pip plug-ins: CACTI, the Aladdin library, ...) for the energy
 * and throughput of every action a file does not write; mambalaya does
 * not run them, and takes instead one published figure per class, cited
 * beside it in the table (accelforge_classes.c; docs/compat.md lists
 * them). The translation (accelforge_arch.c) says, node by node, every
 * figure it took from here. */
#ifndef MAMBALAYA_SPEC_ACCELFORGE_CLASSES_H
#define MAMBALAYA_SPEC_ACCELFORGE_CLASSES_H

#include <stdbool.h>

/* What a class says of one node: for a memory, per bit read or written
 * and bits per second per instance; for a compute unit, per operation
 * and operations per second per instance. INFINITY: unlimited. */
typedef struct AfcFigures {
  double pj, per_s;
  const char *pj_from, *per_s_from; /* the sources, for the notes */
} AfcFigures;

/* A compute unit's operand widths in bits (a MAC's multiplier and adder:
 * `extra_attributes_for_component_model`). */
typedef struct AfcWidths {
  double multiplier, adder;
} AfcWidths;

/* The class NAME names (as hwcomponents matches one: any of its names,
 * letter case aside), or -1. */
int afc_find(const char *name);
/* Its name as hwcomponents' documentation spells it. */
const char *afc_name(int cls);
/* May a !Memory (MEMORY) or a !Compute node be of class CLS? */
bool afc_fits(int cls, bool memory);
/* Does CLS read a unit's operand widths (AfcWidths)? */
bool afc_reads_widths(int cls);
/* The figures of class CLS for a memory of SIZE_BITS bits per instance,
 * or for a compute unit of widths W. */
AfcFigures afc_figures(int cls, double size_bits, AfcWidths w);

#endif
