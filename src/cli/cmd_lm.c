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
  int batch;   /* --batch; 0: one sequence, or the rows given */
  bool fused;
  Strategy strategy;
  const char *strategy_name;
  double buffer;
  int threads;
  char *file_text; /* --tokens-file's contents */
  /* The token ids, [nseq, len] row-major. */
  int *tokens;
  int nseq, len;
} LmArgs;

static const char common_usage[] =
    "  --model DIR      a model directory: config.json and model.safetensors\n"
    "                   (Hugging Face key names; see mambalaya init-weights)\n"
    "  --tokens LIST    token ids: 1,2,3 (one sequence, or split into\n"
    "                   --batch equal rows) or 1,2;3,4 (one row per ';')\n"
    "  --tokens-file F  the token ids from file F (a regular file or a named\n"
    "                   pipe, at most 64 MiB): as for --tokens, with a line\n"
    "                   break also ending a row\n"
    "  --prompt TEXT    the tokens of TEXT instead (one sequence), by the\n"
    "                   model's tokenizer.json (byte-level BPE)\n"
    "  --tokenizer FILE the tokenizer.json for --prompt (default:\n"
    "                   MODEL/tokenizer.json)\n"
    "  --batch N        split the list into N sequences of equal length\n"
    "  --strategy S     interpreter (default: Einsum by Einsum), or the fused\n"
    "                   executor with the plan of unfused, ri, ri+rsb,\n"
    "                   ri+rsb+rsp or full; all compute the same numbers\n"
    "  --buffer BYTES   the fused executor's tile buffer (default 2MiB;\n"
    "                   suffixes k, M, G, KiB, MiB, GiB)\n"
    "  --spec SPEC      the layer cascade (default: mamba1 or mamba2, from\n"
    "                   config.json); its weights: section maps the keys\n"
    "  --threads N      worker threads (default: the CPUs, at most 16)\n"
    "  --max-memory B   refuse (exit 2) a run whose weights, activations and\n"
    "                   results would need more than B bytes (suffixes as\n"
    "                   for --buffer; default: the memory available)\n"
    "  --json           print one JSON object on stdout: the tokens, times,\n"
    "                   bytes of weights, peak bytes of activations and the\n"
    "                   peak resident memory\n";

/* --tokens, or --tokens-file (where a line break ends a row). */
static bool parse_tokens(const Args *a, LmArgs *o) {
  if (o->tokens_file) {
    Diag d = {0};
    size_t len;
    if (!(o->file_text = read_input(o->tokens_file, INPUT_TEXT_MAX, &len,
                                    &d))) {
      diag_print(&d, stderr);
      return false;
    }
    if (strlen(o->file_text) != len) {
      usage_error(a, "--tokens-file %s: contains a NUL byte",
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
  if (!parse_token_list(a, o->tokens_text, o->batch, &t))
    return false;
  o->tokens = t.ids;
  o->nseq = t.nseq;
  o->len = t.len;
  return true;
}

/* One of the options run and generate share; *err set on a bad value. */
static bool lm_opt(Args *a, LmArgs *o, int *err) {
  *err = 0;
  static const char *const names[] = {
      "--model",  "--tokens",      "--batch",      "--strategy",
      "--buffer", "--spec",        "--threads",    "--out",
      "--tokens-file", "--max-memory", "--prompt", "--tokenizer"};
  enum { NNAMES = sizeof names / sizeof names[0] };
  if (args_is(a, "--json")) { /* args_next refuses a value */
    o->json = true;
    return true;
  }
  int k = 0;
  while (k < NNAMES && !args_is(a, names[k]))
    k++;
  if (k == NNAMES)
    return false;
  if (!args_value(a)) {
    *err = EXIT_INPUT;
    return true;
  }
  long v = 0;
  switch (k) {
  case 0: o->model = a->val; break;
  case 1: o->tokens_text = a->val; break;
  case 2:
    if (!parse_count(a->val, 1, 1 << 20, &v))
      *err = usage_error(a, "--batch expects a positive integer, got '%s'",
                         a->val);
    o->batch = (int)v;
    break;
  case 3:
    o->strategy_name = a->val;
    o->fused = strcmp(a->val, "interpreter") != 0;
    if (o->fused && !strategy_from_name(a->val, &o->strategy))
      *err = usage_error(a,
                         "unknown strategy '%s' (expected interpreter, "
                         "unfused, ri, ri+rsb, ri+rsb+rsp or full)",
                         a->val);
    break;
  case 4:
    if (!parse_bytes(a->val, &o->buffer))
      *err = usage_error(a, "--buffer expects a size in bytes (e.g. 2MiB), "
                            "got '%s'",
                         a->val);
    break;
  case 5: o->spec = a->val; break;
  case 6:
    if (!parse_count(a->val, 1, 256, &v))
      *err = usage_error(a, "--threads expects 1 to 256, got '%s'", a->val);
    o->threads = (int)v;
    break;
  case 7: o->out = a->val; break;
  case 8: o->tokens_file = a->val; break;
  case 9:
    if (!parse_bytes(a->val, &o->max_memory) || !(o->max_memory >= 1))
      *err = usage_error(a, "--max-memory expects a size in bytes (e.g. "
                            "8GiB), got '%s'",
                         a->val);
    break;
  case 10: o->prompt = a->val; break;
  default: o->tokenizer_file = a->val; break;
  }
  return true;
}

/* The tokens: --tokens, or --prompt through the tokenizer. */
static int read_tokens(const Args *a, LmArgs *o) {
  int given = !!o->tokens_text + !!o->tokens_file + !!o->prompt;
  if (given != 1)
    return usage_error(a, "needs one of --tokens, --tokens-file and --prompt "
                          "(see %s --help)",
                       a->cmd);
  if (!o->prompt)
    return parse_tokens(a, o) ? 0 : EXIT_INPUT;
  if (o->batch > 1)
    return usage_error(a, "--prompt is one sequence: --batch %d does not "
                          "apply",
                       o->batch);
  if (!(o->tokenizer = open_tokenizer(o->model, o->tokenizer_file)))
    return EXIT_INPUT;
  Diag d = {0};
  int n;
  if (!tokenizer_encode(o->tokenizer, o->prompt, strlen(o->prompt),
                        &o->tokens, &n, &d))
    return usage_error(a, "--prompt: %s", d.msg);
  if (n == 0) {
    free(o->tokens);
    o->tokens = NULL;
    return usage_error(a, "--prompt: the text has no tokens");
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
  json_object_set_new(j, "strategy", json_string(o->strategy_name));
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

static void lm_args_init(LmArgs *o) {
  *o = (LmArgs){.strategy_name = "interpreter", .buffer = 2 << 20,
                .threads = default_threads()};
}

/* Loading DIR's model holds its checkpoint file whole and the weights as
 * fp32: refused before reading when that exceeds BUDGET. */
static int check_load_memory(const Args *a, const LmArgs *o, double budget) {
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
    status = check_memory(a, what, file + weights, budget, o->max_memory > 0);
  }
  buf_free(&cpath);
  buf_free(&wpath);
  return status;
}

/* The model, with --spec if given; exit status on failure. */
static int open_model(const Args *a, const LmArgs *o, Lm **m) {
  Diag d = {0};
  struct stat st;
  if (stat(o->model, &st) != 0 || !S_ISDIR(st.st_mode))
    return usage_error(a, "--model %s: not a model directory (config.json "
                          "and model.safetensors)",
                       o->model);
  int status = check_load_memory(a, o, memory_budget(o->max_memory));
  if (status)
    return status;
  Spec *spec = NULL;
  if (o->spec && !(spec = open_spec_doc(o->spec, &d))) {
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
      return usage_error(a,
                         "token %d is outside the vocabulary [0, %d) of %s",
                         o->tokens[i], vocab, o->model);
    }
  return 0;
}

static LmOpts lm_opts(const LmArgs *o, Pool *pool, bool last_only) {
  return (LmOpts){.fused = o->fused, .strategy = o->strategy,
                  .buffer_bytes = o->buffer, .pool = pool,
                  .last_only = last_only};
}

/* --out must be writable and must not be one of the files the run
 * reads (the checkpoint, its config, the spec, the tokens). */
static int check_lm_output(const Args *a, const LmArgs *o) {
  if (!o->out)
    return 0;
  Buf c = {0}, w = {0};
  buf_printf(&c, "%s/config.json", o->model);
  buf_printf(&w, "%s/model.safetensors", o->model);
  const char *inputs[] = {c.s, w.s, input_path("specs", o->spec),
                          o->tokens_file};
  int status = check_output(a, o->out, inputs, 4);
  buf_free(&c);
  buf_free(&w);
  return status;
}

/* Refuse a run (WHAT, for the message) whose weights, first pass
 * (LAST_ONLY: logits of the last token only; RECORD: the mixer outputs
 * too) and RESULTS bytes of results held beside them exceed the budget. */
static int check_run_memory(const Args *a, const LmArgs *o, Lm *m,
                            const char *what, bool last_only, bool record,
                            double results) {
  LmOpts lo = lm_opts(o, NULL, last_only);
  double pass;
  Diag d = {0};
  if (!lm_pass_bytes(m, o->nseq, o->len, &lo, record, &pass, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  return check_memory(a, what, lm_weight_bytes(m) + pass + results,
                      memory_budget(o->max_memory), o->max_memory > 0);
}

/* NaN weights make NaN logits, and argmax then picks token 0: say so. */
static void warn_nonfinite(const Args *a, const Array *logits) {
  int64_t bad = 0;
  for (int64_t i = 0; i < logits->n; i++)
    bad += !isfinite(logits->data[i]);
  if (bad)
    fprintf(stderr,
            "%s: warning: %lld of the %lld logits are not finite (NaN or "
            "infinite weights?)\n",
            a->cmd, (long long)bad, (long long)logits->n);
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

/* ---- run ---- */

static const char run_usage_head[] =
    "usage: mambalaya run --model DIR --tokens LIST --out FILE [--batch N]\n"
    "                     [--strategy S] [--buffer BYTES] [--spec SPEC]\n"
    "                     [--threads N] [--mixer-outputs]\n"
    "\n"
    "Run a Mamba language model over the tokens in one pass (every layer a\n"
    "cascade on the executor) and write FILE (safetensors, F32):\n"
    "  logits                   [batch, tokens, vocab] (batch 1 included)\n"
    "  layers.{i}.conv_state    [batch, channels, d_conv-1]: the last inputs\n"
    "                           of the convolution, oldest first (Mamba-2:\n"
    "                           channels x, B, C)\n"
    "  layers.{i}.ssm_state     Mamba-1 [batch, d_inner, d_state],\n"
    "                           Mamba-2 [batch, heads, head_dim, d_state]\n"
    "  layers.{i}.mixer_output  [batch, tokens, d_model] (--mixer-outputs)\n"
    "the layouts of tests/oracle/mamba_ref.py. A summary line (tokens, time,\n"
    "tokens/s) goes to stderr.\n"
    "\n";

int cmd_run(int argc, char **argv) {
  Args a = {.cmd = "mambalaya run", .argc = argc, .argv = argv, .i = 1};
  LmArgs o;
  lm_args_init(&o);
  bool mixer = false;
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2)
      return args_unknown(&a);
    if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(run_usage_head, stdout);
      fputs(common_usage, stdout);
      fputs("  --out FILE       the results (written atomically; refused if\n"
            "                   it is one of the inputs)\n"
            "  --mixer-outputs  also write each layer's mixer output\n"
            "\n"
            "Examples:\n"
            "  mambalaya run --model m130 --tokens 1,2,3 --strategy ri+rsb "
            "--out out.safetensors\n"
            "  mambalaya run --model m130 --prompt \"Mamba is\" --json\n",
            stdout);
      return 0;
    }
    if (args_is(&a, "--mixer-outputs"))
      mixer = true;
    else if (lm_opt(&a, &o, &err)) {
      if (err)
        return err;
    } else {
      return args_unknown(&a);
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  if (!o.model || (!o.out && !o.json))
    return usage_error(&a, "needs --model, --tokens (or --tokens-file or "
                           "--prompt) and --out or --json (see mambalaya run "
                           "--help)");
  if ((err = check_lm_output(&a, &o)))
    return err;
  Lm *m;
  if ((err = read_tokens(&a, &o)) || (err = open_model(&a, &o, &m))) {
    lm_args_free(&o);
    return err;
  }
  /* The results are written from a copy, which the file's image copies. */
  double logit_bytes = 4.0 * o.nseq * o.len * lm_config(m)->vocab;
  double mixed = mixer ? 4.0 * lm_config(m)->n_layer * o.nseq * o.len *
                             lm_config(m)->d_model
                       : 0;
  char what[160];
  snprintf(what, sizeof what, "running %d x %d tokens (%s, %d layer%s)",
           o.nseq, o.len, o.strategy_name, lm_config(m)->n_layer,
           lm_config(m)->n_layer == 1 ? "" : "s");
  if ((err = check_run_memory(&a, &o, m, what, false, mixer,
                              2 * (logit_bytes + mixed)))) {
    lm_free(m);
    lm_args_free(&o);
    return err;
  }
  Pool *pool = pool_new(o.threads);
  LmOpts lo = lm_opts(&o, pool, false);
  Tensors out = {0};
  Array *logits;
  Diag d = {0};
  double t0 = now_seconds();
  bool ok = lm_forward(m, o.tokens, o.nseq, o.len, &lo, &logits,
                       mixer ? &out : NULL, &d);
  double secs = now_seconds() - t0;
  int status = 0;
  if (!ok) {
    diag_print(&d, stderr);
    status = EXIT_RUN;
  } else {
    warn_nonfinite(&a, logits);
    Tensors arrays = {0};
    tensors_put(&arrays, "logits", logits, true);
    for (int i = 0; i < out.n; i++)
      tensors_put(&arrays, out.names[i], out.arrays[i], false);
    Buf tok = {0};
    tokens_meta(&tok, o.tokens, o.nseq, o.len);
    if (o.out)
      status = save_results(m, o.out, &arrays, tok.s, o.strategy_name);
    buf_free(&tok);
    tensors_free(&arrays);
    double n = (double)o.nseq * o.len;
    if (!status && o.json) {
      json_t *j = json_object();
      json_object_set_new(j, "command", json_string("run"));
      json_common(j, &o, m);
      json_object_set_new(j, "tokens", json_ids(o.tokens, o.nseq * o.len));
      json_object_set_new(j, "seconds", json_real(secs));
      json_object_set_new(j, "tokens_per_s",
                          json_real(n / (secs > 0 ? secs : 1e-9)));
      print_json(j);
      json_decref(j);
    }
    if (!status)
      fprintf(stderr,
              "mambalaya run: %d x %d tokens, %d layer%s, %s: %.4f s, %.1f "
              "tokens/s\n",
              o.nseq, o.len, lm_config(m)->n_layer,
              lm_config(m)->n_layer == 1 ? "" : "s", o.strategy_name, secs,
              n / (secs > 0 ? secs : 1e-9));
  }
  tensors_free(&out);
  pool_free(pool);
  lm_free(m);
  lm_args_free(&o);
  return status;
}

/* ---- generate ---- */

static const char gen_usage_head[] =
    "usage: mambalaya generate --model DIR --tokens LIST --max-new N\n"
    "                          [--batch N] [--strategy S] [--buffer BYTES]\n"
    "                          [--spec SPEC] [--threads N] [--out FILE]\n"
    "\n"
    "Greedy decoding: prefill the prompt in one pass, then one pass of one\n"
    "token per new token, each continuing from the decode state the last\n"
    "pass left. With --prompt, prints the prompt and then each new token's\n"
    "text as it is made; with --tokens, the N generated token ids of each\n"
    "sequence, one line per sequence, comma-separated. With --out, FILE\n"
    "gets the logits of\n"
    "every position that ran, [batch, prompt + N - 1, vocab] (the prompt's\n"
    "from the prefill, then one per step), and the final decode state as\n"
    "for mambalaya run. A summary line goes to stderr.\n"
    "\n";

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

int cmd_generate(int argc, char **argv) {
  Args a = {.cmd = "mambalaya generate", .argc = argc, .argv = argv, .i = 1};
  LmArgs o;
  lm_args_init(&o);
  long max_new = 0;
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2)
      return args_unknown(&a);
    if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(gen_usage_head, stdout);
      fputs(common_usage, stdout);
      fputs("  --max-new N      how many tokens to generate (1 to 1048576)\n"
            "  --out FILE       also write every position's logits and the\n"
            "                   final state (refused if it is an input)\n"
            "\n"
            "Examples:\n"
            "  mambalaya generate --model m130 --prompt \"Mamba is\" "
            "--max-new 32\n"
            "  mambalaya generate --model m130 --tokens \"1,2;3,4\" "
            "--max-new 8 --strategy full\n",
            stdout);
      return 0;
    }
    if (args_is(&a, "--max-new")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      if (!parse_count(a.val, 1, 1 << 20, &max_new))
        return usage_error(&a, "--max-new expects an integer from 1 to %d, "
                               "got '%s'",
                           1 << 20, a.val);
    } else if (lm_opt(&a, &o, &err)) {
      if (err)
        return err;
    } else {
      return args_unknown(&a);
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  if (!o.model || !max_new)
    return usage_error(&a, "needs --model, --tokens (or --tokens-file or "
                           "--prompt) and --max-new (see mambalaya generate "
                           "--help)");
  if ((err = check_lm_output(&a, &o)))
    return err;
  Gen g = {.o = &o, .max_new = (int)max_new};
  if ((err = read_tokens(&a, &o)) || (err = open_model(&a, &o, &g.m))) {
    lm_args_free(&o);
    return err;
  }
  g.stream = o.tokenizer && !o.json;
  if (g.stream) { /* the prompt, then the new text as it comes */
    fputs(o.prompt, stdout);
    fflush(stdout);
  }
  int V = lm_config(g.m)->vocab;
  /* With --out, every position's logits, then their copy and image. */
  double all = o.out ? 4.0 * o.nseq * ((double)o.len + max_new - 1) * V : 0;
  char what[200];
  snprintf(what, sizeof what,
           "generating %ld tokens after %d x %d (%s%s)", max_new, o.nseq,
           o.len, o.strategy_name,
           o.out ? ", every position's logits kept for --out" : "");
  if ((err = check_run_memory(&a, &o, g.m, what, !o.out, false,
                              3 * all + 4.0 * o.nseq * max_new))) {
    lm_free(g.m);
    lm_args_free(&o);
    return err;
  }
  g.pool = pool_new(o.threads);
  g.generated = xcalloc((size_t)o.nseq * (size_t)max_new, sizeof(int));
  if (o.out)
    g.all = array_new(3, (int64_t[]){o.nseq, o.len + max_new - 1, V});
  Diag d = {0};
  int status = 0;
  if (!generate(&g, &d)) {
    diag_print(&d, stderr);
    status = EXIT_RUN;
  }
  if (!status && o.out) {
    /* Every token that ran: the prompt and all generated but the last. */
    int total = o.len + (int)max_new - 1;
    int *ran = xmalloc((size_t)o.nseq * (size_t)total * sizeof *ran);
    for (int s = 0; s < o.nseq; s++)
      for (int i = 0; i < total; i++)
        ran[s * total + i] = i < o.len ? o.tokens[s * o.len + i]
                                       : g.generated[s * max_new + i - o.len];
    Buf tok = {0};
    tokens_meta(&tok, ran, o.nseq, total);
    Tensors arrays = {0};
    tensors_put(&arrays, "logits", g.all, false);
    status = save_results(g.m, o.out, &arrays, tok.s, o.strategy_name);
    tensors_free(&arrays);
    buf_free(&tok);
    free(ran);
  }
  if (!status && g.nonfinite)
    fprintf(stderr,
            "%s: warning: %lld logits were not finite (NaN or infinite "
            "weights?): the tokens picked from them are meaningless\n",
            a.cmd, (long long)g.nonfinite);
  double steps = (double)o.nseq * (double)(max_new - 1);
  double prefill_rate = o.nseq * o.len / (g.prefill_s > 0 ? g.prefill_s : 1e-9);
  double decode_rate =
      max_new > 1 ? steps / (g.decode_s > 0 ? g.decode_s : 1e-9) : 0.0;
  if (g.stream)
    printf("\n");
  if (!status && o.json) {
    json_t *j = json_object();
    json_object_set_new(j, "command", json_string("generate"));
    json_common(j, &o, g.m);
    json_object_set_new(j, "tokens", json_ids(o.tokens, o.nseq * o.len));
    json_object_set_new(j, "max_new", json_integer(max_new));
    json_t *gen = json_array(), *text = json_array();
    for (int s = 0; s < o.nseq; s++) {
      json_array_append_new(gen, json_ids(g.generated + s * max_new,
                                          (int)max_new));
      if (o.tokenizer)
        json_array_append_new(text, json_text(o.tokenizer,
                                              g.generated + s * max_new,
                                              (int)max_new));
    }
    json_object_set_new(j, "generated", gen);
    if (o.tokenizer)
      json_object_set_new(j, "text", text);
    else
      json_decref(text);
    json_object_set_new(j, "prefill_seconds", json_real(g.prefill_s));
    json_object_set_new(j, "prefill_tokens_per_s", json_real(prefill_rate));
    json_object_set_new(j, "decode_seconds", json_real(g.decode_s));
    json_object_set_new(j, "decode_tokens_per_s", json_real(decode_rate));
    print_json(j);
    json_decref(j);
  } else if (!status && !g.stream) {
    Buf b = {0};
    tokens_meta(&b, g.generated, o.nseq, (int)max_new);
    for (char *p = b.s; *p; p++)
      if (*p == ';')
        *p = '\n';
    printf("%s\n", b.s);
    buf_free(&b);
  }
  if (!status) {
    fprintf(stderr,
            "mambalaya generate: prompt %d x %d tokens in %.4f s (%.1f "
            "tokens/s); %ld new tokens per sequence, decode %.1f tokens/s "
            "(%s)\n",
            o.nseq, o.len, g.prefill_s, prefill_rate, max_new, decode_rate,
            o.strategy_name);
  }
  array_free(g.all);
  free(g.generated);
  pool_free(g.pool);
  lm_free(g.m);
  lm_args_free(&o);
  return status;
}

/* ---- init-weights ---- */

static const char init_usage[] =
    "usage: mambalaya init-weights --model PRESET|DIR --out DIR [--seed N]\n"
    "                              [--set NAME=V]... [--dtype F32|F16|BF16]\n"
    "\n"
    "Write DIR/config.json (state-spaces form) and DIR/model.safetensors\n"
    "(Hugging Face key names) with random weights that have the statistics\n"
    "of a freshly initialized Mamba: embedding and in_proj N(0, 0.02),\n"
    "out_proj N(0, 0.02/sqrt(2 n_layer)), conv1d U(+-1/sqrt(d_conv)),\n"
    "x_proj U(+-1/sqrt(d_inner)), dt_proj.weight U(+-dt_rank^-0.5), dt bias\n"
    "softplus^-1 of a log-uniform value in [1e-3, 0.1], A_log = log(1..N)\n"
    "(Mamba-1) or log(U(1, 16)) per head (Mamba-2), D = 1, norm weights 1.\n"
    "The same seed gives the same weights. DIR is created if needed. The\n"
    "two files land together (an existing model there is replaced whole);\n"
    "a failed or interrupted run leaves DIR as it was. A run that would\n"
    "need more memory than available is refused (exit 2).\n"
    "\n"
    "  --model M      a preset (mamba-130m, ..., mamba2-2.7b) or a model\n"
    "                 directory whose config.json gives the sizes\n"
    "  --set NAME=V   override a size: d_model, n_layer, vocab, d_state,\n"
    "                 d_conv, expand, dt_rank, head_dim, n_heads (derived\n"
    "                 sizes follow: --set d_model=64 --set n_layer=2\n"
    "                 --set vocab=128 makes a tiny model)\n"
    "  --seed N       the random seed (default 0)\n"
    "  --dtype T      F32 (default), F16 or BF16\n"
    "  --out DIR      where to write (not the --model directory itself)\n"
    "  --max-memory B refuse a model that needs more than B bytes to write\n"
    "                 (default: the memory available)\n"
    "\n"
    "Example: mambalaya init-weights --model mamba-130m --set n_layer=2 "
    "--out m\n";

/* init-weights holds every tensor twice (the writer's copy and the
 * file's image), one of them as fp32 while it is made, and the key list. */
static int check_init_memory(const Args *a, const ModelConfig *cfg, DType dt,
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
  return check_memory(a, what, need, memory_budget(max_memory),
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

int cmd_init_weights(int argc, char **argv) {
  Args a = {.cmd = "mambalaya init-weights", .argc = argc, .argv = argv,
            .i = 1};
  SpecOpts so = {0};
  const char *out = NULL;
  long long seed = 0;
  double max_memory = 0;
  DType dt = DT_F32;
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2)
      return args_unknown(&a);
    if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(init_usage, stdout);
      return 0;
    }
    if (args_is(&a, "--out") || args_is(&a, "--seed") ||
        args_is(&a, "--dtype") || args_is(&a, "--max-memory")) {
      bool is_out = args_is(&a, "--out"), is_seed = args_is(&a, "--seed");
      bool is_mem = args_is(&a, "--max-memory");
      if (!args_value(&a))
        return EXIT_INPUT;
      if (is_out) {
        out = a.val;
      } else if (is_seed) {
        char *end;
        errno = 0;
        seed = isdigit((unsigned char)a.val[0]) ? strtoll(a.val, &end, 10)
                                                : -1;
        if (seed < 0 || errno || *end)
          return usage_error(&a, "--seed expects a non-negative integer "
                                 "(decimal digits), got '%s'",
                             a.val);
      } else if (is_mem) {
        if (!parse_bytes(a.val, &max_memory) || !(max_memory >= 1))
          return usage_error(&a, "--max-memory expects a size in bytes "
                                 "(e.g. 8GiB), got '%s'",
                             a.val);
      } else if (strcmp(a.val, "F32") == 0) {
        dt = DT_F32;
      } else if (strcmp(a.val, "F16") == 0) {
        dt = DT_F16;
      } else if (strcmp(a.val, "BF16") == 0) {
        dt = DT_BF16;
      } else {
        return usage_error(&a, "--dtype expects F32, F16 or BF16, got '%s'",
                           a.val);
      }
    } else if (!args_is(&a, "--json") && spec_opt(&a, &so, &err)) {
      if (err)
        return err;
    } else {
      return args_unknown(&a);
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  if (!so.model || !out)
    return usage_error(&a, "needs --model and --out (see mambalaya "
                           "init-weights --help)");
  ModelConfig cfg;
  Diag d = {0};
  if (!lm_config_resolve(so.model, so.sets, so.nsets, &cfg, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  if (!output_dir_check(out, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  if ((err = check_init_memory(&a, &cfg, dt, max_memory)))
    return err;
  Buf input = {0};
  if (!preset_find(so.model))
    buf_printf(&input, "%s/config.json", so.model);
  err = write_model(&cfg, (uint64_t)seed, dt, out, input.s);
  buf_free(&input);
  return err;
}
