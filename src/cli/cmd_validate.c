/* cmd_validate.c — `mambalaya validate PATH`: the model against Vidur's
 * measured GPU kernel times (src/validate/, docs/validation.md). */
#include "cli.h"

#include "../validate/validate.h"

#include <stdlib.h>
#include <string.h>

typedef struct ValidateArgs {
  const char *path, *arch, *out;
  int tp, worst;
  bool json, csv;
  unsigned formats;
} ValidateArgs;

static const Opt validate_opts[] = {
    {"PATH", OPT_PATH, offsetof(ValidateArgs, path), NULL,
     .help = "a Vidur mlp.csv, or a folder: every mlp.csv under it (its "
             "GPU and model from the folders .../GPU/ORG/MODEL/mlp.csv)",
     .flags = OPT_POSITIONAL | OPT_REQUIRED},
    {"--arch", OPT_STRING, offsetof(ValidateArgs, arch), "ARCH",
     .help = "the architecture of every file (default: the one each GPU "
             "folder was measured on: a100 -> a100, h100 -> h100-sxm)"},
    {"--tp", OPT_INT, offsetof(ValidateArgs, tp), "N",
     .help = "only the rows of tensor-parallel degree N (default: all)",
     .lo = 1, .hi = 1 << 20},
    {"--worst", OPT_INT, offsetof(ValidateArgs, worst), "N",
     .help = "the rows of largest |error| listed (default: 10)", .lo = 0,
     .hi = 1 << 20},
    {"--json", OPT_FLAG, offsetof(ValidateArgs, json), NULL,
     .help = "print {\"records\": [{gpu, model, operator, tokens, tp, "
             "predicted_ms, measured_ms, error}], \"files\": [...], "
             "\"gpus\": {...}}: the summaries per file, operator and GPU"},
    {"--csv", OPT_FLAG, offsetof(ValidateArgs, csv), NULL,
     .help = "print one row per operator and CSV row"},
    {"--out", OPT_PATH, offsetof(ValidateArgs, out), "DIR",
     .help = "write the predicted-against-measured figure into DIR as "
             "validate.svg (and the other --format)"},
    {"--format", OPT_CUSTOM, offsetof(ValidateArgs, formats), "LIST",
     .help = "the figure's formats, of svg, pdf, png (default: svg,pdf)",
     .parse = parse_formats},
};
static const OptTable validate_table = OPT_TABLE(validate_opts);

static void validate_init(void *opts) {
  *(ValidateArgs *)opts = (ValidateArgs){
      .worst = 10, .formats = 1u << FMT_SVG | 1u << FMT_PDF};
}

/* Each file's architecture (--arch, or its GPU folder's), loaded once
 * per name into ARCH[i]; false after a message. */
static bool open_archs(const char *cmd, const ValidateArgs *o,
                       const VidurSet *set, Arch **arch, InputSet *in) {
  for (int i = 0; i < set->n; i++) {
    const char *name = o->arch ? o->arch : vidur_gpu_arch(set->files[i].gpu);
    if (!name) {
      usage_error(cmd,
                  "%s: no architecture for GPU folder '%s' (known: a100, "
                  "h100): give --arch",
                  set->files[i].path, set->files[i].gpu);
      return false;
    }
    for (int j = 0; j < i && !arch[i]; j++)
      if (strcmp(o->arch ? o->arch : vidur_gpu_arch(set->files[j].gpu),
                 name) == 0)
        arch[i] = arch[j];
    if (arch[i])
      continue;
    Diag d = {0};
    if (!(arch[i] = open_arch(name, &d))) {
      input_failed(&d);
      return false;
    }
    const char *p = input_path("archs", name);
    if (p)
      inputset_add(in, p);
  }
  return true;
}

static void free_archs(Arch **arch, int n) {
  for (int i = 0; i < n; i++) {
    bool shared = false;
    for (int j = i + 1; j < n; j++)
      shared = shared || arch[j] == arch[i];
    if (!shared)
      arch_free(arch[i]);
  }
  free(arch);
}

/* The figure in each format asked for, into O->out. */
static int write_figure(const Parsed *p, const ValidateArgs *o,
                        const Validation *v) {
  OutSet *set = outset_new(o->out);
  outset_protect_inputs(set, p->inputs);
  Diag d = {0};
  bool ok = true, refused = false;
  for (int f = 0; ok && f < FMT_COUNT; f++) {
    if (!(o->formats & 1u << f))
      continue;
    Buf b = {0};
    char name[32];
    validate_chart(&b, v, (Format)f);
    snprintf(name, sizeof name, "validate.%s", format_name((Format)f));
    ok = outset_put(set, name, b.s ? b.s : "", b.len, &d);
    buf_free(&b);
  }
  ok = ok && outset_commit(set, &refused, &d);
  outset_free(set);
  if (ok)
    return 0;
  diag_print(&d, stderr);
  return refused ? EXIT_INPUT : EXIT_RUN;
}

static void print_result(const ValidateArgs *o, const Validation *v,
                         const VidurSet *set, Arch *const *arch) {
  if (o->json) {
    Inputs in = {.command = "validate", .arch = o->arch};
    emit_json(validate_json(v, set, arch), &in);
    return;
  }
  Buf b = {0};
  if (o->csv)
    validate_csv(&b, v, set);
  else
    validate_text(&b, v, set, arch, o->worst);
  emit(&b);
  buf_free(&b);
}

static int validate(const Parsed *p, void *opts) {
  const ValidateArgs *o = opts;
  if (o->json && o->csv)
    return usage_error(p->cmd, "--json and --csv: give one");
  if (o->out && !output_dir_check(o->out, &(Diag){0}))
    return usage_error(p->cmd, "--out %s: not a folder that can be written",
                       o->out);
  Diag d = {0};
  VidurSet set;
  if (!vidur_read(o->path, &set, &d)) {
    vidur_free(&set);
    return input_failed(&d);
  }
  for (int i = 0; i < set.n; i++)
    inputset_add(p->inputs, set.files[i].path);
  Arch **arch = xcalloc((size_t)set.n + 1, sizeof *arch);
  int status = EXIT_INPUT;
  Validation *v = NULL;
  if (open_archs(p->cmd, o, &set, arch, p->inputs)) {
    v = validate_run(&set, arch, o->tp, &d);
    status = v ? 0 : input_failed(&d);
  }
  if (v && v->n == 0)
    status = usage_error(p->cmd, "no row of tensor-parallel degree %d in %s",
                         o->tp, o->path);
  if (status == 0 && o->out)
    status = write_figure(p, o, v);
  if (status == 0)
    print_result(o, v, &set, arch);
  validation_free(v);
  free_archs(arch, set.n);
  vidur_free(&set);
  return status;
}

const Command validate_command = {
    "validate", "the model against measured GPU kernel times (Vidur)",
    .about =
        "Price every operator of Vidur's profiling CSVs (mlp.csv: per-operator "
        "CUDA\nkernel times of a decoder layer, per token count and "
        "tensor-parallel degree)\nas the Einsums it runs on one GPU's shard, "
        "on the architecture of the GPU it\nwas measured on, and print "
        "predicted against measured: each row's error, the\nmedian and "
        "90th-percentile |error| per file, operator and GPU, the worst "
        "rows\n(docs/validation.md).\n",
    .opts = &validate_table,
    .notes = "The GPU files' fields marked FITTED were fitted on the "
             "Llama-2-7B and\nLlama-3-8B files; every other model is held "
             "out.\n",
    .example = "mambalaya validate data/vidur/compute --tp 1 --out "
               "out/validate\n",
    .size = sizeof(ValidateArgs), .init = validate_init, .run = validate,
};
