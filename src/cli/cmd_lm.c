/* cmd_lm.c — whole language models: `mambalaya init-weights`, `run` and
 * `generate`.
 *
 * Results go to files (--out) and, for generate, the generated tokens to
 * stdout (their text as they come with --prompt, else their ids); the
 * one-line timing summary of run and generate goes to stderr, so that
 * stdout carries only results (with --json: one JSON object). */
#include "cli.h"

#include "../lm/lm.h"

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
  const char *model, *spec, *tokens_text, *out;
  const char *prompt, *tokenizer_file; /* --prompt, --tokenizer */
  Tokenizer *tokenizer;                /* with --prompt */
  bool json;
  int batch;   /* --batch; 0: one sequence, or the rows given */
  bool fused;
  Strategy strategy;
  const char *strategy_name;
  double buffer;
  int threads;
  /* The token ids, [nseq, len] row-major. */
  int *tokens;
  int nseq, len;
} LmArgs;

static const char common_usage[] =
    "  --model DIR      a model directory: config.json and model.safetensors\n"
    "                   (Hugging Face key names; see mambalaya init-weights)\n"
    "  --tokens LIST    token ids: 1,2,3 (one sequence, or split into\n"
    "                   --batch equal rows) or 1,2;3,4 (one row per ';')\n"
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
    "  --json           print one JSON object on stdout: the tokens, times,\n"
    "                   bytes of weights, peak bytes of activations and the\n"
    "                   peak resident memory\n";

static int default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

/* "2MiB", "512k", "1e6": bytes. */
static bool parse_bytes(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !(v >= 0) || !isfinite(v))
    return false;
  static const struct {
    const char *suffix;
    double scale;
  } units[] = {{"", 1},         {"B", 1},        {"k", 1e3},
               {"K", 1024},     {"KiB", 1024},   {"M", 1e6},
               {"MiB", 1 << 20}, {"G", 1e9},     {"GiB", 1 << 30}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].suffix) == 0) {
      *out = v * units[i].scale;
      return true;
    }
  return false;
}

/* --tokens: rows separated by ';', ids by ','. */
static bool parse_tokens(const Args *a, LmArgs *o) {
  const char *s = o->tokens_text;
  int n = 0, cap = 0, rows = 1, row_len = 0, first_len = -1;
  int *ids = NULL;
  const char *p = s;
  for (;;) {
    while (*p == ' ')
      p++;
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || v < 0 || v > INT_MAX) {
      usage_error(a, "--tokens: expected a token id (a non-negative "
                     "integer) at '%s'",
                  *p ? p : "the end");
      free(ids);
      return false;
    }
    VEC_PUSH(ids, n, cap, (int)v);
    row_len++;
    p = end;
    while (*p == ' ')
      p++;
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p == ';' || !*p) {
      if (first_len >= 0 && row_len != first_len) {
        usage_error(a, "--tokens: row %d has %d tokens, the first has %d",
                    rows, row_len, first_len);
        free(ids);
        return false;
      }
      first_len = row_len;
      row_len = 0;
      if (!*p)
        break;
      p++;
      if (!*p)
        break; /* a trailing ';' */
      rows++;
      continue;
    }
    usage_error(a, "--tokens: unexpected '%c' (ids are separated by ',' "
                   "and rows by ';')",
                *p);
    free(ids);
    return false;
  }
  if (rows > 1 && o->batch && o->batch != rows) {
    usage_error(a, "--batch %d, but --tokens has %d rows", o->batch, rows);
    free(ids);
    return false;
  }
  int batch = rows > 1 ? rows : o->batch ? o->batch : 1;
  if (n % batch) {
    usage_error(a, "--tokens: %d tokens do not split into %d sequences", n,
                batch);
    free(ids);
    return false;
  }
  o->tokens = ids;
  o->nseq = batch;
  o->len = n / batch;
  return true;
}

/* One of the options run and generate share; *err set on a bad value. */
static bool lm_opt(Args *a, LmArgs *o, int *err) {
  *err = 0;
  const char *names[] = {"--model",  "--tokens",  "--batch",
                         "--strategy", "--buffer", "--spec",
                         "--threads", "--out",    "--prompt",
                         "--tokenizer"};
  enum { NNAMES = sizeof names / sizeof names[0] };
  if (args_is(a, "--json")) {
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
  long v;
  switch (k) {
  case 0: o->model = a->val; break;
  case 1: o->tokens_text = a->val; break;
  case 2:
    if (!parse_int(a->val, 1, 1 << 20, &v))
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
    if (!parse_int(a->val, 1, 256, &v))
      *err = usage_error(a, "--threads expects 1 to 256, got '%s'", a->val);
    o->threads = (int)v;
    break;
  case 7: o->out = a->val; break;
  case 8: o->prompt = a->val; break;
  default: o->tokenizer_file = a->val; break;
  }
  return true;
}

/* The tokens: --tokens, or --prompt through the tokenizer. */
static int read_tokens(const Args *a, LmArgs *o) {
  if (!o->tokens_text == !o->prompt)
    return usage_error(a, "needs --tokens or --prompt (one of them; see %s "
                          "--help)",
                       a->cmd);
  if (o->tokens_text)
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

static void lm_args_free(LmArgs *o) {
  free(o->tokens);
  tokenizer_free(o->tokenizer);
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

/* The model, with --spec if given; exit status on failure. */
static int open_model(const Args *a, const LmArgs *o, Lm **m) {
  Diag d = {0};
  Cascade *spec = NULL;
  if (o->spec && !(spec = open_spec(o->spec, &d))) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  struct stat st;
  if (stat(o->model, &st) != 0 || !S_ISDIR(st.st_mode)) {
    cascade_free(spec);
    return usage_error(a, "--model %s: not a model directory (config.json "
                          "and model.safetensors)",
                       o->model);
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
  while ((k = args_next(&a))) {
    if (k == 2)
      return args_unknown(&a);
    if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(run_usage_head, stdout);
      fputs(common_usage, stdout);
      fputs("  --out FILE       the results (written atomically)\n"
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
  if (!o.model || (!o.out && !o.json))
    return usage_error(&a, "needs --model, --tokens (or --prompt) and --out "
                           "or --json (see mambalaya run --help)");
  Lm *m;
  if ((err = read_tokens(&a, &o)) || (err = open_model(&a, &o, &m))) {
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
} Gen;

/* The next token of each sequence from LOGITS ([nseq, rows, V]: its last
 * row), into generated[., step]. */
static void pick(Gen *g, const Array *logits, int step) {
  int V = lm_config(g->m)->vocab;
  int64_t rows = logits->n / ((int64_t)g->o->nseq * V);
  for (int s = 0; s < g->o->nseq; s++)
    g->generated[s * g->max_new + step] =
        argmax(logits->data + (s * rows + rows - 1) * V, V);
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
  while ((k = args_next(&a))) {
    if (k == 2)
      return args_unknown(&a);
    if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(gen_usage_head, stdout);
      fputs(common_usage, stdout);
      fputs("  --max-new N      how many tokens to generate (at least 1)\n"
            "  --out FILE       also write every position's logits and the\n"
            "                   final state\n"
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
      if (!parse_int(a.val, 1, 1 << 20, &max_new))
        return usage_error(&a, "--max-new expects a positive integer, got "
                               "'%s'",
                           a.val);
    } else if (lm_opt(&a, &o, &err)) {
      if (err)
        return err;
    } else {
      return args_unknown(&a);
    }
  }
  if (!o.model || !max_new)
    return usage_error(&a, "needs --model, --tokens (or --prompt) and "
                           "--max-new (see mambalaya generate --help)");
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
    "The same seed gives the same weights. DIR is created if needed; the\n"
    "files are written atomically (an existing model there is replaced).\n"
    "\n"
    "  --model M      a preset (mamba-130m, ..., mamba2-2.7b) or a model\n"
    "                 directory whose config.json gives the sizes\n"
    "  --set NAME=V   override a size: d_model, n_layer, vocab, d_state,\n"
    "                 d_conv, expand, dt_rank, head_dim, n_heads (derived\n"
    "                 sizes follow: --set d_model=64 --set n_layer=2\n"
    "                 --set vocab=128 makes a tiny model)\n"
    "  --seed N       the random seed (default 0)\n"
    "  --dtype T      F32 (default), F16 or BF16\n"
    "  --out DIR      where to write\n";

static bool make_dir(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0)
    return S_ISDIR(st.st_mode) || (errno = ENOTDIR, false);
  return mkdir(path, 0777) == 0;
}

static int write_model(const ModelConfig *cfg, uint64_t seed, DType dt,
                       const char *dir) {
  Diag d = {0};
  double params;
  if (!lm_write_random(cfg, seed, dt, dir, &params, &d)) {
    diag_print(&d, stderr);
    return EXIT_RUN;
  }
  printf("wrote %s/config.json and %s/model.safetensors: Mamba-%d, d_model "
         "%d, %d layers, vocab %d, %.0f parameters (%s)\n",
         dir, dir, cfg->version, cfg->d_model, cfg->n_layer, cfg->vocab,
         params, dtype_name(dt));
  return 0;
}

int cmd_init_weights(int argc, char **argv) {
  Args a = {.cmd = "mambalaya init-weights", .argc = argc, .argv = argv,
            .i = 1};
  SpecOpts so = {0};
  const char *out = NULL;
  long long seed = 0;
  DType dt = DT_F32;
  int k, err;
  while ((k = args_next(&a))) {
    if (k == 2)
      return args_unknown(&a);
    if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(init_usage, stdout);
      return 0;
    }
    if (args_is(&a, "--out") || args_is(&a, "--seed") ||
        args_is(&a, "--dtype")) {
      bool is_out = args_is(&a, "--out"), is_seed = args_is(&a, "--seed");
      if (!args_value(&a))
        return EXIT_INPUT;
      if (is_out) {
        out = a.val;
      } else if (is_seed) {
        char *end;
        errno = 0;
        seed = strtoll(a.val, &end, 10);
        if (errno || end == a.val || *end || seed < 0)
          return usage_error(&a, "--seed expects a non-negative integer, "
                                 "got '%s'",
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
  if (!so.model || !out)
    return usage_error(&a, "needs --model and --out (see mambalaya "
                           "init-weights --help)");
  ModelConfig cfg;
  Diag d = {0};
  if (!lm_config_resolve(so.model, so.sets, so.nsets, &cfg, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  if (!make_dir(out)) {
    fprintf(stderr, "mambalaya init-weights: cannot create %s: %s\n", out,
            strerror(errno));
    return EXIT_RUN;
  }
  return write_model(&cfg, (uint64_t)seed, dt, out);
}
