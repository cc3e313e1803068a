/* cmd_init_weights.c — `mambalaya init-weights`: a model directory of
 * random weights with a fresh Mamba's statistics. */
#include "cli.h"

#include "../lm/lm.h"

#include <math.h>
#include <string.h>

typedef struct InitArgs {
  SpecOpts so; /* --model, --set */
  const char *config; /* --config: a whole model (cmd_netrun.c) */
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
    {"--config", OPT_PATH, offsetof(InitArgs, config), "PATH",
     .help = "a whole model instead: its config.json (or a folder holding "
             "one), any type docs/models.md lists; weights keyed by block, "
             "F32 (then no --model, --set or --dtype)"},
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
    MAX_MEMORY_OPT(InitArgs, max_memory, "a model whose weights"),
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
  if (o->config) {
    if (o->so.model || o->so.nsets || opt_given(p, "--dtype"))
      return usage_error(p->cmd, "--config gives the model: drop --model, "
                                 "--set and --dtype");
    return net_init_weights(p->cmd, o->config, o->seed, o->out);
  }
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
    "init-weights", "write a model directory with random Mamba weights",
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
    .opts = &init_table,
    .example = "mambalaya init-weights --model mamba-130m --set n_layer=2 "
               "--out m\n"
               "mambalaya init-weights --config tiny/config.json --out tiny\n",
    .size = sizeof(InitArgs), .run = init_weights,
};

