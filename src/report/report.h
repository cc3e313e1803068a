/* report.h — rendering results for people (tables), for programs (JSON,
 * through jansson) and for drawings (Graphviz DOT).
 *
 * Renderers write into a Buf, never straight to a stream, so that a
 * command prints nothing until it has fully succeeded. */
#ifndef MAMBALAYA_REPORT_H
#define MAMBALAYA_REPORT_H

#include <jansson.h>

#include "../fusion/fusion.h"

/* The name of an Einsum: its output tensor. */
const char *einsum_name(const Cascade *c, int einsum);
/* "TTX+RX": the outputs of a merged node. */
void node_label(Buf *b, const Cascade *c, const Node *nd);

/* ---- classification ---- */

/* The pair table: one row per producer->consumer edge. With NODES, edges
 * are between merged nodes (edges inside a node are dropped). */
void report_pairs_text(Buf *b, const Cascade *c, const Shape *s,
                       const Pair *pairs, const Nodes *nodes);
/* {"spec", "model", "einsums", "edges": [{"producer", "consumer",
 *  "tensor", "class", "shared_ranks", "reduced", "broadcast",
 *  "iterative", "windowed"}]} */
json_t *report_pairs_json(const Cascade *c, const Shape *s, const Pair *pairs,
                          const Nodes *nodes);

/* ---- fusion plans ---- */

void report_plan_text(Buf *b, const Cascade *c, const Plan *p);
/* {"strategy", "stitch", "groups": [[OUT, ...], ...], "merged": [[...]],
 *  "offchip": [TENSOR, ...], "offchip_elements"} */
json_t *report_plan_json(const Cascade *c, const Plan *p);
/* A Graphviz digraph: Einsums as nodes, groups as clusters, edges labelled
 * with their class (dashed: a recurrence, bold: a window). */
void report_plan_dot(Buf *b, const Cascade *c, const Pair *pairs,
                     const Plan *p);

/* Serialize JSON (2-space indent, insertion order) into B with a final
 * newline. */
void report_json(Buf *b, json_t *root);

#endif
