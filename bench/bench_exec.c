/* bench_exec.c — whole language models on the executor, as a user runs
 * them: a model directory with random weights (init-weights' code, Mamba's
 * initial statistics) in the mamba-130m, mamba-370m and mamba2-130m shapes
 * (--models 130m,370m,mamba2-130m: a size, or a preset's name), stored as
 * F32 or F16, opened as run and generate open one (the file mapped, the
 * weights used where they lie), batch 1, a pool of 2 threads:
 *
 *  - prefill: N tokens through every layer and the last token's logits
 *    (what generate does first), with the interpreter and with the fused
 *    executor's plans; the best plan's speed over the interpreter's;
 *  - decode: STEPS tokens one at a time after a 16-token prefill, greedy,
 *    against the read bound: the time the same threads take to read the
 *    weight bytes a step reads (every layer's and the tied embedding's,
 *    where they lie, as stored) and nothing else (lm_read_weights). The
 *    weights are read once before the first step and after every step,
 *    and each step is divided by the faster of its two neighbouring reads:
 *    the machine's bandwidth moves by a third within seconds here (other
 *    tenants), so a bound probed apart from the steps, in other memory,
 *    measured the neighbours' noise more than the step. The median of the
 *    ratios is the figure, for the weights alone and with the decode state
 *    read and written (Mamba-2's, 19 MB on mamba2-130m, is 7 % of its F16
 *    weights' bytes, twice);
 *  - memory: each configuration runs in its own forked child, which opens
 *    the model itself; wait4's ru_maxrss is its peak resident memory,
 *    compared with the weights as stored plus the peak activation bytes
 *    the model reports (the target: at most 1.1 times that).
 *
 * The machine is shared, so figures move between runs; ratios (a plan
 * over the interpreter, a step over its bound) are measured within one
 * run, the bandwidths right before the configuration they bound, and with
 * --repeat N the configurations run N times, interleaved, the best run of
 * each reported.
 *
 *   bench_exec [--models 130m,370m] [--dtypes F32,F16] [--prefill 512,...]
 *              [--steps N] [--plans interpreter,ri,...|all] [--threads N]
 *              [--repeat N] [--full] [--dir DIR]
 *
 * Default: 130m and mamba2-130m, F16 and F32, prefill 512 with the
 * interpreter, ri, ri+rsb and full, decode 128 with the interpreter and
 * full (a few minutes). --full: all three shapes, prefill 512, 1024, 4096:
 * at 512 every plan, at 1024 and 4096 the interpreter and the best plan at
 * 512. */
#define _DEFAULT_SOURCE /* wait4, mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/lm/lm.h"

enum { MAX_LIST = 16, PROMPT = 16 };

/* Every decode of the run, over its bound. */
typedef struct Summary {
  int n;
  char label[64][96];
  /* per decode: seconds a token; over the bound, alone and with the
   * state */
  double secs[64], ratio[64], ratio_state[64];
} Summary;

typedef struct Bench {
  int threads, steps;
  Summary *sum;
  const char *models[MAX_LIST], *dtypes[MAX_LIST];
  int nmodels, ndtypes;
  int prefill[MAX_LIST], nprefill;
  int repeat; /* runs of each configuration (the best one counts) */
  int plans[ST_COUNT + 1], nplans; /* -1: the interpreter */
  bool full;
  char dir[256];
} Bench;

/* What a child reports through its pipe. */
typedef struct Result {
  bool ok;
  double secs, count;      /* the timed part, and its tokens */
  double best_step, median_step; /* decode: seconds per token */
  double best_read, median_read; /* decode: seconds to read the weights */
  double ratio;            /* decode: median of step / neighbouring read */
  double weights, act;     /* bytes: as held, and the activations' peak */
  double state;            /* bytes of the decode state after the run */
  char err[200];
} Result;

/* ---- children ---- */

/* Run FN(ARG, RESULT) in a forked child: its result and peak RSS. */
static bool in_child(void (*fn)(const void *, Result *), const void *arg,
                     Result *r, double *peak) {
  int fd[2];
  if (pipe(fd) != 0)
    return false;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    close(fd[0]);
    Result res = {0};
    fn(arg, &res);
    ssize_t n = write(fd[1], &res, sizeof res);
    _exit(n == (ssize_t)sizeof res ? 0 : 1);
  }
  close(fd[1]);
  memset(r, 0, sizeof *r);
  ssize_t n = read(fd[0], r, sizeof *r);
  close(fd[0]);
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid)
    return false;
  if (peak)
    *peak = (double)ru.ru_maxrss * 1024; /* KiB on Linux */
  if (n != (ssize_t)sizeof *r || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    snprintf(r->err, sizeof r->err, "the child failed (status %d)", status);
    r->ok = false;
  }
  return true;
}

/* ---- a configuration ---- */

typedef struct Config {
  const Bench *b;
  const char *model;
  int plan; /* -1: the interpreter */
  int tokens;
  bool decode;
} Config;

static const char *plan_name(int plan) {
  return plan < 0 ? "interpreter" : strategy_name((Strategy)plan);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void config_child(const void *arg, Result *r) {
  const Config *c = arg;
  Diag d = {0};
  Lm *m = lm_open(c->model, NULL, &d);
  if (!m) {
    snprintf(r->err, sizeof r->err, "%.190s", d.msg);
    return;
  }
  Pool *pool = pool_new(c->b->threads);
  LmOpts o = {.fused = c->plan >= 0,
              .strategy = c->plan >= 0 ? (Strategy)c->plan : ST_UNFUSED,
              .buffer_bytes = 2 << 20, .pool = pool, .last_only = true};
  int len = c->decode ? PROMPT : c->tokens, vocab = lm_config(m)->vocab;
  int *tokens = xmalloc((size_t)len * sizeof *tokens);
  for (int i = 0; i < len; i++)
    tokens[i] = (int)((i * 7919L + 13) % vocab);
  Array *logits = NULL;
  double t0 = now_seconds();
  r->ok = lm_forward(m, tokens, 1, len, &o, &logits, NULL, &d);
  r->secs = now_seconds() - t0;
  r->count = len;
  if (r->ok && c->decode && c->b->steps > 0) {
    int n = c->b->steps, next = 0;
    double *step = xmalloc((size_t)n * sizeof *step),
           *read = xmalloc((size_t)(n + 1) * sizeof *read),
           *ratio = xmalloc((size_t)n * sizeof *ratio);
    read[0] = lm_read_weights(m, pool);
    r->secs = 0;
    for (int s = 0; s < n; s++) {
      double t1 = now_seconds();
      for (int v = 1; v < vocab; v++) /* greedy, as generate */
        if (logits->data[v] > logits->data[next])
          next = v;
      array_free(logits);
      logits = NULL;
      if (!(r->ok = lm_forward(m, &next, 1, 1, &o, &logits, NULL, &d)))
        break; /* reported as failed: no figures */
      step[s] = now_seconds() - t1;
      r->secs += step[s];
      read[s + 1] = lm_read_weights(m, pool);
      ratio[s] = step[s] / fmin(read[s], read[s + 1]);
    }
    if (r->ok) {
      r->count = n;
      qsort(step, (size_t)n, sizeof *step, cmp_double);
      qsort(read, (size_t)n + 1, sizeof *read, cmp_double);
      qsort(ratio, (size_t)n, sizeof *ratio, cmp_double);
      r->best_step = step[0];
      r->median_step = step[n / 2];
      r->best_read = read[0];
      r->median_read = read[n / 2];
      r->ratio = ratio[n / 2];
    }
    free(ratio);
    free(read);
    free(step);
  }
  if (!r->ok)
    snprintf(r->err, sizeof r->err, "%.190s", d.msg);
  r->weights = lm_weight_bytes(m);
  r->state = lm_state_bytes(m);
  r->act = lm_peak_bytes(m);
  array_free(logits);
  free(tokens);
  pool_free(pool);
  lm_free(m);
}

/* One run of a configuration: the bandwidths, then the run. */
typedef struct Measure {
  bool ok;
  Result r;
  double peak, rate; /* peak RSS bytes, tokens/s */
} Measure;

static Measure measure(const Config *c) {
  Measure m = {0};
  if (!in_child(config_child, c, &m.r, &m.peak) || !m.r.ok)
    return m;
  m.ok = true;
  m.rate = m.r.count / (m.r.secs > 0 ? m.r.secs : 1e-9);
  return m;
}

static void report(const Config *c, const char *label, const Measure *m) {
  const Result *r = &m->r;
  if (!m->ok) {
    printf("  %-40s FAILED: %s\n", label, r->err);
    return;
  }
  double held = r->weights + r->act;
  printf("  %-40s %8.1f tok/s  peak RSS %5.0f MB = %.2fx (weights %.0f + "
         "activations %.0f MB)\n",
         label, m->rate, m->peak / 1e6, m->peak / held, r->weights / 1e6,
         r->act / 1e6);
  if (c->decode) {
    /* A step also reads the decode state and writes it anew: twice its
     * bytes at the weights' pace (a write is no faster than a read, so
     * this stays a lower bound on the step's time). */
    double with_state = r->ratio * r->weights / (r->weights + 2 * r->state);
    printf("  %-40s %.2f ms/token (median %.2f, best %.2f); the weights "
           "read alone between steps: median %.2f ms (%.1f GB/s), best "
           "%.2f ms (%.1f GB/s); a step over the faster read beside it, "
           "median: %.2fx; with the state's %.1f MB read and written: "
           "%.2fx (target <= 1.25)\n",
           "", 1e3 * r->secs / r->count, 1e3 * r->median_step,
           1e3 * r->best_step, 1e3 * r->median_read,
           r->weights / r->median_read / 1e9, 1e3 * r->best_read,
           r->weights / r->best_read / 1e9, r->ratio, r->state / 1e6,
           with_state);
    Summary *s = c->b->sum;
    if (s->n < (int)(sizeof s->secs / sizeof s->secs[0])) {
      snprintf(s->label[s->n], sizeof s->label[0], "%s", label);
      s->secs[s->n] = r->secs / r->count;
      s->ratio[s->n] = r->ratio;
      s->ratio_state[s->n++] = with_state;
    }
  }
}

/* Every decode of the run, over its read bound. */
static void summarize(const Summary *s) {
  if (s->n == 0)
    return;
  printf("decode over the read bound (median of each step over the faster "
         "read of the weights beside it; target <= 1.25):\n");
  for (int k = 0; k < s->n; k++)
    printf("  %-40s %.2f ms/token; %.2fx; with the state read and "
           "written %.2fx\n",
           s->label[k], 1e3 * s->secs[k], s->ratio[k], s->ratio_state[k]);
}

/* CONFIGS (N) run REPEAT times, interleaved (so that a busy spell of the
 * machine hits them alike); each one's best run in BEST. */
static void measure_all(const Config *configs, int n, int repeat,
                        Measure *best) {
  for (int k = 0; k < n; k++)
    best[k] = (Measure){0};
  for (int rep = 0; rep < repeat; rep++)
    for (int k = 0; k < n; k++) {
      Measure m = measure(&configs[k]);
      if (!best[k].ok || (m.ok && m.rate > best[k].rate))
        best[k] = m;
    }
}

/* ---- a model ---- */

typedef struct Write {
  ModelConfig cfg;
  DType dt;
  const char *dir;
} Write;

static void write_child(const void *arg, Result *r) {
  const Write *w = arg;
  Diag d = {0};
  double params;
  bool refused;
  r->ok = lm_write_random(&w->cfg, 0, w->dt, w->dir, NULL, &params, &refused,
                          &d);
  if (!r->ok)
    snprintf(r->err, sizeof r->err, "%.190s", d.msg);
}

static void bench_model(const Bench *b, const char *shape, const char *dtype) {
  char preset[32], dir[320], label[96];
  if (strncmp(shape, "mamba", 5) == 0) /* a preset's name: mamba2-130m */
    snprintf(preset, sizeof preset, "%s", shape);
  else
    snprintf(preset, sizeof preset, "mamba-%s", shape);
  snprintf(dir, sizeof dir, "%s/%s-%s", b->dir, shape, dtype);
  Write w = {.dt = strcmp(dtype, "F16") == 0    ? DT_F16
                   : strcmp(dtype, "BF16") == 0 ? DT_BF16
                                                : DT_F32,
             .dir = dir};
  Diag d = {0};
  Result r;
  if (!lm_config_resolve(preset, NULL, 0, &w.cfg, &d)) {
    diag_print(&d, stderr);
    return;
  }
  mkdir(dir, 0777);
  double t0 = now_seconds();
  if (!in_child(write_child, &w, &r, NULL) || !r.ok) {
    printf("%s %s: cannot write the model: %s\n", preset, dtype, r.err);
    return;
  }
  printf("%s-shaped, %s (d_model %d, %d layers, vocabulary %d), written in "
         "%.1f s:\n",
         preset, dtype, w.cfg.d_model, w.cfg.n_layer, w.cfg.vocab,
         now_seconds() - t0);
  int best_plan = -1;
  Config configs[ST_COUNT + 1];
  Measure got[ST_COUNT + 1];
  for (int p = 0; p < b->nprefill; p++) {
    int n = 0;
    for (int k = 0; k < b->nplans; k++) {
      int plan = b->plans[k];
      /* Beyond the first length, --full runs the interpreter and the
       * best plan of the first. */
      if (b->full && p > 0 && plan >= 0 && plan != best_plan)
        continue;
      configs[n++] = (Config){.b = b, .model = dir, .plan = plan,
                              .tokens = b->prefill[p]};
    }
    measure_all(configs, n, b->repeat, got);
    double interp = 0, best = 0;
    int best_here = -1;
    for (int k = 0; k < n; k++) {
      snprintf(label, sizeof label, "prefill %d, %s", b->prefill[p],
               plan_name(configs[k].plan));
      report(&configs[k], label, &got[k]);
      if (configs[k].plan < 0)
        interp = got[k].rate;
      else if (got[k].rate > best) {
        best = got[k].rate;
        best_here = configs[k].plan;
      }
    }
    if (p == 0)
      best_plan = best_here;
    if (interp > 0 && best > 0)
      printf("  %-40s best plan %s: %.2fx the interpreter (target >= "
             "1.5x)\n",
             "", plan_name(best_here), best / interp);
  }
  const int decode_plans[] = {-1, ST_FULL};
  for (int k = 0; b->steps > 0 && k < 2; k++)
    configs[k] = (Config){.b = b, .model = dir, .plan = decode_plans[k],
                          .decode = true};
  measure_all(configs, b->steps > 0 ? 2 : 0, b->repeat, got);
  for (int k = 0; b->steps > 0 && k < 2; k++) {
    snprintf(label, sizeof label, "%s %s decode %d, %s", preset, dtype,
             b->steps, plan_name(decode_plans[k]));
    report(&configs[k], label, &got[k]);
  }
  char path[400];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  remove(path);
  snprintf(path, sizeof path, "%s/config.json", dir);
  remove(path);
  rmdir(dir);
}

/* ---- options ---- */

static int split(char *s, const char **out) {
  int n = 0;
  for (char *t = strtok(s, ","); t && n < MAX_LIST; t = strtok(NULL, ","))
    out[n++] = t;
  return n;
}

static int usage(void) {
  fprintf(stderr,
          "usage: bench_exec [--models 130m,370m] [--dtypes F32,F16] "
          "[--prefill 512,...] [--steps N] [--plans LIST|all] [--threads N] "
          "[--repeat N] [--full] [--dir DIR]\n");
  return 2;
}

static bool parse_plans(char *s, Bench *b) {
  const char *names[MAX_LIST];
  int n = split(s, names);
  b->nplans = 0;
  for (int i = 0; i < n; i++) {
    Strategy st;
    if (strcmp(names[i], "all") == 0) {
      b->plans[b->nplans++] = -1;
      for (int k = 0; k < ST_COUNT; k++)
        b->plans[b->nplans++] = k;
    } else if (strcmp(names[i], "interpreter") == 0) {
      b->plans[b->nplans++] = -1;
    } else if (strategy_from_name(names[i], &st)) {
      b->plans[b->nplans++] = st;
    } else {
      return false;
    }
    if (b->nplans > ST_COUNT)
      break;
  }
  return b->nplans > 0;
}

int main(int argc, char **argv) {
  static char models[] = "130m,mamba2-130m", dtypes[] = "F16,F32", plans[] =
      "interpreter,ri,ri+rsb,full";
  static Summary sum;
  Bench b = {.threads = 2, .steps = 128, .prefill = {512}, .nprefill = 1,
             .repeat = 1, .sum = &sum};
  b.nmodels = split(models, b.models);
  b.ndtypes = split(dtypes, b.dtypes);
  parse_plans(plans, &b);
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    bool has = i + 1 < argc;
    if (strcmp(argv[i], "--full") == 0) {
      static char all_models[] = "130m,370m,mamba2-130m", all[] = "all";
      b.full = true;
      b.nmodels = split(all_models, b.models);
      b.prefill[0] = 512, b.prefill[1] = 1024, b.prefill[2] = 4096;
      b.nprefill = 3;
      parse_plans(all, &b);
    } else if (strcmp(argv[i], "--models") == 0 && has) {
      b.nmodels = split(argv[++i], b.models);
    } else if (strcmp(argv[i], "--dtypes") == 0 && has) {
      b.ndtypes = split(argv[++i], b.dtypes);
    } else if (strcmp(argv[i], "--prefill") == 0 && has) {
      const char *n[MAX_LIST];
      b.nprefill = split(argv[++i], n);
      for (int k = 0; k < b.nprefill; k++)
        if ((b.prefill[k] = atoi(n[k])) < 1)
          return usage();
    } else if (strcmp(argv[i], "--steps") == 0 && has) {
      b.steps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--plans") == 0 && has) {
      if (!parse_plans(argv[++i], &b))
        return usage();
    } else if (strcmp(argv[i], "--repeat") == 0 && has) {
      b.repeat = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--threads") == 0 && has) {
      b.threads = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--dir") == 0 && has) {
      dir = argv[++i];
    } else {
      return usage();
    }
  }
  if (b.threads < 1 || b.steps < 0 || b.repeat < 1)
    return usage();
  /* The models are written here and removed after (--dir: a place with
   * room for them, 1.5 GB for 370m in F32). */
  snprintf(b.dir, sizeof b.dir, "%s/mambalaya-bench-XXXXXX",
           dir ? dir : "/tmp");
  if (!mkdtemp(b.dir)) {
    perror("bench_exec: mkdtemp");
    return 1;
  }
  printf("bench_exec: batch 1, %d threads, 2 MiB tile buffer; decode %d "
         "steps after a %d-token prompt\n",
         b.threads, b.steps, PROMPT);
  for (int m = 0; m < b.nmodels; m++)
    for (int t = 0; t < b.ndtypes; t++)
      bench_model(&b, b.models[m], b.dtypes[t]);
  summarize(&sum);
  rmdir(b.dir);
  return 0;
}
