/* cmd_netrun.c — a whole model on real tensors: `init-weights --config`
 * writes random weights for any model a config describes, `generate
 * --config` runs it greedily (src/net/forward.c; docs/models.md). */
#include "lm_cli.h"

#include <stdlib.h>
#include <string.h>

/* DIR/config.json for a folder, or FILE itself. */
static void config_path(const char *config, char *buf, size_t n) {
  size_t k = strlen(config);
  if (k >= 5 && !strcmp(config + k - 5, ".json"))
    snprintf(buf, n, "%s", config);
  else
    snprintf(buf, n, "%s/config.json", config);
}

int net_init_weights(const char *cmd, const char *config, uint64_t seed,
                     const char *dir) {
  (void)cmd;
  Net *net = xmalloc(sizeof *net);
  Diag d = {0};
  char path[600];
  config_path(config, path, sizeof path);
  size_t len = 0;
  char *text = NULL;
  int status = 0;
  if (!net_config_load(config, net, &d) || !output_dir_check(dir, &d) ||
      !(text = read_input(path, INPUT_TEXT_MAX, &len, &d)))
    status = input_failed(&d);
  double params = 0;
  StWriter *w = status ? NULL : net_random_weights(net, seed, &params, &d);
  if (!status && !w)
    status = input_failed(&d);
  if (w) {
    size_t n;
    unsigned char *image = st_writer_image(w, &n);
    /* Both files land together, or neither; the config read stays. */
    OutSet *set = outset_new(dir);
    outset_protect(set, path);
    bool refused = false;
    bool ok = outset_put(set, "model.safetensors", image, n, &d) &&
              outset_put(set, "config.json", text, len, &d) &&
              outset_commit(set, &refused, &d);
    outset_free(set);
    free(image);
    if (!ok) {
      diag_print(&d, stderr);
      status = refused ? EXIT_INPUT : EXIT_RUN;
    } else {
      printf("wrote %s/config.json and %s/model.safetensors: %s, %d "
             "layers, %.0f parameters (F32)\n",
             dir, dir, net->model_type, net->nlayers, params);
    }
  }
  st_writer_free(w);
  free(text);
  free(net);
  return status;
}

static int argmax(const float *v, int64_t n) {
  int best = 0;
  for (int64_t i = 1; i < n; i++)
    if (v[i] > v[best])
      best = (int)i;
  return best;
}

/* Greedy decoding of a whole model. */
typedef struct NetGen {
  NetModel *m;
  int nseq, len, max_new;
  int *generated; /* [nseq, max_new] */
  Array *all;     /* [nseq, len + max_new - 1, V] */
  int64_t vocab;
} NetGen;

/* LOGITS' rows ([nseq, rows, V]) into ALL from column AT; each
 * sequence's next token from its last row into generated[., step]. */
static void take(NetGen *g, const Array *logits, int at, int step) {
  int64_t rows = logits->shape[1], V = g->vocab, total = g->all->shape[1];
  for (int s = 0; s < g->nseq; s++) {
    const float *src = logits->data + (int64_t)s * rows * V;
    memcpy(g->all->data + ((int64_t)s * total + at) * V, src,
           sizeof(float) * (size_t)(rows * V));
    g->generated[s * g->max_new + step] = argmax(src + (rows - 1) * V, V);
  }
}

static bool net_generate_run(NetGen *g, const int *tokens, Diag *d) {
  Array *logits;
  if (!net_model_forward(g->m, tokens, g->nseq, g->len, &logits, d))
    return false;
  g->vocab = logits->shape[2];
  g->all = array_new(3, (int64_t[]){g->nseq, g->len + g->max_new - 1,
                                    g->vocab});
  take(g, logits, 0, 0);
  array_free(logits);
  int *step = xcalloc((size_t)g->nseq, sizeof *step);
  bool ok = true;
  for (int t = 1; ok && t < g->max_new; t++) {
    for (int s = 0; s < g->nseq; s++)
      step[s] = g->generated[s * g->max_new + t - 1];
    ok = net_model_forward(g->m, step, g->nseq, 1, &logits, d);
    if (ok) {
      take(g, logits, g->len + t - 1, t);
      array_free(logits);
    }
  }
  free(step);
  return ok;
}

/* The tokens' checks: every block runs, every id is in the vocabulary;
 * 0 or an exit status. */
static int check_runnable(const char *cmd, const char *dir, const Net *net,
                          const TokenList *tl) {
  for (int b = 0; b < net->nblocks; b++)
    if (net->blocks[b].not_run[0])
      return usage_error(cmd, "block %s of %s cannot run yet: %s (it is "
                              "priced)", net->blocks[b].label, dir,
                         net->blocks[b].not_run);
  long vocab = net_vocab(net);
  for (int i = 0; i < tl->nseq * tl->len; i++)
    if (tl->ids[i] >= vocab)
      return usage_error(cmd, "token %d is outside the vocabulary (0 to "
                              "%ld)", tl->ids[i], vocab - 1);
  return 0;
}

/* --out: every position's logits, with the prompt's tokens; an output
 * of a run that read IN. */
static int save_logits(const char *cmd, const char *out, const NetGen *g,
                       const TokenList *tl, const InputSet *in) {
  StWriter *w = st_writer_new();
  st_writer_add(w, "logits", g->all, DT_F32);
  Buf meta = {0};
  tokens_meta(&meta, tl->ids, tl->nseq, tl->len);
  st_writer_meta(w, "tokens", meta.s);
  buf_free(&meta);
  return write_safetensors(cmd, out, w, in);
}

int net_generate(const char *cmd, const char *dir, const char *tokens_text,
                 int batch, int max_new, const char *out, InputSet *in) {
  TokenList tl = {0};
  if (!tokens_text)
    return usage_error(cmd, "--config runs on --tokens LIST");
  if (!parse_token_list(cmd, tokens_text, batch, &tl))
    return EXIT_INPUT;
  Net *net = xmalloc(sizeof *net);
  Diag d = {0};
  char wpath[600];
  snprintf(wpath, sizeof wpath, "%s/model.safetensors", dir);
  StFile *f = NULL;
  int status = 0;
  if (!net_config_load(dir, net, &d) || !(f = st_open(wpath, &d)))
    status = input_failed(&d);
  if (!status) { /* the model's files: inputs no output may replace */
    inputset_add(in, net->path);
    inputset_add(in, wpath);
    status = check_runnable(cmd, dir, net, &tl);
  }
  if (!status && out && inputset_find(in, out))
    status = usage_error(cmd, "refusing to write %s: it is the input %s",
                         out, inputset_find(in, out));
  NetGen g = {.nseq = tl.nseq, .len = tl.len, .max_new = max_new};
  if (!status) {
    g.m = net_model_new(net, f);
    g.generated = xcalloc((size_t)tl.nseq * (size_t)max_new, sizeof(int));
    if (!net_generate_run(&g, tl.ids, &d)) {
      diag_print(&d, stderr);
      status = EXIT_RUN;
    }
  }
  if (!status && out)
    status = save_logits(cmd, out, &g, &tl, in);
  if (!status)
    print_token_rows(g.generated, g.nseq, g.max_new);
  array_free(g.all);
  free(g.generated);
  net_model_free(g.m);
  st_close(f);
  free(net);
  free(tl.ids);
  return status;
}
