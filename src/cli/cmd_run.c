/* cmd_run.c — `mambalaya run`: a language model over tokens in one pass
 * (logits and the decode state). */
#include "lm_cli.h"

#include <stdlib.h>

typedef struct RunArgs {
  LmArgs lm;
  bool mixer;
} RunArgs;

static const Opt run_opts[] = {
    {"--out", OPT_PATH, offsetof(RunArgs, lm.out), "FILE",
     .help = "the results (written atomically; refused if it is one of the "
             "inputs)"},
    {"--mixer-outputs", OPT_FLAG, offsetof(RunArgs, mixer), NULL,
     .help = "also write each layer's mixer output"},
};
static const OptTable run_table = OPT_TABLE(run_opts);

static void run_init(void *opts) { lm_args_init(&((RunArgs *)opts)->lm); }

/* Refused when the pass and the results it writes (copied, then the
 * file's image) exceed the budget. */
static int check_pass_memory(const char *cmd, const RunArgs *r, Lm *m) {
  const LmArgs *o = &r->lm;
  const ModelConfig *cfg = lm_config(m);
  double logit_bytes = 4.0 * o->nseq * o->len * cfg->vocab;
  double mixed =
      r->mixer ? 4.0 * cfg->n_layer * o->nseq * o->len * cfg->d_model : 0;
  char what[512];
  snprintf(what, sizeof what, "running %d x %d tokens (%s, %d layer%s)",
           o->nseq, o->len, o->executor, cfg->n_layer,
           cfg->n_layer == 1 ? "" : "s");
  return check_run_memory(cmd, o, m, what, false, r->mixer,
                          2 * (logit_bytes + mixed));
}

/* --json's object and the summary line on stderr. */
static void run_report(const LmArgs *o, const Lm *m, double secs) {
  double n = (double)o->nseq * o->len, rate = n / (secs > 0 ? secs : 1e-9);
  if (o->json) {
    json_t *j = json_object();
    json_object_set_new(j, "command", json_string("run"));
    lm_json_common(j, o, m);
    json_object_set_new(j, "tokens", lm_json_ids(o->tokens, o->nseq * o->len));
    json_object_set_new(j, "seconds", json_real(secs));
    json_object_set_new(j, "tokens_per_s", json_real(rate));
    lm_print_json(j);
    json_decref(j);
  }
  int layers = lm_config(m)->n_layer;
  fprintf(stderr,
          "mambalaya run: %d x %d tokens, %d layer%s, %s: %.4f s, %.1f "
          "tokens/s\n",
          o->nseq, o->len, layers, layers == 1 ? "" : "s",
          o->executor,
          secs, rate);
}

/* One pass over the tokens; the results into --out. */
static int run_pass(const char *cmd, const RunArgs *r, Lm *m) {
  const LmArgs *o = &r->lm;
  Pool *pool = pool_new(o->ex.threads);
  LmOpts lo = lm_pass_opts(o, pool, false);
  Tensors out = {0}, arrays = {0};
  Array *logits;
  Diag d = {0};
  double t0 = now_seconds();
  bool ok = lm_forward(m, o->tokens, o->nseq, o->len, &lo, &logits,
                       r->mixer ? &out : NULL, &d);
  double secs = now_seconds() - t0;
  int status = ok ? 0 : EXIT_RUN;
  if (!ok) {
    diag_print(&d, stderr);
  } else {
    warn_nonfinite(cmd, logits);
    tensors_put(&arrays, "logits", logits, true);
    for (int i = 0; i < out.n; i++)
      tensors_put(&arrays, out.names[i], out.arrays[i], false);
    Buf tok = {0};
    tokens_meta(&tok, o->tokens, o->nseq, o->len);
    if (o->out)
      status = save_results(m, o->out, &arrays, tok.s, o->executor,
                            o->inputs);
    buf_free(&tok);
  }
  if (!status)
    run_report(o, m, secs);
  tensors_free(&arrays);
  tensors_free(&out);
  pool_free(pool);
  return status;
}

static int run_cmd(const Parsed *p, void *opts) {
  RunArgs *r = opts;
  if (!r->lm.out && !r->lm.json)
    return usage_error(p->cmd, "needs --out or --json (see %s --help)",
                       p->cmd);
  Lm *m;
  int err = lm_start(p->cmd, &r->lm, &m);
  if (err)
    return err;
  if (!(err = check_pass_memory(p->cmd, r, m)))
    err = run_pass(p->cmd, r, m);
  return lm_finish(m, &r->lm, err);
}

const Command run_command = {
    "run", "run a Mamba language model over tokens (logits, state)",
    .about =
        "Run a Mamba language model over the tokens (--tokens, --tokens-file\n"
        "or --prompt) in one pass (every layer a cascade on the executor) and\n"
        "write FILE (safetensors, F32):\n"
        "  logits                   [batch, tokens, vocab] (batch 1 included)\n"
        "  layers.{i}.conv_state    [batch, channels, d_conv-1]: the last inputs\n"
        "                           of the convolution, oldest first (Mamba-2:\n"
        "                           channels x, B, C)\n"
        "  layers.{i}.ssm_state     Mamba-1 [batch, d_inner, d_state],\n"
        "                           Mamba-2 [batch, heads, head_dim, d_state]\n"
        "  layers.{i}.mixer_output  [batch, tokens, d_model] (--mixer-outputs)\n"
        "the layouts of tests/oracle/mamba_ref.py. A summary line (tokens,\n"
        "time, tokens/s) goes to stderr. Needs --out FILE or --json.\n",
    .opts = &run_table,
    .uses = {USE_LM(RunArgs), USE_EXECUTOR(RunArgs, lm.ex)},
    .example = "mambalaya run --model m130 --tokens 1,2,3 --strategy ri+rsb "
               "--out out.safetensors\n"
               "mambalaya run --model m130 --prompt \"Mamba is\" --json\n",
    .size = sizeof(RunArgs), .init = run_init, .run = run_cmd,
};

