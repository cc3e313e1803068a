/* net_report.c — whole models: what a config built, and its price end to
 * end, as text and JSON (docs/models.md). */
#include "report.h"

#include <math.h>
#include <string.h>

/* ---- what was built ---- */

/* Layer I's blocks, "mamba1 + moe + shared experts", into BUF. */
static const char *layer_text(const Net *n, int i, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int k = 0; k < n->nlayer[i] && len < cap; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%s", k ? " + " : "",
                            n->blocks[n->layer[i][k]].label);
  return buf;
}

static bool same_layer(const Net *n, int i, int j) {
  return n->nlayer[i] == n->nlayer[j] &&
         memcmp(n->layer[i], n->layer[j], n->nlayer[i]) == 0;
}

static void sizes_text(Buf *b, const Block *bk) {
  for (int k = 0; k < bk->nsizes; k++)
    if (strcmp(bk->names[k], "eps") != 0)
      buf_printf(b, "%s%s=%g", k ? " " : "", bk->names[k], bk->values[k]);
}

static void fmt_count(Buf *b, double v) {
  if (v >= 1e9)
    buf_printf(b, "%.3f G", v / 1e9);
  else if (v >= 1e6)
    buf_printf(b, "%.3f M", v / 1e6);
  else
    buf_printf(b, "%.0f", v);
}

void report_net_text(Buf *b, const Net *n, const NetParams *p) {
  buf_printf(b, "model   ");
  buf_escaped(b, n->name);
  buf_printf(b, " (model_type %s), %d layer%s, from ", n->model_type,
             n->nlayers, n->nlayers == 1 ? "" : "s");
  buf_escaped(b, n->path);
  buf_printf(b, "\n\nlayers\n");
  for (int i = 0; i < n->nlayers;) {
    int j = i + 1;
    while (j < n->nlayers && same_layer(n, i, j))
      j++;
    char line[256], range[32];
    if (j - i == 1)
      snprintf(range, sizeof range, "%d", i);
    else
      snprintf(range, sizeof range, "%d-%d", i, j - 1);
    buf_printf(b, "  %-9s %s\n", range, layer_text(n, i, line, sizeof line));
    i = j;
  }
  buf_printf(b, "\nblocks (each a cascade of specs/, sized from the config)"
                "\n  %-3s %-26s %-15s %5s %14s %14s  %s\n", "#", "block",
             "kind", "uses", "params_each", "active_each", "sizes");
  for (int i = 0; i < n->nblocks; i++) {
    const Block *bk = &n->blocks[i];
    Buf t = {0}, a = {0};
    fmt_count(&t, p->block_total[i]);
    fmt_count(&a, p->block_active[i]);
    buf_printf(b, "  %-3d %-26s %-15s %5d %14s %14s  ", i + 1, bk->label,
               block_kind_name(bk->kind), bk->uses, t.s, a.s);
    sizes_text(b, bk);
    if (bk->copies != bk->uses)
      buf_printf(b, " (one set of weights for its %d uses)", bk->uses);
    buf_printf(b, "\n");
    buf_free(&t);
    buf_free(&a);
  }
  buf_printf(b, "\nparameters  ");
  fmt_count(b, p->total);
  buf_printf(b, " total, ");
  fmt_count(b, p->active);
  buf_printf(b, " active per token%s\n",
             n->tied ? " (the head tied to the embedding)" : "");
  for (int i = 0; i < n->nnotes; i++) {
    buf_printf(b, "note: ");
    buf_escaped(b, n->notes[i]);
    buf_printf(b, "\n");
  }
}

static json_t *sizes_json(const Block *bk) {
  json_t *o = json_object();
  for (int k = 0; k < bk->nsizes; k++)
    json_object_set_new(o, bk->names[k], report_real(bk->values[k]));
  return o;
}

json_t *report_net_json(const Net *n, const NetParams *p) {
  json_t *root = json_object();
  json_object_set_new(root, "model", json_string(n->name));
  json_object_set_new(root, "model_type", json_string(n->model_type));
  json_object_set_new(root, "layers", json_integer(n->nlayers));
  json_t *blocks = json_array();
  for (int i = 0; i < n->nblocks; i++) {
    const Block *bk = &n->blocks[i];
    json_t *o = json_object();
    json_object_set_new(o, "label", json_string(bk->label));
    json_object_set_new(o, "kind", json_string(block_kind_name(bk->kind)));
    json_object_set_new(o, "what", json_string(block_kind_help(bk->kind)));
    json_object_set_new(o, "spec",
                        json_string(block_kind_spec(bk->kind, false)));
    json_object_set_new(o, "uses", json_integer(bk->uses));
    json_object_set_new(o, "weight_copies", json_integer(bk->copies));
    json_object_set_new(o, "params_each", report_real(p->block_total[i]));
    json_object_set_new(o, "active_each", report_real(p->block_active[i]));
    json_object_set_new(o, "sizes", sizes_json(bk));
    json_array_append_new(blocks, o);
  }
  json_object_set_new(root, "blocks", blocks);
  json_t *sched = json_array();
  for (int i = 0; i < n->nlayers; i++) {
    json_t *l = json_array();
    for (int k = 0; k < n->nlayer[i]; k++)
      json_array_append_new(l, json_integer(n->layer[i][k] + 1));
    json_array_append_new(sched, l);
  }
  json_object_set_new(root, "schedule", sched);
  json_object_set_new(root, "tied_embeddings", json_boolean(n->tied));
  json_t *par = json_object();
  json_object_set_new(par, "total", report_real(p->total));
  json_object_set_new(par, "active", report_real(p->active));
  json_object_set_new(root, "parameters", par);
  json_t *notes = json_array();
  for (int i = 0; i < n->nnotes; i++)
    json_array_append_new(notes, json_string(n->notes[i]));
  json_object_set_new(root, "notes", notes);
  return root;
}

/* ---- end to end ---- */

/* A phase's figures summed per block kind: uses x per use. */
typedef struct KindSum {
  int uses;
  BlockCost prefill, first, mean, last;
} KindSum;

static void kind_sums(const Net *n, const NetRun *r, KindSum *k) {
  memset(k, 0, sizeof *k * BK_COUNT);
  for (int i = 0; i < n->nblocks; i++) {
    const Block *bk = &n->blocks[i];
    KindSum *s = &k[bk->kind];
    double u = bk->uses;
    s->uses += bk->uses;
    const BlockCost *src[4] = {&r->prefill[i], &r->decode_first[i],
                               &r->decode_mean[i], &r->decode_last[i]};
    BlockCost *dst[4] = {&s->prefill, &s->first, &s->mean, &s->last};
    for (int j = 0; j < 4; j++) {
      dst[j]->seconds += u * src[j]->seconds;
      dst[j]->energy_j += u * src[j]->energy_j;
      dst[j]->dram_bytes += u * src[j]->dram_bytes;
    }
  }
}

static void bytes_text(Buf *b, double v) {
  if (v >= 1e9)
    buf_printf(b, "%.2f GB", v / 1e9);
  else
    buf_printf(b, "%.2f MB", v / 1e6);
}

void report_net_run_text(Buf *b, const Net *n, const Arch *a,
                         const NetRun *r) {
  const NetOpts *o = &r->opts;
  buf_printf(b, "model   ");
  buf_escaped(b, n->name);
  buf_printf(b, " on %s, each block as %s; batch %ld, prompt %ld token%s, "
                "then %ld decode step%s\n\n",
             a->name, o->best ? "best (searched)" : design_name(o->design),
             o->batch, o->prompt, o->prompt == 1 ? "" : "s", o->generate,
             o->generate == 1 ? "" : "s");
  buf_printf(b, "prefill   time to first token %.4g ms, %.4g J, DRAM ",
             r->ttft * 1e3, r->prefill_energy_j);
  bytes_text(b, r->prefill_dram);
  buf_printf(b, "\n");
  if (r->nsamples) {
    buf_printf(b, "decode    time per output token %.4g ms first, %.4g ms "
                  "mean, %.4g ms last (context %ld to %ld)\n",
               r->tpot_first * 1e3, r->tpot_mean * 1e3, r->tpot_last * 1e3,
               r->sample_context[0], r->sample_context[r->nsamples - 1]);
    buf_printf(b, "          %.4g tokens/s over the batch, %.4g J per token,"
                  " DRAM ", r->tokens_per_s, r->energy_per_token);
    bytes_text(b, r->decode_dram / (double)o->generate);
    buf_printf(b, " per step (%d of %ld steps priced exactly, the rest "
                  "linear between them)\n", r->nsamples, o->generate);
  }
  KindSum k[BK_COUNT];
  kind_sums(n, r, k);
  buf_printf(b, "\nper block kind (all its uses)\n  %-15s %5s %12s %7s %12s "
                "%12s %12s %14s %14s\n", "kind", "uses", "prefill_ms",
             "share", "decode_first", "decode_mean", "decode_last",
             "prefill_DRAM", "decode_DRAM");
  for (int i = 0; i < BK_COUNT; i++) {
    if (!k[i].uses)
      continue;
    Buf pd = {0}, dd = {0};
    bytes_text(&pd, k[i].prefill.dram_bytes);
    bytes_text(&dd, k[i].mean.dram_bytes);
    buf_printf(b, "  %-15s %5d %12.4g %6.1f%% %9.4g ms %9.4g ms %9.4g ms "
                  "%14s %14s\n",
               block_kind_name((BlockKind)i), k[i].uses,
               k[i].prefill.seconds * 1e3,
               r->ttft > 0 ? 100 * k[i].prefill.seconds / r->ttft : 0,
               k[i].first.seconds * 1e3, k[i].mean.seconds * 1e3,
               k[i].last.seconds * 1e3, pd.s, dd.s);
    buf_free(&pd);
    buf_free(&dd);
  }
  long ctx = o->context > 0 ? o->context : o->prompt + o->generate;
  buf_printf(b, "\nmemory at batch %ld, context %ld: weights ", o->batch,
             ctx);
  bytes_text(b, r->weight_bytes);
  buf_printf(b, ", KV cache ");
  bytes_text(b, r->kv_bytes);
  buf_printf(b, ", SSM states ");
  bytes_text(b, r->state_bytes);
  buf_printf(b, "; ");
  bytes_text(b, r->need_bytes);
  if (isinf(r->capacity_bytes))
    buf_printf(b, " needed (%s gives no capacity)\n", a->levels[0].name);
  else {
    buf_printf(b, " needed of %s's ", a->levels[0].name);
    bytes_text(b, r->capacity_bytes);
    buf_printf(b, ": %s\n", r->fits ? "fits" : "DOES NOT FIT one device");
  }
}

static json_t *cost_json(const BlockCost *c) {
  json_t *o = json_object();
  REPORT_REALS(o, {"seconds", c->seconds}, {"energy_j", c->energy_j},
               {"dram_bytes", c->dram_bytes});
  return o;
}

json_t *report_net_run_json(const Net *n, const Arch *a, const NetRun *r) {
  const NetOpts *o = &r->opts;
  json_t *root = json_object();
  json_object_set_new(root, "model", json_string(n->name));
  json_object_set_new(root, "architecture", json_string(a->name));
  json_t *sc = json_object();
  json_object_set_new(sc, "design", json_string(o->best ? "best"
                                                        : design_name(o->design)));
  json_object_set_new(sc, "batch", json_integer(o->batch));
  json_object_set_new(sc, "prompt", json_integer(o->prompt));
  json_object_set_new(sc, "generate", json_integer(o->generate));
  json_object_set_new(sc, "routing", json_string(routing_name(o->routing)));
  json_object_set_new(sc, "capacity_factor", report_real(o->capacity_factor));
  json_object_set_new(root, "scenario", sc);
  json_t *pf = json_object();
  REPORT_REALS(pf, {"ttft_s", r->ttft}, {"energy_j", r->prefill_energy_j},
               {"dram_bytes", r->prefill_dram});
  json_object_set_new(root, "prefill", pf);
  json_t *dc = json_object();
  REPORT_REALS(dc, {"tpot_first_s", r->tpot_first},
               {"tpot_mean_s", r->tpot_mean}, {"tpot_last_s", r->tpot_last},
               {"tokens_per_s", r->tokens_per_s},
               {"energy_per_token_j", r->energy_per_token},
               {"dram_bytes", r->decode_dram});
  json_t *samples = json_array();
  for (int i = 0; i < r->nsamples; i++) {
    json_t *s = json_object();
    json_object_set_new(s, "context", json_integer(r->sample_context[i]));
    json_object_set_new(s, "seconds", report_real(r->sample_seconds[i]));
    json_array_append_new(samples, s);
  }
  json_object_set_new(dc, "steps_priced", samples);
  json_object_set_new(root, "decode", dc);
  KindSum k[BK_COUNT];
  kind_sums(n, r, k);
  json_t *kinds = json_object();
  for (int i = 0; i < BK_COUNT; i++) {
    if (!k[i].uses)
      continue;
    json_t *o2 = json_object();
    json_object_set_new(o2, "uses", json_integer(k[i].uses));
    json_object_set_new(o2, "prefill", cost_json(&k[i].prefill));
    json_object_set_new(o2, "decode_first", cost_json(&k[i].first));
    json_object_set_new(o2, "decode_mean", cost_json(&k[i].mean));
    json_object_set_new(o2, "decode_last", cost_json(&k[i].last));
    json_object_set_new(kinds, block_kind_name((BlockKind)i), o2);
  }
  json_object_set_new(root, "per_kind", kinds);
  json_t *blocks = json_array();
  for (int i = 0; i < n->nblocks; i++) {
    json_t *o2 = json_object();
    json_object_set_new(o2, "label", json_string(n->blocks[i].label));
    json_object_set_new(o2, "uses", json_integer(n->blocks[i].uses));
    json_object_set_new(o2, "prefill", cost_json(&r->prefill[i]));
    json_object_set_new(o2, "decode_first", cost_json(&r->decode_first[i]));
    json_object_set_new(o2, "decode_mean", cost_json(&r->decode_mean[i]));
    json_object_set_new(o2, "decode_last", cost_json(&r->decode_last[i]));
    json_array_append_new(blocks, o2);
  }
  json_object_set_new(root, "blocks", blocks);
  json_t *mem = json_object();
  json_object_set_new(mem, "context",
                      json_integer(o->context > 0 ? o->context
                                                  : o->prompt + o->generate));
  REPORT_REALS(mem, {"weight_bytes", r->weight_bytes},
               {"kv_cache_bytes", r->kv_bytes},
               {"ssm_state_bytes", r->state_bytes},
               {"needed_bytes", r->need_bytes});
  json_object_set_new(mem, "available_bytes",
                      isinf(r->capacity_bytes) ? json_null()
                                               : report_real(r->capacity_bytes));
  json_object_set_new(mem, "fits", json_boolean(r->fits));
  json_object_set_new(root, "memory", mem);
  return root;
}
