/* cmd_models.c — whole models from a config.json: `mambalaya models
 * --config PATH` (what was built, the parameters), and the end-to-end
 * pricing that `eval`, `search` and `reproduce` run with --config. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *routing_choice(int v) { return routing_name((Routing)v); }
static const OptChoices routing_choices = {"routing", routing_choice,
                                           ROUTE_COUNT, NULL, false};

static const Opt net_opts[] = {
    {"--batch", OPT_DOUBLE, offsetof(NetArgs, batch), "B",
     .help = "sequences decoded together (default 1)", .lo = 1, .hi = 1e6},
    {"--prompt", OPT_DOUBLE, offsetof(NetArgs, prompt), "P",
     .help = "the prefill's tokens per sequence (default 2048)", .lo = 1,
     .hi = 1e9},
    {"--generate", OPT_DOUBLE, offsetof(NetArgs, generate), "G",
     .help = "decode steps after the prefill, each at the context it has "
             "reached (default 128)",
     .lo = 0, .hi = 1e9},
    {"--context", OPT_DOUBLE, offsetof(NetArgs, context), "C",
     .help = "the context the memory is sized for (default P + G)", .lo = 1,
     .hi = 1e12},
    {"--routing", OPT_ENUM, offsetof(NetArgs, routing), "R",
     .help = "how a decode step's tokens reach the experts: uniform "
             "(default: E (1-(1-K/E)^B) experts touched) or worst (min(E, "
             "K B))",
     .choices = &routing_choices},
    {"--capacity-factor", OPT_DOUBLE, offsetof(NetArgs, capacity_factor),
     "F", .help = "a prompt's tokens per expert, times F (default 1: an "
                  "even spread)",
     .lo = 1, .hi = 64},
    {"--samples", OPT_DOUBLE, offsetof(NetArgs, samples), "N",
     .help = "decode contexts priced exactly, the rest linear between them "
             "(default 17; 0: every step)",
     .lo = 0, .hi = 64},
};
const OptTable net_options = OPT_TABLE(net_opts);

int load_net(const NetArgs *n, Net *net) {
  Diag d = {0};
  if (!net_config_load(n->config, net, &d))
    return input_failed(&d);
  return 0;
}

/* NET from N's config and the architecture ARCH_NAME into *A: 0, or the
 * exit status after the message. */
static int open_net_arch(const NetArgs *n, const char *arch_name, Net *net,
                         Arch **a) {
  int status = load_net(n, net);
  Diag d = {0};
  *a = status ? NULL : open_arch(arch_name, &d);
  if (!status && !*a)
    status = input_failed(&d);
  return status;
}

static NetOpts net_opts_of(const NetArgs *n, int design,
                           const ModelOverrides *mf) {
  NetOpts o = net_default_opts();
  o.best = design < 0;
  if (design >= 0)
    o.design = (Design)design;
  o.mf = *mf;
  if (n->batch > 0)
    o.batch = (long)n->batch;
  if (n->prompt > 0)
    o.prompt = (long)n->prompt;
  if (n->generate >= 0)
    o.generate = (long)n->generate;
  if (n->context > 0)
    o.context = (long)n->context;
  if (n->capacity_factor >= 1)
    o.capacity_factor = n->capacity_factor;
  if (n->samples >= 0)
    o.samples = (int)n->samples;
  o.routing = (Routing)n->routing;
  return o;
}

/* {"path", "sha256"} of the config read. */
static json_t *config_json(const Net *net) {
  json_t *o = json_object();
  json_object_set_new(o, "path", json_string(net->path));
  size_t len;
  Diag ignore = {0};
  char *text = read_input(net->path, INPUT_TEXT_MAX, &len, &ignore);
  if (text) {
    char sha[65];
    sha256_hex(text, len, sha);
    json_object_set_new(o, "sha256", json_string(sha));
    free(text);
  }
  return o;
}

/* A model that does not fit the off-chip memory is priced all the same,
 * and said so. */
static void warn_fit(const char *cmd, const Net *net, const Arch *a,
                     const NetRun *r) {
  if (!r->fits)
    fprintf(stderr, "mambalaya %s: warning: %s needs %.4g GB at batch %ld, "
                    "more than %s's %.4g GB: priced as one device all the "
                    "same\n",
            cmd, net->name, r->need_bytes / 1e9, r->opts.batch,
            a->levels[0].name, r->capacity_bytes / 1e9);
}

static void print_run(const char *cmd, const Net *net, const Arch *a,
                      const NetRun *r, const NetOpts *o,
                      const char *arch_name, const ModelOverrides *mf,
                      bool json) {
  if (json) {
    json_t *root = report_net_run_json(net, a, r);
    json_object_set_new(root, "config", config_json(net));
    Inputs in = {.command = cmd,
                 .arch = arch_name ? arch_name : "mambalaya",
                 .design = o->best ? "best" : design_name(o->design),
                 .overrides = mf};
    emit_json(root, &in);
    return;
  }
  Buf b = {0};
  report_net_run_text(&b, net, a, r);
  emit(&b);
  buf_free(&b);
}

int net_eval(const char *cmd, const NetArgs *n, const char *arch_name,
             int design, const ModelOverrides *mf, bool json) {
  Net *net = xmalloc(sizeof *net);
  Arch *a;
  int status = open_net_arch(n, arch_name, net, &a);
  Diag d = {0};
  NetRun *r = status ? NULL : xmalloc(sizeof *r);
  if (r) {
    NetOpts o = net_opts_of(n, design, mf);
    if (o.generate > 0 && o.prompt + o.generate > 1e9) {
      status = usage_error("mambalaya eval", "--prompt + --generate: at most 1e9 tokens");
    } else if (!net_run(net, a, &o, r, NULL, &d)) {
      status = input_failed(&d);
    } else {
      warn_fit(cmd, net, a, r);
      print_run(cmd, net, a, r, &o, arch_name, mf, json);
    }
  }
  free(r);
  arch_free(a);
  free(net);
  return status;
}

/* One row of `reproduce --config`'s table. */
static void design_row(Buf *b, const char *name, const NetRun *r) {
  buf_printf(b, "  %-12s %12.4g %12.4g %12.4g %12.4g %12.4g %12.4g\n", name,
             r->ttft * 1e3, r->tpot_first * 1e3, r->tpot_mean * 1e3,
             r->tpot_last * 1e3, r->tokens_per_s, r->energy_per_token);
}

int net_reproduce(const char *cmd, const NetArgs *n, const char *arch_name,
                  const ModelOverrides *mf, bool json) {
  Net *net = xmalloc(sizeof *net);
  Arch *a;
  int status = open_net_arch(n, arch_name, net, &a);
  Diag d = {0};
  NetRun *r = xmalloc(sizeof *r);
  Buf b = {0};
  json_t *designs = json_object();
  buf_printf(&b, "every design end to end (ms; tokens/s over the batch; J "
                 "per generated token)\n  %-12s %12s %12s %12s %12s %12s "
                 "%12s\n", "design", "ttft", "tpot_first", "tpot_mean",
             "tpot_last", "tokens/s", "J/token");
  for (int i = 0; !status && i <= DES_COUNT; i++) {
    int design = i == DES_COUNT ? -1 : i; /* best last */
    NetOpts o = net_opts_of(n, design, mf);
    if (!net_run(net, a, &o, r, NULL, &d)) {
      status = input_failed(&d);
      break;
    }
    const char *name = design < 0 ? "best" : design_name((Design)design);
    design_row(&b, name, r);
    json_object_set_new(designs, name, report_net_run_json(net, a, r));
  }
  if (!status)
    warn_fit(cmd, net, a, r);
  if (!status && json) {
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(net->name));
    json_object_set_new(root, "designs", designs);
    json_object_set_new(root, "config", config_json(net));
    Inputs in = {.command = cmd, .arch = arch_name ? arch_name : "mambalaya",
                 .overrides = mf};
    emit_json(root, &in);
    designs = NULL;
  } else if (!status) {
    buf_printf(&b, "\nbest (searched), per block kind:\n\n");
    report_net_run_text(&b, net, a, r);
    emit(&b);
  }
  json_decref(designs);
  buf_free(&b);
  free(r);
  arch_free(a);
  free(net);
  return status;
}

typedef struct ModelsArgs {
  NetArgs net;
  bool json;
} ModelsArgs;

static const Opt models_opts[] = {
    CONFIG_OPT(ModelsArgs, net.config),
    {"--json", OPT_FLAG, offsetof(ModelsArgs, json), NULL,
     .help = "print JSON: the blocks, the schedule, the parameters, the "
             "notes, and the config read with its SHA-256"},
};
static const OptTable models_table = OPT_TABLE(models_opts);

void net_args_init(NetArgs *n) {
  *n = (NetArgs){.generate = -1, .samples = -1};
}

static bool net_args_given(const Parsed *p) {
  for (int i = 0; i < net_options.n; i++)
    if (opt_given(p, net_options.opts[i].name))
      return true;
  return false;
}

int net_check_options(const Parsed *p, const char *config, const char *spec,
                      const char *const *per_cascade) {
  if (!config)
    return net_args_given(p)
               ? usage_error(p->cmd, "--batch, --prompt, --generate, "
                                     "--context, --routing, "
                                     "--capacity-factor and --samples "
                                     "price a whole model: add --config")
               : 0;
  if (spec)
    return usage_error(p->cmd, "--config gives the workload: drop SPEC "
                               "('%s')", spec);
  for (int i = 0; per_cascade[i]; i++)
    if (opt_given(p, per_cascade[i]))
      return usage_error(p->cmd, "--config prices a whole model: %s is for "
                                 "one cascade (drop it)", per_cascade[i]);
  return 0;
}


static void models_init(void *opts) {
  ModelsArgs *o = opts;
  *o = (ModelsArgs){0};
  net_args_init(&o->net);
}

static int models(const Parsed *p, void *opts) {
  ModelsArgs *o = opts;
  if (!o->net.config)
    return usage_error(p->cmd, "needs --config PATH (a config.json, or a "
                               "folder holding one)");
  Net *net = xmalloc(sizeof *net);
  int status = load_net(&o->net, net);
  NetParams par;
  Diag d = {0};
  if (!status && !net_params(net, &par, &d))
    status = input_failed(&d);
  if (!status && o->json) {
    json_t *root = report_net_json(net, &par);
    json_object_set_new(root, "config", config_json(net));
    Inputs in = {.command = "models"};
    emit_json(root, &in);
  } else if (!status) {
    Buf b = {0};
    report_net_text(&b, net, &par);
    emit(&b);
    buf_free(&b);
  }
  free(net);
  return status;
}

const Command models_command = {
    "models", "a whole model from its config.json: layers, blocks, parameters",
    .about =
        "Build the model a Hugging Face config.json describes (a file, or a\n"
        "folder holding config.json) and print what was built: its layer\n"
        "schedule, the distinct blocks (each a cascade under specs/, sized\n"
        "from the config) with their uses, the parameters total and active\n"
        "per token counted from the blocks' weight tensors, and a note for\n"
        "each field the tool reads but does not model. `eval --config`\n"
        "prices the model end to end (docs/models.md).\n",
    .opts = &models_table,
    .example = "mambalaya models --config tests/configs/Jamba-v0.1.json\n"
               "mambalaya eval --config tests/configs/Jamba-v0.1.json --arch "
               "h100 --batch 8\n",
    .size = sizeof(ModelsArgs), .init = models_init, .run = models,
};
