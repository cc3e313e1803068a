/* spec.h — loading a cascade spec (YAML) into a Cascade.
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
 *
 * Loading parses the YAML (libyaml), parses every expression string,
 * resolves names and index variables, and checks the graph
 * (cascade_finish). The first error is returned in the Diag with the
 * file, line and column where it was written; nothing is half-built. */
#ifndef MAMBALAYA_SPEC_H
#define MAMBALAYA_SPEC_H

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

/* The two halves of the loader (load.c reads the sections, expr.c parses
 * the strings). The strings come from scalar nodes of C's document, so
 * errors point into the file. */

/* Parse one expression string (an Einsum or an initialization) into C. */
bool spec_parse_einsum(Cascade *c, const YamlNode *node, Diag *d);
/* Parse a constant expression (a rank size or a parameter value): numbers,
 * names, parentheses and the operators of src/ir/ops.h. */
Expr *spec_parse_const(Cascade *c, const YamlNode *node, Diag *d);

#endif
