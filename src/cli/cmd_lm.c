/* cmd_lm.c — whole language models: `mambalaya init-weights`, `run` and
 * `generate`.
 *
 * Results go to files (--out) and, for generate, the generated tokens to
 * stdout (their text as they come with --prompt, else their ids); the
 * one-line timing summary of run and generate goes to stderr, so that
 * stdout carries only results (with --json: one JSON object). */
#include "cli.h"

#include "../lm/lm.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- options shared by run and generate ---- */

typedef struct LmArgs {
  const char *model, *spec, *tokens_text, *tokens_file, *out;
  const char *prompt, *tokenizer_file; /* --prompt, --tokenizer */
  Tokenizer *tokenizer;                /* with --prompt */
  bool json;
  double max_memory; /* --max-memory; 0: what the machine has */
  int batch;         /* --batch; 0: one sequence, or the rows given */
  ExecutorOpts ex;
  char *file_text; /* --tokens-file's contents */
  /* The token ids, [nseq, len] row-major. */
  int *tokens;
  int nseq, len;
} LmArgs;

#define LO(field) offsetof(LmArgs, field)
static const Opt lm_opts_table[] = {
    {"--model", OPT_PATH, LO(model), "DIR",
     .help = "a model directory: config.json and model.safetensors (Hugging "
             "Face key names; see mambalaya init-weights)",
     .flags = OPT_REQUIRED},
    {"--tokens", OPT_STRING, LO(tokens_text), "LIST",
     .help = "token ids: 1,2,3 (one sequence, or split into --batch equal "
             "rows) or 1,2;3,4 (one row per ';')"},
    {"--tokens-file", OPT_PATH, LO(tokens_file), "F",
     .help = "the token ids from file F (a regular file or a named pipe, at "
             "most 64 MiB): as for --tokens, with a line break also ending a "
             "row"},
    {"--prompt", OPT_STRING, LO(prompt), "TEXT",
     .help = "the tokens of TEXT instead (one sequence), by the model's "
             "tokenizer.json (byte-level BPE)"},
    {"--tokenizer", OPT_PATH, LO(tokenizer_file), "FILE",
     .help = "the tokenizer.json for --prompt (default: "
             "MODEL/tokenizer.json)"},
    {"--batch", OPT_INT, LO(batch), "N",
     .help = "split the list into N sequences of equal length", .lo = 1,
     .hi = 1 << 20},
    {"--spec", OPT_STRING, LO(spec), "SPEC",
     .help = "the layer cascade (default: mamba1 or mamba2, from "
             "config.json); its weights: section maps the keys"},
    {"--max-memory", OPT_SIZE, LO(max_memory), "B",
     .help = "refuse (exit 2) a run whose weights, activations and results "
             "would need more than B bytes (suffixes as for --buffer; "
             "default: the memory available)"},
    {"--json", OPT_FLAG, LO(json), NULL,
     .help = "print one JSON object on stdout: the tokens, times, bytes of "
             "weights, peak bytes of activations and the peak resident "
             "memory"},
};
static const OptTable lm_table = OPT_TABLE(lm_opts_table);

static void lm_args_init(LmArgs *o) {
  *o = (LmArgs){.ex = executor_defaults()};
}

/* --tokens, or --tokens-file (where a line break ends a row). */
static bool parse_tokens(const char *cmd, LmArgs *o) {
  if (o->tokens_file) {
    Diag d = {0};
    size_t len;
    if (!(o->file_text = read_input(o->tokens_file, INPUT_TEXT_MAX, &len,
                                    &d))) {
      diag_print(&d, stderr);
      return false;
    }
    if (strlen(o->file_text) != len) {
      usage_error(cmd, "--tokens-file %s: contains a NUL byte",
                  o->tokens_file);
      return false;
    }
    /* Line breaks end rows; blank lines and a final break do not count. */
    char *w = o->file_text;
    for (const char *r = o->file_text; *r; r++) {
      char c = *r == '\n' ? ';' : *r;
      if (c == ';' && (w == o->file_text || w[-1] == ';'))
        continue;
      *w++ = c;
    }
    *w = 0;
    o->tokens_text = o->file_text;
  }
  TokenList t;
  if (!parse_token_list(cmd, o->tokens_text, o->batch, &t))
    return false;
  o->tokens = t.ids;
  o->nseq = t.nseq;
  o->len = t.len;
  return true;
}

/* The tokens: --tokens, or --prompt through the tokenizer. */
static int read_tokens(const char *cmd, LmArgs *o) {
  int given = !!o->tokens_text + !!o->tokens_file + !!o->prompt;
  if (given != 1)
    return usage_error(cmd, "needs one of --tokens, --tokens-file and --prompt "
                          "(see %s --help)",
                       cmd);
  if (!o->prompt)
    return parse_tokens(cmd, o) ? 0 : EXIT_INPUT;
  if (o->batch > 1)
    return usage_error(cmd, "--prompt is one sequence: --batch %d does not "
                          "apply",
                       o->batch);
  if (!(o->tokenizer = open_tokenizer(o->model, o->tokenizer_file)))
    return EXIT_INPUT;
  Diag d = {0};
  int n;
  if (!tokenizer_encode(o->tokenizer, o->prompt, strlen(o->prompt),
                        &o->tokens, &n, &d))
    return usage_error(cmd, "--prompt: %s", d.msg);
  if (n == 0) {
    free(o->tokens);
    o->tokens = NULL;
    return usage_error(cmd, "--prompt: the text has no tokens");
  }
  o->nseq = 1;
  o->len = n;
  return 0;
}

/* The process's peak resident memory, in bytes (Linux: ru_maxrss KiB). */
static double peak_rss(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024 : 0;
}

/* The figures both commands report in --json. */
static void json_common(json_t *j, const LmArgs *o, const Lm *m) {
  json_object_set_new(j, "model", json_string(o->model));
  json_object_set_new(j, "strategy", json_string(executor_name(&o->ex)));
  json_object_set_new(j, "batch", json_integer(o->nseq));
  json_object_set_new(j, "prompt_tokens", json_integer(o->len));
  json_object_set_new(j, "layers", json_integer(lm_config(m)->n_layer));
  json_object_set_new(j, "weight_bytes", json_real(lm_weight_bytes(m)));
  json_object_set_new(j, "peak_activation_bytes",
                      json_real(lm_peak_bytes(m)));
  json_object_set_new(j, "peak_rss_bytes", json_real(peak_rss()));
}

static json_t *json_ids(const int *ids, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(a, json_integer(ids[i]));
  return a;
}

/* The text of IDS (N of them) as a JSON string; null if it is not UTF-8
 * (a character cut by the end of the sequence). */
static json_t *json_text(const Tokenizer *t, const int *ids, int n) {
  Buf b = {0};
  buf_printf(&b, "%s", "");
  for (int i = 0; i < n; i++)
    token_text(t, ids[i], &b);
  json_t *j = json_stringn(b.s, b.len);
  buf_free(&b);
  return j ? j : json_null();
}

static void print_json(json_t *j) {
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (s)
    printf("%s\n", s);
  free(s);
}

/* Loading DIR's model holds its checkpoint file whole and the weights as
 * fp32: refused before reading when that exceeds BUDGET. */
static int check_load_memory(const char *cmd, const LmArgs *o, double budget) {
  Buf cpath = {0}, wpath = {0};
  buf_printf(&cpath, "%s/config.json", o->model);
  buf_printf(&wpath, "%s/model.safetensors", o->model);
  ModelConfig cfg;
  Diag d = {0};
  int status = 0;
  if (!model_config_load(cpath.s, &cfg, &d)) {
    diag_print(&d, stderr);
    status = EXIT_INPUT;
  } else {
    struct stat st;
    double file = stat(wpath.s, &st) == 0 ? (double)st.st_size : 0;
    uint64_t params;
    double weights = lm_param_count(&cfg, &params) ? 4.0 * (double)params
                                                   : INFINITY;
    char what[160];
    snprintf(what, sizeof what,
             "loading %s (%d layers, %.3g parameters as fp32, from a "
             "%.3g-byte checkpoint)",
             o->model, cfg.n_layer, weights / 4, file);
    status = check_memory(cmd, what, file + weights, budget, o->max_memory > 0);
  }
  buf_free(&cpath);
  buf_free(&wpath);
  return status;
}

/* The model, with --spec if given; exit status on failure. */
static int open_model(const char *cmd, const LmArgs *o, Lm **m) {
  Diag d = {0};
  struct stat st;
  if (stat(o->model, &st) != 0 || !S_ISDIR(st.st_mode))
    return usage_error(cmd, "--model %s: not a model directory (config.json "
                          "and model.safetensors)",
                       o->model);
  int status = check_load_memory(cmd, o, memory_budget(o->max_memory));
  if (status)
    return status;
  Cascade *spec = NULL;
  if (o->spec && !(spec = open_spec(o->spec, &d))) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  if (!(*m = lm_open(o->model, spec, &d))) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  int vocab = lm_config(*m)->vocab;
  for (int i = 0; i < o->nseq * o->len; i++)
    if (o->tokens[i] >= vocab) {
      lm_free(*m);
      *m = NULL;
      return usage_error(cmd,
                         "token %d is outside the vocabulary [0, %d) of %s",
                         o->tokens[i], vocab, o->model);
    }
  return 0;
}

static LmOpts lm_opts(const LmArgs *o, Pool *pool, bool last_only) {
  return (LmOpts){.fused = o->ex.strategy >= 0,
                  .strategy = o->ex.strategy < 0 ? ST_FULL
                                                 : (Strategy)o->ex.strategy,
                  .buffer_bytes = o->ex.buffer, .pool = pool,
                  .last_only = last_only};
}

/* --out must be writable and must not be one of the files the run
 * reads (the checkpoint, its config, the spec, the tokens). */
static int check_lm_output(const char *cmd, const LmArgs *o) {
  if (!o->out)
    return 0;
  Buf c = {0}, w = {0};
  buf_printf(&c, "%s/config.json", o->model);
  buf_printf(&w, "%s/model.safetensors", o->model);
  const char *inputs[] = {c.s, w.s, input_path("specs", o->spec),
                          o->tokens_file};
  int status = check_output(cmd, o->out, inputs, 4);
  buf_free(&c);
  buf_free(&w);
  return status;
}

/* Refuse a run (WHAT, for the message) whose weights, first pass
 * (LAST_ONLY: logits of the last token only; RECORD: the mixer outputs
 * too) and RESULTS bytes of results held beside them exceed the budget. */
static int check_run_memory(const char *cmd, const LmArgs *o, Lm *m,
                            const char *what, bool last_only, bool record,
                            double results) {
  LmOpts lo = lm_opts(o, NULL, last_only);
  double pass;
  Diag d = {0};
  if (!lm_pass_bytes(m, o->nseq, o->len, &lo, record, &pass, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  return check_memory(cmd, what, lm_weight_bytes(m) + pass + results,
                      memory_budget(o->max_memory), o->max_memory > 0);
}

/* NaN weights make NaN logits, and argmax then picks token 0: say so. */
static void warn_nonfinite(const char *cmd, const Array *logits) {
  int64_t bad = 0;
  for (int64_t i = 0; i < logits->n; i++)
    bad += !isfinite(logits->data[i]);
  if (bad)
    fprintf(stderr,
            "%s: warning: %lld of the %lld logits are not finite (NaN or "
            "infinite weights?)\n",
            cmd, (long long)bad, (long long)logits->n);
}

static void lm_args_free(LmArgs *o) {
  free(o->tokens);
  free(o->file_text);
  tokenizer_free(o->tokenizer);
}

static void tokens_meta(Buf *b, const int *tokens, int nseq, int len) {
  for (int s = 0; s < nseq; s++)
    for (int i = 0; i < len; i++)
      buf_printf(b, "%d%s", tokens[s * len + i],
                 i + 1 < len ? "," : s + 1 < nseq ? ";" : "");
}

/* Write ARRAYS (logits first) and the model's decode state to PATH. */
static int save_results(const Lm *m, const char *path, const Tensors *arrays,
                        const char *tokens, const char *strategy) {
  StWriter *w = st_writer_new();
  for (int i = 0; i < arrays->n; i++)
    st_writer_add(w, arrays->names[i], arrays->arrays[i], DT_F32);
  Tensors state = {0};
  lm_export_state(m, &state);
  for (int i = 0; i < state.n; i++)
    st_writer_add(w, state.names[i], state.arrays[i], DT_F32);
  tensors_free(&state);
  st_writer_meta(w, "tokens", tokens);
  st_writer_meta(w, "strategy", strategy);
  Diag d = {0};
  bool ok = st_writer_save(w, path, &d);
  st_writer_free(w);
  if (!ok) {
    diag_print(&d, stderr);
    return EXIT_RUN;
  }
  return 0;
}

/* The tokens and the model, once --out is known to be writable: 0, or
 * an exit status with O freed. */
static int lm_start(const char *cmd, LmArgs *o, Lm **m) {
  int err = check_lm_output(cmd, o);
  if (!err && !(err = read_tokens(cmd, o)))
    err = open_model(cmd, o, m);
  if (err)
    lm_args_free(o);
  return err;
}

/* ---- run ---- */

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
  char what[160];
  snprintf(what, sizeof what, "running %d x %d tokens (%s, %d layer%s)",
           o->nseq, o->len, executor_name(&o->ex), cfg->n_layer,
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
    json_common(j, o, m);
    json_object_set_new(j, "tokens", json_ids(o->tokens, o->nseq * o->len));
    json_object_set_new(j, "seconds", json_real(secs));
    json_object_set_new(j, "tokens_per_s", json_real(rate));
    print_json(j);
    json_decref(j);
  }
  int layers = lm_config(m)->n_layer;
  fprintf(stderr,
          "mambalaya run: %d x %d tokens, %d layer%s, %s: %.4f s, %.1f "
          "tokens/s\n",
          o->nseq, o->len, layers, layers == 1 ? "" : "s", executor_name(&o->ex),
          secs, rate);
}

/* One pass over the tokens; the results into --out. */
static int run_pass(const char *cmd, const RunArgs *r, Lm *m) {
  const LmArgs *o = &r->lm;
  Pool *pool = pool_new(o->ex.threads);
  LmOpts lo = lm_opts(o, pool, false);
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
      status = save_results(m, o->out, &arrays, tok.s, executor_name(&o->ex));
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
  lm_free(m);
  lm_args_free(&r->lm);
  return err;
}

const Command run_command = {
    .name = "run",
    .summary = "run a Mamba language model over tokens (logits, state)",
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
    .uses = {{&run_table, 0, NULL},
             {&lm_table, offsetof(RunArgs, lm), NULL},
             {&executor_options, offsetof(RunArgs, lm.ex), NULL}},
    .example = "mambalaya run --model m130 --tokens 1,2,3 --strategy ri+rsb "
               "--out out.safetensors\n"
               "mambalaya run --model m130 --prompt \"Mamba is\" --json\n",
    .size = sizeof(RunArgs),
    .init = run_init,
    .run = run_cmd,
};

/* ---- generate ---- */

typedef struct GenArgs {
  LmArgs lm;
  int max_new;
} GenArgs;

static const Opt gen_opts[] = {
    {"--max-new", OPT_INT, offsetof(GenArgs, max_new), "N",
     .help = "how many tokens to generate (1 to 1048576)", .lo = 1,
     .hi = 1 << 20, .flags = OPT_REQUIRED},
    {"--out", OPT_PATH, offsetof(GenArgs, lm.out), "FILE",
     .help = "also write every position's logits and the final state "
             "(refused if it is an input)"},
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
  LmOpts lo = lm_opts(o, g->pool, !keep);
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
  char what[200];
  snprintf(what, sizeof what, "generating %d tokens after %d x %d (%s%s)",
           g->max_new, o->nseq, o->len, executor_name(&o->ex),
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
  int status = save_results(g->m, o->out, &arrays, tok.s, executor_name(&o->ex));
  tensors_free(&arrays);
  buf_free(&tok);
  free(ran);
  return status;
}

static void gen_json(const Gen *g, double prefill_rate, double decode_rate) {
  const LmArgs *o = g->o;
  json_t *j = json_object();
  json_object_set_new(j, "command", json_string("generate"));
  json_common(j, o, g->m);
  json_object_set_new(j, "tokens", json_ids(o->tokens, o->nseq * o->len));
  json_object_set_new(j, "max_new", json_integer(g->max_new));
  json_t *gen = json_array(), *text = json_array();
  for (int s = 0; s < o->nseq; s++) {
    const int *ids = g->generated + s * g->max_new;
    json_array_append_new(gen, json_ids(ids, g->max_new));
    if (o->tokenizer)
      json_array_append_new(text, json_text(o->tokenizer, ids, g->max_new));
  }
  json_object_set_new(j, "generated", gen);
  if (o->tokenizer)
    json_object_set_new(j, "text", text);
  else
    json_decref(text);
  json_object_set_new(j, "prefill_seconds", json_real(g->prefill_s));
  json_object_set_new(j, "prefill_tokens_per_s", json_real(prefill_rate));
  json_object_set_new(j, "decode_seconds", json_real(g->decode_s));
  json_object_set_new(j, "decode_tokens_per_s", json_real(decode_rate));
  print_json(j);
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
    Buf b = {0};
    tokens_meta(&b, g->generated, o->nseq, g->max_new);
    for (char *p = b.s; *p; p++)
      if (*p == ';')
        *p = '\n';
    printf("%s\n", b.s);
    buf_free(&b);
  }
  fprintf(stderr,
          "mambalaya generate: prompt %d x %d tokens in %.4f s (%.1f "
          "tokens/s); %d new tokens per sequence, decode %.1f tokens/s "
          "(%s)\n",
          o->nseq, o->len, g->prefill_s, prefill_rate, g->max_new,
          decode_rate, executor_name(&o->ex));
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
  Gen g = {.o = &ga->lm, .max_new = ga->max_new};
  int err = lm_start(p->cmd, &ga->lm, &g.m);
  if (err)
    return err;
  g.stream = ga->lm.tokenizer && !ga->lm.json;
  if (!(err = check_gen_memory(p->cmd, &g)))
    err = gen_run(p->cmd, &g);
  lm_free(g.m);
  lm_args_free(&ga->lm);
  return err;
}

const Command generate_command = {
    .name = "generate",
    .summary = "greedy decoding: prefill, then token steps",
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
    .uses = {{&gen_table, 0, NULL},
             {&lm_table, offsetof(GenArgs, lm), NULL},
             {&executor_options, offsetof(GenArgs, lm.ex), NULL}},
    .example = "mambalaya generate --model m130 --prompt \"Mamba is\" "
               "--max-new 32\n"
               "mambalaya generate --model m130 --tokens \"1,2;3,4\" "
               "--max-new 8 --strategy full\n",
    .size = sizeof(GenArgs),
    .init = gen_init,
    .run = generate_cmd,
};

/* ---- init-weights ---- */

typedef struct InitArgs {
  SpecOpts so; /* --model, --set */
  const char *out;
  uint64_t seed;
  double max_memory;
  int dtype; /* an index into dtypes[] */
} InitArgs;

static const DType dtypes[] = {DT_F32, DT_F16, DT_BF16};
static const char *dtype_at(int i) { return dtype_name(dtypes[i]); }
static const OptChoices dtype_choices = {
    "dtype", dtype_at, (int)(sizeof dtypes / sizeof dtypes[0]), NULL, false};

static const Opt init_opts[] = {
    {"--model", OPT_STRING, offsetof(InitArgs, so.model), "M",
     .help = "a preset (mamba-130m, ..., mamba2-2.7b) or a model directory "
             "whose config.json gives the sizes",
     .flags = OPT_REQUIRED},
    {"--set", OPT_CUSTOM, offsetof(InitArgs, so), "NAME=V",
     .help = "override a size: d_model, n_layer, vocab, d_state, d_conv, "
             "expand, dt_rank, head_dim, n_heads (derived sizes follow: --set "
             "d_model=64 --set n_layer=2 --set vocab=128 makes a tiny model)",
     .flags = OPT_REPEAT, .parse = parse_set},
    {"--seed", OPT_SEED, offsetof(InitArgs, seed), "N",
     .help = "the random seed (default 0)"},
    {"--dtype", OPT_ENUM, offsetof(InitArgs, dtype), "T",
     .help = "F32 (default), F16 or BF16", .choices = &dtype_choices},
    {"--out", OPT_PATH, offsetof(InitArgs, out), "DIR",
     .help = "where to write (not the --model directory itself)",
     .flags = OPT_REQUIRED},
    {"--max-memory", OPT_SIZE, offsetof(InitArgs, max_memory), "B",
     .help = "refuse a model that needs more than B bytes to write "
             "(default: the memory available)"},
};
static const OptTable init_table = OPT_TABLE(init_opts);

/* init-weights holds every tensor twice (the writer's copy and the
 * file's image), one of them as fp32 while it is made, and the key list. */
static int check_init_memory(const char *cmd, const ModelConfig *cfg, DType dt,
                             double max_memory) {
  uint64_t params;
  double need = INFINITY;
  if (lm_param_count(cfg, &params)) {
    double p = (double)params, layers = cfg->n_layer;
    double table = (layers * 10 + 2) * (double)sizeof(CkptKey);
    double biggest = (double)cfg->vocab * cfg->d_model;
    if (p / layers > biggest)
      biggest = p / layers;
    need = 2 * p * dtype_size(dt) + 4 * biggest + table;
  }
  char what[160];
  snprintf(what, sizeof what,
           "writing a model of %d layers and %.3g parameters (%s)",
           cfg->n_layer, need < INFINITY ? (double)params : INFINITY,
           dtype_name(dt));
  return check_memory(cmd, what, need, memory_budget(max_memory),
                      max_memory > 0);
}

/* Write DIR/model.safetensors and DIR/config.json as one set: both land,
 * or neither does (and DIR is left as it was). INPUT: the config.json
 * the sizes came from, which must not be replaced. */
static int write_model(const ModelConfig *cfg, uint64_t seed, DType dt,
                       const char *dir, const char *input) {
  Diag d = {0};
  double params;
  bool refused = false;
  if (!lm_write_random(cfg, seed, dt, dir, input, &params, &refused, &d)) {
    diag_print(&d, stderr);
    return refused ? EXIT_INPUT : EXIT_RUN;
  }
  size_t k = strlen(dir);
  const char *sep = k && dir[k - 1] == '/' ? "" : "/";
  printf("wrote %s%sconfig.json and %s%smodel.safetensors: Mamba-%d, "
         "d_model %d, %d layers, vocab %d, %.0f parameters (%s)\n",
         dir, sep, dir, sep, cfg->version, cfg->d_model, cfg->n_layer,
         cfg->vocab, params, dtype_name(dt));
  return 0;
}

static int init_weights(const Parsed *p, void *opts) {
  const InitArgs *o = opts;
  ModelConfig cfg;
  Diag d = {0};
  DType dt = dtypes[o->dtype];
  if (!lm_config_resolve(o->so.model, o->so.sets, o->so.nsets, &cfg, &d) ||
      !output_dir_check(o->out, &d))
    return input_failed(&d);
  int err = check_init_memory(p->cmd, &cfg, dt, o->max_memory);
  if (err)
    return err;
  Buf input = {0};
  if (!preset_find(o->so.model))
    buf_printf(&input, "%s/config.json", o->so.model);
  err = write_model(&cfg, o->seed, dt, o->out, input.s);
  buf_free(&input);
  return err;
}

const Command init_weights_command = {
    .name = "init-weights",
    .summary = "write a model directory with random Mamba weights",
    .about =
        "Write DIR/config.json (state-spaces form) and DIR/model.safetensors\n"
        "(Hugging Face key names) with random weights that have the\n"
        "statistics of a freshly initialized Mamba: embedding and in_proj\n"
        "N(0, 0.02), out_proj N(0, 0.02/sqrt(2 n_layer)), conv1d\n"
        "U(+-1/sqrt(d_conv)), x_proj U(+-1/sqrt(d_inner)), dt_proj.weight\n"
        "U(+-dt_rank^-0.5), dt bias softplus^-1 of a log-uniform value in\n"
        "[1e-3, 0.1], A_log = log(1..N) (Mamba-1) or log(U(1, 16)) per head\n"
        "(Mamba-2), D = 1, norm weights 1. The same seed gives the same\n"
        "weights. DIR is created if needed. The two files land together (an\n"
        "existing model there is replaced whole); a failed or interrupted run\n"
        "leaves DIR as it was. A run that would need more memory than\n"
        "available is refused (exit 2).\n",
    .uses = {{&init_table, 0, NULL}},
    .example = "mambalaya init-weights --model mamba-130m --set n_layer=2 "
               "--out m\n",
    .size = sizeof(InitArgs),
    .run = init_weights,
};
