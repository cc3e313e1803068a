/* cmd_generate.c — `mambalaya generate`: greedy decoding, a prefill
 * then one pass per new token. */
#include "lm_cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct GenArgs {
  LmArgs lm;
  int max_new;
  const char *config; /* --config: a whole model's folder (cmd_netrun.c) */
} GenArgs;

static const Opt gen_opts[] = {
    {"--config", OPT_PATH, offsetof(GenArgs, config), "DIR",
     .help = "a whole model instead: a folder that `init-weights --config` "
             "wrote (config.json, model.safetensors), run on --tokens by the "
             "interpreter (no --model then)"},
    {"--max-new", OPT_INT, offsetof(GenArgs, max_new), "N",
     .help = "how many tokens to generate (1 to 1048576)", .lo = 1,
     .hi = 1 << 20, .flags = OPT_REQUIRED},
    {"--out", OPT_PATH, offsetof(GenArgs, lm.out), "FILE",
     .help = "also write every position's logits and the final state (refused "
             "if it is an input)"},
};
static const OptTable gen_table = OPT_TABLE(gen_opts);

static void gen_init(void *opts) { lm_args_init(&((GenArgs *)opts)->lm); }

static int argmax(const float *v, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[best])
      best = i;
  return best;
}

/* Append [nseq, rows, V] LOGITS into ALL [nseq, total, V] at column AT. */
static void put_logits(Array *all, const Array *logits, int at) {
  int64_t nseq = all->shape[0], total = all->shape[1], V = all->shape[2];
  int64_t rows = logits->n / (nseq * V);
  for (int64_t s = 0; s < nseq; s++)
    memcpy(all->data + (s * total + at) * V, logits->data + s * rows * V,
           (size_t)(rows * V) * sizeof(float));
}

typedef struct Gen {
  Lm *m;
  const LmArgs *o;
  Pool *pool;
  bool stream; /* print each new token's text as it comes */
  int max_new;
  int *generated;  /* [nseq, max_new] */
  Array *all;      /* with --out: [nseq, prompt + max_new - 1, V] */
  double prefill_s, decode_s;
  int64_t nonfinite; /* logits that were NaN or infinite */
} Gen;

/* The next token of each sequence from LOGITS ([nseq, rows, V]: its last
 * row), into generated[., step]. */
static void pick(Gen *g, const Array *logits, int step) {
  int V = lm_config(g->m)->vocab;
  int64_t rows = logits->n / ((int64_t)g->o->nseq * V);
  for (int s = 0; s < g->o->nseq; s++) {
    const float *last = logits->data + (s * rows + rows - 1) * V;
    for (int i = 0; i < V; i++)
      g->nonfinite += !isfinite(last[i]);
    g->generated[s * g->max_new + step] = argmax(last, V);
  }
  if (g->stream) { /* one sequence: its bytes, as they come */
    Buf b = {0};
    token_text(g->o->tokenizer, g->generated[step], &b);
    emit(&b);
    buf_free(&b);
  }
}

static bool generate(Gen *g, Diag *d) {
  const LmArgs *o = g->o;
  bool keep = g->all != NULL;
  LmOpts lo = lm_pass_opts(o, g->pool, !keep);
  Array *logits;
  double t0 = now_seconds();
  if (!lm_forward(g->m, o->tokens, o->nseq, o->len, &lo, &logits, NULL, d))
    return false;
  g->prefill_s = now_seconds() - t0;
  pick(g, logits, 0);
  if (keep)
    put_logits(g->all, logits, 0);
  array_free(logits);
  int *next = xmalloc((size_t)o->nseq * sizeof *next);
  bool ok = true;
  t0 = now_seconds();
  for (int step = 1; ok && step < g->max_new; step++) {
    for (int s = 0; s < o->nseq; s++)
      next[s] = g->generated[s * g->max_new + step - 1];
    ok = lm_forward(g->m, next, o->nseq, 1, &lo, &logits, NULL, d);
    if (ok) {
      pick(g, logits, step);
      if (keep)
        put_logits(g->all, logits, o->len + step - 1);
      array_free(logits);
    }
  }
  g->decode_s = now_seconds() - t0;
  free(next);
  return ok;
}

/* Refused when the passes, and with --out every position's logits (then
 * their copy and image), exceed the budget. */
static int check_gen_memory(const char *cmd, const Gen *g) {
  const LmArgs *o = g->o;
  int V = lm_config(g->m)->vocab;
  double all =
      o->out ? 4.0 * o->nseq * ((double)o->len + g->max_new - 1) * V : 0;
  char what[512];
  snprintf(what, sizeof what, "generating %d token%s after %d x %d (%s%s)",
           g->max_new, g->max_new == 1 ? "" : "s", o->nseq, o->len,
           o->executor,
           o->out ? ", every position's logits kept for --out" : "");
  return check_run_memory(cmd, o, g->m, what, !o->out, false,
                          3 * all + 4.0 * o->nseq * g->max_new);
}

/* --out: every position's logits and the final state, with every token
 * that ran (the prompt and all generated but the last). */
static int gen_save(const Gen *g) {
  const LmArgs *o = g->o;
  int total = o->len + g->max_new - 1;
  int *ran = xmalloc((size_t)o->nseq * (size_t)total * sizeof *ran);
  for (int s = 0; s < o->nseq; s++)
    for (int i = 0; i < total; i++)
      ran[s * total + i] = i < o->len
                               ? o->tokens[s * o->len + i]
                               : g->generated[s * g->max_new + i - o->len];
  Buf tok = {0};
  tokens_meta(&tok, ran, o->nseq, total);
  Tensors arrays = {0};
  tensors_put(&arrays, "logits", g->all, false);
  int status =
      save_results(g->m, o->out, &arrays, tok.s, o->executor,
                   o->inputs);
  tensors_free(&arrays);
  buf_free(&tok);
  free(ran);
  return status;
}

static void gen_json(const Gen *g, double prefill_rate, double decode_rate) {
  const LmArgs *o = g->o;
  json_t *j = json_object();
  json_object_set_new(j, "command", json_string("generate"));
  lm_json_common(j, o, g->m);
  json_object_set_new(j, "tokens", lm_json_ids(o->tokens, o->nseq * o->len));
  json_object_set_new(j, "max_new", json_integer(g->max_new));
  json_t *gen = json_array(), *text = json_array();
  for (int s = 0; s < o->nseq; s++) {
    const int *ids = g->generated + s * g->max_new;
    json_array_append_new(gen, lm_json_ids(ids, g->max_new));
    if (o->tokenizer)
      json_array_append_new(text, lm_json_text(o->tokenizer, ids, g->max_new));
  }
  json_object_set_new(j, "generated", gen);
  if (o->tokenizer)
    json_object_set_new(j, "text", text);
  else
    json_decref(text);
  LmOpts lo = lm_pass_opts(o, NULL, false); /* the prompt's SSD form */
  json_object_set_new(j, "ssd_chunk",
                      json_integer(lm_ssd_chunk(g->m, &lo, o->len, false)));
  json_object_set_new(j, "prefill_seconds", json_real(g->prefill_s));
  json_object_set_new(j, "prefill_tokens_per_s", json_real(prefill_rate));
  json_object_set_new(j, "decode_seconds", json_real(g->decode_s));
  json_object_set_new(j, "decode_tokens_per_s", json_real(decode_rate));
  lm_print_json(j);
  json_decref(j);
}

/* The generated tokens (JSON, or their ids a line per sequence; streamed
 * text was printed as it came) and the summary line on stderr. */
static void gen_report(const char *cmd, const Gen *g) {
  const LmArgs *o = g->o;
  if (g->nonfinite)
    fprintf(stderr,
            "%s: warning: %lld logits were not finite (NaN or infinite "
            "weights?): the tokens picked from them are meaningless\n",
            cmd, (long long)g->nonfinite);
  double steps = (double)o->nseq * (double)(g->max_new - 1);
  double prefill_rate =
      o->nseq * o->len / (g->prefill_s > 0 ? g->prefill_s : 1e-9);
  double decode_rate =
      g->max_new > 1 ? steps / (g->decode_s > 0 ? g->decode_s : 1e-9) : 0.0;
  if (o->json) {
    gen_json(g, prefill_rate, decode_rate);
  } else if (!g->stream) {
    print_token_rows(g->generated, o->nseq, g->max_new);
  }
  fprintf(stderr,
          "mambalaya generate: prompt %d x %d tokens in %.4f s (%.1f "
          "tokens/s); %d new tokens per sequence, decode %.1f tokens/s "
          "(%s)\n",
          o->nseq, o->len, g->prefill_s, prefill_rate, g->max_new,
          decode_rate, o->executor);
}

/* Decode, then --out and the report. */
static int gen_run(const char *cmd, Gen *g) {
  const LmArgs *o = g->o;
  if (g->stream) { /* the prompt, then the new text as it comes */
    fputs(o->prompt, stdout);
    fflush(stdout);
  }
  g->pool = pool_new(o->ex.threads);
  g->generated =
      xcalloc((size_t)o->nseq * (size_t)g->max_new, sizeof(int));
  if (o->out)
    g->all = array_new(3, (int64_t[]){o->nseq, o->len + g->max_new - 1,
                                      lm_config(g->m)->vocab});
  Diag d = {0};
  int status = 0;
  if (!generate(g, &d)) {
    diag_print(&d, stderr);
    status = EXIT_RUN;
  }
  if (!status && o->out)
    status = gen_save(g);
  if (g->stream)
    printf("\n");
  if (!status)
    gen_report(cmd, g);
  array_free(g->all);
  free(g->generated);
  pool_free(g->pool);
  return status;
}

static int generate_cmd(const Parsed *p, void *opts) {
  GenArgs *ga = opts;
  if (ga->config) {
    static const char *const lm_only[] = {"--model", "--prompt",
                                          "--tokens-file", "--strategy",
                                          "--json"};
    int err = 0;
    for (size_t i = 0; !err && i < sizeof lm_only / sizeof lm_only[0]; i++)
      if (opt_given(p, lm_only[i]))
        err = usage_error(p->cmd, "--config runs a whole model on --tokens "
                                  "by the interpreter: drop %s", lm_only[i]);
    if (!err)
      err = net_generate(p->cmd, ga->config, ga->lm.tokens_text,
                         ga->lm.batch, ga->max_new, ga->lm.out, p->inputs);
    lm_args_free(&ga->lm);
    return err;
  }
  Gen g = {.o = &ga->lm, .max_new = ga->max_new};
  int err = lm_start(p->cmd, &ga->lm, &g.m);
  if (err)
    return err;
  g.stream = ga->lm.tokenizer && !ga->lm.json;
  if (!(err = check_gen_memory(p->cmd, &g)))
    err = gen_run(p->cmd, &g);
  return lm_finish(g.m, &ga->lm, err);
}

const Command generate_command = {
    "generate", "greedy decoding: prefill, then token steps",
    .about =
        "Greedy decoding: prefill the prompt (--tokens, --tokens-file or\n"
        "--prompt) in one pass, then one pass of one token per new token,\n"
        "each continuing from the decode state the last pass left. With\n"
        "--prompt, prints the prompt and then each new token's text as it is\n"
        "made; with --tokens, the N generated token ids of each sequence, one\n"
        "line per sequence, comma-separated. With --out, FILE gets the logits\n"
        "of every position that ran, [batch, prompt + N - 1, vocab] (the\n"
        "prompt's from the prefill, then one per step), and the final decode\n"
        "state as for mambalaya run. A summary line goes to stderr.\n",
    .opts = &gen_table,
    .uses = {USE_LM(GenArgs), USE_EXECUTOR(GenArgs, lm.ex)},
    .example = "mambalaya generate --model m130 --prompt \"Mamba is\" "
               "--max-new 32\n"
               "mambalaya generate --model m130 --tokens \"1,2;3,4\" "
               "--max-new 8 --strategy full\n"
               "mambalaya generate --model m2 --tokens-file prompt.txt "
               "--max-new 8 --ssd chunked --ssd-chunk 64\n",
    .size = sizeof(GenArgs), .init = gen_init, .run = generate_cmd,
};

