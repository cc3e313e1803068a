/* workload.h — the workload front door: a cascade spec (YAML) loaded into
 * a Cascade; the peers' formats (Timeloop, AccelForge) and the expression
 * language beside it live in this folder too.
 *
 * The file format is TeAAL's, extended (docs/spec-format.md):
 *
 *   einsum:
 *     declaration: {TENSOR: [RANK, ...], ...}
 *     expressions: ["OUT[i,j] = expr", ...]
 *   shape:   {RANK: size-expression, ...}       # optional
 *   params:  {name: constant-expression, ...}   # optional
 *   model:   preset-name                        # optional default --model
 *   outputs: [TENSOR, ...]                      # optional
 *   mapping / format / architecture / bindings / weights:  kept as is
 *                                               (TeAAL's: one note says
 *                                               they are not modelled)
 *
 * Loading parses the YAML (libyaml), parses every expression string,
 * resolves names and index variables, and checks the graph
 * (cascade_finish). The first error is returned in the Diag with the
 * file, line and column where it was written; nothing is half-built. */
#ifndef MAMBALAYA_WORKLOAD_H
#define MAMBALAYA_WORKLOAD_H

#include "../ir/ir.h"
#include "../ydoc/ydoc.h"

/* The cascade alone (its YAML document is freed once it is built). */
Cascade *spec_load(const char *path, Diag *d);
Cascade *spec_parse(const char *path, const char *text, size_t len, Diag *d);

/* A spec with its document: for readers of the sections the cascade does
 * not interpret (TeAAL's mapping, format, architecture and bindings; our
 * weights, read by src/lm/). */
typedef struct Spec {
  Cascade *cascade;
  YamlDoc *doc;
} Spec;
Spec *spec_open(const char *path, Diag *d);
Spec *spec_open_text(const char *path, const char *text, size_t len,
                     Diag *d);
/* The kept section NAME, or NULL. */
const YamlNode *spec_section(const Spec *s, const char *name);
void spec_close(Spec *s); /* the cascade and the document */

/* How a spec is loaded. A scalar symbol of an expression (TeAAL's `a` in
 * `a * T1[m,n]`) must be a rank, a params entry, a model parameter or one
 * of SETS: else the load fails at its first use. An AccelForge template
 * reads VARS (NAME=VALUE; NULL: the SETS) as its variables. What the load
 * assumes or reads without modelling goes to NOTES, one line each
 * ("FILE: note: ..."); NULL drops them. spec_parse and spec_load load with
 * no settings and no notes. VARS given (`import`) are for the template
 * alone: one it does not read is an error. */
typedef struct SpecLoad {
  const Setting *sets;
  int nsets;
  const char *const *vars;
  int nvars;
  FILE *notes;
  /* Every file the load reads (an AccelForge template's includes, which
   * only rendering finds) is added here, to be protected from the run's
   * outputs (util.h); NULL: not collected. */
  InputSet *read;
} SpecLoad;

Cascade *spec_parse_with(const char *path, const char *text, size_t len,
                         const SpecLoad *o, Diag *d);
Cascade *spec_load_with(const char *path, const SpecLoad *o, Diag *d);

/* The peers' formats a spec file may be written in (docs/compat.md): ours
 * (TeAAL's, extended), an AccelForge workload (`workload:`, maybe a Jinja
 * template) or a Timeloop problem (`problem:`). */
typedef enum { SPEC_NATIVE, SPEC_ACCELFORGE, SPEC_TIMELOOP } SpecFormat;
SpecFormat spec_format(const char *text, size_t len);
/* The spec in our format that a peer's file stands for, as loading it
 * translates it (`mambalaya import`): into OUT, commented. */
bool spec_translate(SpecFormat f, const char *path, const char *text,
                    size_t len, const SpecLoad *o, Buf *out, Diag *d);
/* An AccelForge file as its Jinja templating renders it (includes
 * resolved, merges done), in YAML: what its line numbers refer to. */
bool spec_render_accelforge(const char *path, const SpecLoad *o, Buf *out,
                            Diag *d);

/* The two halves of the loader (load.c reads the sections, expr.c parses
 * the strings). The strings come from scalar nodes of C's document, so
 * errors point into the file. */

/* Parse one expression string (an Einsum or an initialization) into C. */
bool spec_parse_einsum(Cascade *c, const YamlNode *node, Diag *d);
/* Parse a constant expression (a rank size or a parameter value): numbers,
 * names, parentheses and the operators of src/ir/ops.h. */
Expr *spec_parse_const(Cascade *c, const YamlNode *node, Diag *d);

#endif
