/* cmd_reproduce.c — `mambalaya reproduce`: the paper's whole evaluation,
 * for the paper's setup or any other. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

typedef struct ReproArgs {
  SpecOpts spec;
  NetArgs net;
  ModelOverrides mopts;
  const char *out, *arch; /* arch NULL: the shipped mambalaya */
  unsigned formats;
  int layers; /* --layers; 0: the model's */
} ReproArgs;

static const char both_ways[] =
    "reproduce prices every design both sequential and pipelined, achieved "
    "and ideal";

static const Opt repro_opts[] = {
    CONFIG_OPT(ReproArgs, net.config),
    {"--out", OPT_PATH, offsetof(ReproArgs, out), "DIR",
     .help = "where the figures go (default: out)"},
    {"--format", OPT_CUSTOM, offsetof(ReproArgs, formats), "LIST",
     .help = "the figures' formats, of svg, pdf, png (default: svg,pdf: SVG "
             "for the browser, as index.html shows it, PDF for papers; add "
             "png for slides: it takes about four times as long as the rest "
             "together)",
     .parse = parse_formats},
    {"--json", OPT_FLAG, offsetof(ReproArgs, spec.json), NULL,
     .help = "print {\"setup\", \"targets\": {KEY: {\"ours\", \"paper\", "
             "...}}, \"designs\"}"},
    {"--spec", OPT_STRING, offsetof(ReproArgs, spec.spec), "SPEC",
     .help = "the cascade (default: the shipped mamba1)"},
    {"--model", OPT_STRING, offsetof(ReproArgs, spec.model), "M",
     .help = "the model preset (default: the spec's own)"},
    {"--set", OPT_CUSTOM, offsetof(ReproArgs, spec), "NAME=V",
     .help = "B: the batch; I: the prefill's tokens (default: the spec's "
             "sizes, else 64 and 2048); any other rank or parameter as given",
     .flags = OPT_REPEAT, .parse = parse_set},
    ARCH_OPT(ReproArgs, arch),
    {"--layers", OPT_INT, offsetof(ReproArgs, layers), "N",
     .help = "layers end to end, for the end-to-end figures (default: the "
             "model's; a spec without a model draws them only with this)",
     .lo = 1, .hi = 100000},
    {"--pipelined", OPT_REFUSED, 0, NULL, .help = both_ways},
    {"--ideal", OPT_REFUSED, 0, NULL, .help = both_ways},
};
static const OptTable repro_table = OPT_TABLE(repro_opts);

static void repro_init(void *opts) {
  ReproArgs *o = opts;
  *o = (ReproArgs){.spec.spec = "mamba1", .mopts = model_no_overrides(),
                   .out = "out", .formats = 1u << FMT_SVG | 1u << FMT_PDF};
  net_args_init(&o->net);
}

/* The shipped file (under DIR, "specs" or "archs") that NAME denotes:
 * the name of one ("mamba1"), or a path to a byte-for-byte copy of one.
 * NULL for anything else. */
static const char *shipped_identity(const char *dir, const char *name) {
  if (!name) /* the default: the paper's */
    return strcmp(dir, "specs") == 0 ? "specs/mamba1.yaml"
                                     : "archs/mambalaya.yaml";
  size_t len = 0;
  char *text = read_file(name, &len);
  size_t n = strlen(dir);
  const char *found = NULL;
  for (const EmbeddedFile *f = embedded_files; f->name && !found; f++) {
    if (strncmp(f->name, dir, n) != 0 || f->name[n] != '/')
      continue;
    if (text) {
      if (f->len == len && memcmp(f->data, text, len) == 0)
        found = f->name;
    } else {
      /* Not a file: open_spec and open_arch take it as a shipped name. */
      const char *base = f->name + n + 1, *dot = strrchr(base, '.');
      size_t stem = dot ? (size_t)(dot - base) : strlen(base);
      if (strcmp(base, name) == 0 ||
          (strlen(name) == stem && strncmp(base, name, stem) == 0))
        found = f->name;
    }
  }
  free(text);
  return found;
}

/* When the progress line was last said (reproduce's, on stderr). */
typedef struct Said {
  double at;
} Said;

/* The evaluation's progress on stderr once it has run a few seconds,
 * then every few seconds: the share done and the time left at that pace
 * (the points of a sweep grow with I: an estimate). */
static void say_progress(void *ctx, double done, double elapsed) {
  Said *said = ctx;
  if (elapsed < 3 || elapsed - said->at < 3 || done >= 1)
    return;
  said->at = elapsed;
  fprintf(stderr, "mambalaya reproduce: %.0f%% in %.0f s, about %.0f s "
                  "left\n",
          100 * done, elapsed, elapsed * (1 - done) / done);
}

/* The evaluation for O's setup (C the spec it loaded), its figures
 * written; NULL after a message (*status set). */
static Repro *evaluate(const ReproArgs *o, const Cascade *c, Arch *arch,
                       int *status) {
  ReproSetup setup = {.spec = c,
                      .spec_shipped = shipped_identity("specs", o->spec.spec),
                      .arch = arch,
                      .arch_shipped = shipped_identity("archs", o->arch),
                      .model = o->spec.model,
                      .layers = o->layers,
                      .nsets = o->spec.nsets,
                      .sets = o->spec.sets,
                      .opts = o->mopts};
  Said said = {0};
  setup.progress = say_progress;
  setup.progress_ctx = &said;
  Diag d = {0};
  Repro *r = repro_run(&setup, &d);
  if (!r) {
    *status = input_failed(&d);
    return NULL;
  }
  OutSet *set = outset_new(o->out);
  const char *inputs[] = {input_path("specs", o->spec.spec),
                          input_path("archs", o->arch)};
  for (int i = 0; i < 2; i++)
    if (inputs[i])
      outset_protect(set, inputs[i]);
  bool refused = false;
  if (!report_figures(r, set, o->formats, &d) ||
      !outset_commit(set, &refused, &d)) {
    /* Nothing on stdout: the figures are part of what was asked. */
    diag_print(&d, stderr);
    *status = refused ? EXIT_INPUT : EXIT_RUN;
    repro_free(r);
    r = NULL;
  }
  outset_free(set);
  return r;
}

static void print_repro(const ReproArgs *o, const Cascade *c, Repro *r) {
  if (o->spec.json) {
    Inputs in = spec_inputs("reproduce", &o->spec, c, NULL);
    in.arch = o->arch ? o->arch : "mambalaya";
    in.overrides = &o->mopts;
    emit_json(report_repro_json(r), &in);
    return;
  }
  Buf b = {0};
  report_repro_text(&b, r);
  size_t n = strlen(o->out);
  buf_printf(&b, "figures written to %s%sindex.html\n", o->out,
             n > 0 && o->out[n - 1] == '/' ? "" : "/");
  emit(&b);
  buf_free(&b);
}

static int reproduce(const Parsed *p, void *opts) {
  const ReproArgs *o = opts;
  /* --config: every design end to end on the whole model, and the
   * searched schedule's per-kind breakdown. */
  static const char *const per_cascade[] = {"--spec", "--model", "--set",
                                            "--layers", "--out", "--format",
                                            NULL};
  int bad = net_check_options(p, o->net.config, NULL, per_cascade);
  if (bad)
    return bad;
  if (o->net.config)
    return net_reproduce("reproduce", &o->net, o->arch, &o->mopts,
                         o->spec.json);
  Diag d = {0};
  if (!output_dir_check(o->out, &d))
    return input_failed(&d);
  /* load_spec checks the model and the settings against the spec, and
   * that its shape binds; the evaluation binds its own points. */
  Arch *arch;
  Cascade *c;
  Shape *s;
  int status = load_spec_arch(p->cmd, &o->spec, o->arch, false, &arch, &c, &s);
  if (status)
    return status;
  shape_free(s);
  Repro *r = evaluate(o, c, arch, &status);
  if (r)
    print_repro(o, c, r);
  repro_free(r);
  return spec_arch_free(arch, c, NULL, status);
}

const Command reproduce_command = {
    "reproduce", "run the paper's evaluation: every figure beside ours",
    .about =
        "Run the paper's evaluation: every design (best unfused, ideal, the\n"
        "MARCA-like and Geens-like accelerators, the four fusion strategies)\n"
        "priced for prefill and decode, end to end in three scenarios, and\n"
        "over I = 2^0..2^20, and beside them best (searched), the schedule\n"
        "`mambalaya search` finds, with its gap to ideal; print a table of the\n"
        "designs, every figure where the paper's best variant appears again\n"
        "with best (searched), and, where the setup is the paper's, every\n"
        "figure of the paper beside ours with the ratio ours/paper. Writes\n"
        "every figure (in each format of --format), every plotted series\n"
        "(figures.csv), the figures beside the paper's (targets.csv) and an\n"
        "index.html showing them all into DIR, creating it if missing; stdout\n"
        "is written only after them. The files land together: a failed or\n"
        "interrupted run leaves DIR as it was.\n"
        "\n"
        "The paper's setup is the default: the shipped mamba1 cascade, models\n"
        "mamba-370m (and mamba-2.8b for a second sweep), the shipped\n"
        "mambalaya architecture, B=64, prefill at I=2048. Any other spec,\n"
        "model, architecture or setting runs the same evaluation and draws\n"
        "the same figures for it, labelled with it; the paper's values are\n"
        "shown only for what the paper evaluated (an edited copy of a shipped\n"
        "file is not the paper's). A spec that names no model is evaluated\n"
        "at its own sizes; the end-to-end figures need a layer count (the\n"
        "model's, or --layers N).\n",
    .opts = &repro_table,
    .uses = {{&model_options, offsetof(ReproArgs, mopts),
              "model options (as for eval; every design gets them over its\n"
              "defaults; the figures choose sequential or pipelined, achieved\n"
              "or ideal):"},
             USE_NET(ReproArgs)},
    .example = "mambalaya reproduce --spec mamba2 --model mamba2-370m --out "
               "out/mamba2\n"
               "mambalaya reproduce --spec tests/specs/good/rwkv6_shift.yaml "
               "--arch h100 --layers 32\n"
               "mambalaya reproduce --reserve-share 0.8 --out out/share80\n"
               "mambalaya reproduce --config tests/configs/Jamba-v0.1.json "
               "--arch h100\n",
    .size = sizeof(ReproArgs), .init = repro_init, .run = reproduce,
};
