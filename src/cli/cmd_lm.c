/* cmd_lm.c — what `mambalaya run` and `generate` share: the model and
 * its tokens, their options, memory checks and results.
 *
 * Results go to files (--out) and, for generate, the generated tokens to
 * stdout (their text as they come with --prompt, else their ids); the
 * one-line timing summary of run and generate goes to stderr, so that
 * stdout carries only results (with --json: one JSON object). */
#include "lm_cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- options shared by run and generate ---- */

#define LO(field) offsetof(LmArgs, field)
static const char *ssd_name(int v) { return ssd_mode_name((SsdMode)v); }
static const OptChoices ssd_choices = {"SSD form", ssd_name, SSD_COUNT, NULL,
                                       false};
static const Opt lm_opts[] = {
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
     .help = "the tokenizer.json for --prompt (default: MODEL/tokenizer.json)"},
    {"--batch", OPT_INT, LO(batch), "N",
     .help = "split the list into N sequences of equal length", .lo = 1,
     .hi = 1 << 20},
    {"--spec", OPT_STRING, LO(spec), "SPEC",
     .help = "the layer cascade (default: mamba1 or mamba2, from "
             "config.json); its weights: section maps the keys"},
    MAX_MEMORY_OPT(LmArgs, max_memory,
                   "a run whose weights, activations and results"),
    {"--json", OPT_FLAG, LO(json), NULL,
     .help = "print one JSON object on stdout: the tokens, times, bytes of "
             "weights, peak bytes of activations and the peak resident memory"},
    {"--ssd", OPT_ENUM, LO(ssd), "MODE",
     .help = "Mamba-2 prefill under the interpreter: scan (the sequential "
             "recurrence; the default) or chunked (the chunked SSD form: "
             "matrix products over chunks of --ssd-chunk tokens, no faster "
             "on the machines measured)",
     .choices = &ssd_choices},
    {"--ssd-chunk", OPT_INT, LO(ssd_chunk), "L",
     .help = "tokens per chunk of the chunked SSD form (default 128); the "
             "tokens after the last whole chunk run through the scan",
     .lo = 1, .hi = 1 << 16},
};
/* The model's files, --spec and --tokens-file join the run's inputs. */
static void lm_opts_inputs(void *base, InputSet *in) {
  ((LmArgs *)base)->inputs = in;
}

const OptTable lm_options = {lm_opts, (int)(sizeof lm_opts / sizeof lm_opts[0]),
                             NULL, lm_opts_inputs};

void lm_args_init(LmArgs *o) {
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
void lm_json_common(json_t *j, const LmArgs *o, const Lm *m) {
  json_object_set_new(j, "model", json_string(o->model));
  json_object_set_new(j, "strategy", json_string(o->executor));
  json_object_set_new(j, "batch", json_integer(o->nseq));
  json_object_set_new(j, "prompt_tokens", json_integer(o->len));
  json_object_set_new(j, "layers", json_integer(lm_config(m)->n_layer));
  json_object_set_new(j, "weight_bytes", json_real(lm_weight_bytes(m)));
  json_object_set_new(j, "peak_activation_bytes",
                      json_real(lm_peak_bytes(m)));
  json_object_set_new(j, "peak_rss_bytes", json_real(peak_rss()));
}

json_t *lm_json_ids(const int *ids, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(a, json_integer(ids[i]));
  return a;
}

/* The text of IDS (N of them) as a JSON string; null if it is not UTF-8
 * (a character cut by the end of the sequence). */
json_t *lm_json_text(const Tokenizer *t, const int *ids, int n) {
  Buf b = {0};
  buf_printf(&b, "%s", "");
  for (int i = 0; i < n; i++)
    token_text(t, ids[i], &b);
  json_t *j = json_stringn(b.s, b.len);
  buf_free(&b);
  return j ? j : json_null();
}

void lm_print_json(json_t *j) {
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
      return usage_error(cmd,
                         "token %d is outside the vocabulary [0, %d) of %s",
                         o->tokens[i], vocab, o->model);
    }
  return 0;
}

/* The rule for --plan and --strategy best (executor_plan): CTX is the
 * run's ExecutorOpts. */
static Plan *lm_plan_rule(void *ctx, const Cascade *c, const Shape *s,
                          const Pair *pairs, Diag *d) {
  Plan *p;
  return executor_plan(ctx, STITCH_GREEDY, OBJ_GROUPS, c, s, pairs, &p, d)
             ? p
             : NULL;
}

LmOpts lm_pass_opts(const LmArgs *o, Pool *pool, bool last_only) {
  bool rule = o->ex.plan_file || o->ex.strategy == EXEC_BEST;
  return (LmOpts){.fused = o->ex.strategy >= 0 || o->ex.plan_file,
                  .strategy = o->ex.strategy < 0 || rule
                                  ? ST_FULL
                                  : (Strategy)o->ex.strategy,
                  .plan = rule ? lm_plan_rule : NULL,
                  .plan_ctx = rule ? (void *)&o->ex : NULL,
                  .buffer_bytes = o->ex.buffer, .pool = pool,
                  .last_only = last_only, .ssd = (SsdMode)o->ssd,
                  .ssd_chunk = o->ssd_chunk};
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
  for (int i = 0; i < 4; i++)
    inputset_add(o->inputs, inputs[i]);
  int status = check_output(cmd, o->out, inputs, 4);
  buf_free(&c);
  buf_free(&w);
  return status;
}

/* Refuse a run (WHAT, for the message) whose weights, first pass
 * (LAST_ONLY: logits of the last token only; RECORD: the mixer outputs
 * too) and RESULTS bytes of results held beside them exceed the budget. */
int check_run_memory(const char *cmd, const LmArgs *o, Lm *m,
                            const char *what, bool last_only, bool record,
                            double results) {
  LmOpts lo = lm_pass_opts(o, NULL, last_only);
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
void warn_nonfinite(const char *cmd, const Array *logits) {
  int64_t bad = 0;
  for (int64_t i = 0; i < logits->n; i++)
    bad += !isfinite(logits->data[i]);
  if (bad)
    fprintf(stderr,
            "%s: warning: %lld of the %lld logits are not finite (NaN or "
            "infinite weights?)\n",
            cmd, (long long)bad, (long long)logits->n);
}

void lm_args_free(LmArgs *o) {
  free(o->tokens);
  free(o->file_text);
  tokenizer_free(o->tokenizer);
}

void tokens_meta(Buf *b, const int *tokens, int nseq, int len) {
  for (int s = 0; s < nseq; s++)
    for (int i = 0; i < len; i++)
      buf_printf(b, "%d%s", tokens[s * len + i],
                 i + 1 < len ? "," : s + 1 < nseq ? ";" : "");
}

void print_token_rows(const int *tokens, int nseq, int len) {
  Buf b = {0};
  tokens_meta(&b, tokens, nseq, len);
  for (char *p = b.s; *p; p++)
    if (*p == ';')
      *p = '\n';
  printf("%s\n", b.s);
  buf_free(&b);
}

/* Write ARRAYS (logits first) and the model's decode state to PATH. */
int save_results(const Lm *m, const char *path, const Tensors *arrays,
                 const char *tokens, const char *strategy,
                 const InputSet *in) {
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
  return write_safetensors("mambalaya", path, w, in);
}

/* The tokens and the model, once --out is known to be writable: 0, or
 * an exit status with O freed. */
int lm_start(const char *cmd, LmArgs *o, Lm **m) {
  executor_name(&o->ex, o->executor, sizeof o->executor);
  int err = check_lm_output(cmd, o);
  if (!err && !(err = read_tokens(cmd, o)))
    err = open_model(cmd, o, m);
  if (err)
    lm_args_free(o);
  return err;
}

int lm_finish(Lm *m, LmArgs *o, int status) {
  lm_free(m);
  lm_args_free(o);
  return status;
}

