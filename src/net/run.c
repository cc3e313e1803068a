/* run.c — a whole model end to end: a prefill of P tokens, then G decode
 * steps, each step at the context it has reached.
 *
 * A block's price depends on the phase only through its sizes: the
 * batch, the pass's tokens, the cache before them (attention), the
 * experts touched (a mixture). Blocks without a cache cost the same at
 * every decode step and are priced once. An attention block's step at
 * context c reads c cached tokens (its window's at most): it is priced
 * exactly at NetOpts.samples contexts spread over the G steps (every
 * step when G is smaller) and linearly between them — a step's cost is
 * affine in c wherever the mapping does not change, which the samples'
 * spacing bounds (docs/models.md states the error this leaves). */
#include "net.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../search/search.h"

NetOpts net_default_opts(void) {
  return (NetOpts){.design = DES_FULL, .mf = model_no_overrides(),
                   .batch = 1, .prompt = 2048, .generate = 128,
                   .routing = ROUTE_UNIFORM, .capacity_factor = 1,
                   .samples = 17};
}

/* Price one pass of block B: per use. The decode state (the cache, an
 * SSM's state) is read and written: a whole model's decode moves it. */
static bool price_block(const Net *net, int b, const Arch *a,
                        const NetOpts *o, const Pass *ph, BlockCost *out,
                        Diag *d) {
  Cascade *c;
  Shape *s;
  if (!net_block_cascade(net, b, ph, &c, &s, d))
    return false;
  ModelOverrides mf = o->mf;
  if (mf.state_io < 0)
    mf.state_io = 1;
  Pair *pairs = fusion_classify(c, s);
  bool ok = false;
  if (o->best) {
    SearchResult *r = search_best(c, s, a, pairs, &mf, SO_LATENCY, NULL, d);
    if (r) {
      *out = (BlockCost){r->best->seconds, r->best->energy_pj * 1e-12,
                         r->best->read + r->best->write};
      search_free(r);
      ok = true;
    }
  } else {
    ModelOpts mo = model_opts_with(&mf, o->design);
    Eval *ev = model_eval(c, s, a, pairs, o->design, &mo, d);
    if (ev) {
      *out = (BlockCost){ev->seconds, ev->energy_pj * 1e-12,
                         ev->read + ev->write};
      eval_free(ev);
      ok = true;
    }
  }
  if (!ok && d->failed) {
    char msg[sizeof d->msg + 128];
    snprintf(msg, sizeof msg, "block %s (%s): %s", net->blocks[b].label,
             block_kind_spec(net->blocks[b].kind, ph->decode), d->msg);
    snprintf(d->msg, sizeof d->msg, "%.*s", (int)sizeof d->msg - 1, msg);
  }
  free(pairs);
  shape_free(s);
  cascade_free(c);
  return ok;
}

static Pass pass_of(const NetOpts *o, bool decode, long tokens,
                      long cached) {
  return (Pass){.decode = decode, .batch = o->batch, .tokens = tokens,
                 .cached = cached, .routing = o->routing,
                 .capacity_factor = o->capacity_factor};
}

/* Bytes of block B's decode state at batch B and context C: the inputs
 * its decode cascade's initializations read (a KV cache, an SSM's state
 * and convolution history), per use. */
static bool state_bytes(const Net *net, int b, const Arch *a,
                        const NetOpts *o, long context, double *bytes,
                        Diag *d) {
  Pass ph = pass_of(o, true, 1, context);
  Cascade *c;
  Shape *s;
  if (!net_block_cascade(net, b, &ph, &c, &s, d))
    return false;
  double n = 0;
  for (int t = 0; t < c->ntensors; t++)
    if (c->tensors[t].producer < 0 && tensor_is_init_read(c, t))
      n += shape_tensor_elems(s, t);
  *bytes = n * a->word_bytes;
  shape_free(s);
  cascade_free(c);
  return true;
}

/* The decode steps priced exactly: contexts P, ..., P + G - 1, all of
 * them or NS spread evenly (the first and the last included). */
static int sample_contexts(const NetOpts *o, long *ctx) {
  long g = o->generate;
  int ns = o->samples <= 0 || g <= o->samples ? (int)g : o->samples;
  if (ns > NET_MAX_SAMPLES)
    ns = NET_MAX_SAMPLES;
  for (int i = 0; i < ns; i++)
    ctx[i] = o->prompt + (ns == 1 ? 0 : (long)llround((double)i * (double)(g - 1) / (ns - 1)));
  return ns;
}

/* The sum of a cost over every step P .. P + G - 1 from its samples at
 * contexts X (the first and the last step among them), linear between
 * them: each piece x[i-1]+1 .. x[i] an arithmetic series. */
static double sum_steps(const long *x, const double *y, int n) {
  double s = y[0];
  for (int i = 1; i < n; i++) {
    double steps = (double)(x[i] - x[i - 1]);
    s += steps * y[i - 1] + (y[i] - y[i - 1]) * (steps + 1) / 2;
  }
  return s;
}

/* The hand-off from config.c: every block is used as often as the
 * schedule runs it (the embedding and the head once), every layer runs
 * one block at least. */
static bool schedule_consistent(const Net *net) {
  int uses[NET_MAX_BLOCKS] = {0};
  for (int i = 0; i < net->nlayers; i++) {
    if (net->nlayer[i] == 0)
      return false;
    for (int k = 0; k < net->nlayer[i]; k++)
      uses[net->layer[i][k]]++;
  }
  uses[net->embed]++;
  uses[net->head]++;
  for (int b = 0; b < net->nblocks; b++)
    if (uses[b] != net->blocks[b].uses || net->blocks[b].copies < 1 ||
        net->blocks[b].copies > net->blocks[b].uses)
      return false;
  return true;
}

bool net_run(const Net *net, const Arch *a, const NetOpts *o, NetRun *r,
             FILE *progress, Diag *d) {
  assert(schedule_consistent(net));
  memset(r, 0, sizeof *r);
  r->opts = *o;
  int nb = net->nblocks;
  /* Prefill: every layer over the prompt; the head at the last position
   * (the logits the first token is drawn from). */
  for (int b = 0; b < nb; b++) {
    const Block *bk = &net->blocks[b];
    Pass ph = pass_of(o, false, b == net->head ? 1 : o->prompt, 0);
    if (progress)
      fprintf(progress, "pricing %s, prefill (%d of %d)\n", bk->label,
              b + 1, nb);
    if (!price_block(net, b, a, o, &ph, &r->prefill[b], d))
      return false;
    r->ttft += bk->uses * r->prefill[b].seconds;
    r->prefill_energy_j += bk->uses * r->prefill[b].energy_j;
    r->prefill_dram += bk->uses * r->prefill[b].dram_bytes;
  }
  /* Decode. */
  r->nsamples = o->generate > 0 ? sample_contexts(o, r->sample_context) : 0;
  double step_s[NET_MAX_SAMPLES] = {0}, step_e[NET_MAX_SAMPLES] = {0},
         step_b[NET_MAX_SAMPLES] = {0};
  for (int b = 0; b < nb && r->nsamples; b++) {
    const Block *bk = &net->blocks[b];
    int ns = net_block_caches(net, b) ? r->nsamples : 1;
    BlockCost at[NET_MAX_SAMPLES] = {{0}};
    for (int i = 0; i < ns; i++) {
      if (progress && (i == 0 || i + 1 == ns))
        fprintf(progress, "pricing %s, decode at context %ld\n", bk->label,
                r->sample_context[i]);
      Pass ph = pass_of(o, true, 1, r->sample_context[i]);
      if (!price_block(net, b, a, o, &ph, &at[i], d))
        return false;
    }
    for (int i = ns; i < r->nsamples; i++)
      at[i] = at[0];
    r->decode_first[b] = at[0];
    r->decode_last[b] = at[r->nsamples - 1];
    double ys[NET_MAX_SAMPLES], ye[NET_MAX_SAMPLES], yb[NET_MAX_SAMPLES];
    for (int i = 0; i < r->nsamples; i++) {
      ys[i] = at[i].seconds;
      ye[i] = at[i].energy_j;
      yb[i] = at[i].dram_bytes;
      step_s[i] += bk->uses * at[i].seconds;
      step_e[i] += bk->uses * at[i].energy_j;
      step_b[i] += bk->uses * at[i].dram_bytes;
    }
    double g = (double)o->generate;
    r->decode_mean[b] = (BlockCost){
        sum_steps(r->sample_context, ys, r->nsamples) / g,
        sum_steps(r->sample_context, ye, r->nsamples) / g,
        sum_steps(r->sample_context, yb, r->nsamples) / g};
  }
  if (r->nsamples) {
    memcpy(r->sample_seconds, step_s, sizeof step_s);
    r->tpot_first = step_s[0];
    r->tpot_last = step_s[r->nsamples - 1];
    double g = (double)o->generate;
    r->tpot_mean = sum_steps(r->sample_context, step_s, r->nsamples) / g;
    r->decode_energy_j = sum_steps(r->sample_context, step_e, r->nsamples);
    r->decode_dram = sum_steps(r->sample_context, step_b, r->nsamples);
    r->tokens_per_s = (double)o->batch / r->tpot_mean;
    r->energy_per_token = r->decode_energy_j / (g * (double)o->batch);
  }
  /* Memory at batch B and the context the run reaches (or the one
   * asked for). */
  long context = o->context > 0 ? o->context : o->prompt + o->generate;
  NetParams p;
  if (!net_params(net, &p, d))
    return false;
  r->weight_bytes = p.total * a->word_bytes;
  for (int b = 0; b < nb; b++) {
    double sb;
    if (!state_bytes(net, b, a, o, context, &sb, d))
      return false;
    if (net_block_caches(net, b))
      r->kv_bytes += net->blocks[b].uses * sb;
    else
      r->state_bytes += net->blocks[b].uses * sb;
  }
  r->need_bytes = r->weight_bytes + r->kv_bytes + r->state_bytes;
  r->capacity_bytes = a->levels[0].capacity;
  r->fits = r->need_bytes <= r->capacity_bytes;
  return true;
}
