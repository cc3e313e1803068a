/* vidur.c — Vidur's mlp.csv files as published: a header line naming
 * the columns, then one row per (token count, tensor-parallel degree).
 * The columns read are the model's sizes, the row's token count and
 * degree, and each operator's median time (time_stats.OP.median, in
 * milliseconds); the others (min, max, mean, std) are skipped. */
#include "validate.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const op_names[] = {
#define X(id, name, ...) name,
    VIDUR_OPS(X)
#undef X
};
_Static_assert(sizeof op_names / sizeof op_names[0] == VOP_COUNT,
               "a name per operator");

const char *vidur_op_name(VidurOp op) { return op_names[op]; }

/* The GPU folders Vidur publishes and the files of the parts they were
 * measured on (docs/validation.md, "The data"). */
static const struct {
  const char *gpu, *arch;
} gpu_archs[] = {{"a100", "a100"}, {"h100", "h100-sxm"}};

const char *vidur_gpu_arch(const char *gpu) {
  for (size_t i = 0; i < sizeof gpu_archs / sizeof gpu_archs[0]; i++)
    if (strcmp(gpu_archs[i].gpu, gpu) == 0)
      return gpu_archs[i].arch;
  return NULL;
}

/* The models the GPU files' fitted fields were fitted on. */
static const char *const tuning_models[] = {"meta-llama/Llama-2-7b-hf",
                                            "meta-llama/Meta-Llama-3-8B"};

bool vidur_tuning_model(const char *model) {
  for (size_t i = 0; i < sizeof tuning_models / sizeof tuning_models[0]; i++)
    if (strcmp(tuning_models[i], model) == 0)
      return true;
  return false;
}

/* The columns a row needs, besides the operators' medians. */
enum { COL_HEADS, COL_KV, COL_EMBD, COL_EXPANDED, COL_VOCAB, COL_GATED,
       COL_TOKENS, COL_TP, COL_COUNT };
static const char *const col_names[] = {
    "n_head",     "n_kv_head",    "n_embd",     "n_expanded_embd",
    "vocab_size", "use_gated_mlp", "num_tokens", "num_tensor_parallel_workers"};
_Static_assert(sizeof col_names / sizeof col_names[0] == COL_COUNT,
               "a name per column");

typedef struct Reader {
  const char *path;
  Diag *d;
  int col[COL_COUNT], op_col[VOP_COUNT]; /* field index of each */
  int nfields;
} Reader;

/* Split LINE (modified) at commas into F (room for CAP); the count. */
static int split(char *line, char **f, int cap) {
  int n = 0;
  for (char *p = line;; p++) {
    if (n < cap)
      f[n] = p;
    n++;
    p = strchr(p, ',');
    if (!p)
      break;
    *p = 0;
  }
  return n;
}

/* The column of each name the reader needs, from the header's N
 * fields. */
static bool read_header(Reader *R, char **f, int n) {
  R->nfields = n;
  for (int c = 0; c < COL_COUNT; c++)
    R->col[c] = -1;
  for (int k = 0; k < VOP_COUNT; k++)
    R->op_col[k] = -1;
  for (int i = 0; i < n; i++) {
    for (int c = 0; c < COL_COUNT; c++)
      if (strcmp(f[i], col_names[c]) == 0)
        R->col[c] = i;
    for (int k = 0; k < VOP_COUNT; k++) {
      char name[96];
      snprintf(name, sizeof name, "time_stats.%s.median", op_names[k]);
      if (strcmp(f[i], name) == 0)
        R->op_col[k] = i;
    }
  }
  for (int c = 0; c < COL_COUNT; c++)
    if (R->col[c] < 0)
      return diag_fail(R->d, R->path, (Loc){1, 1},
                       "missing column '%s' (expected Vidur's mlp.csv "
                       "header)",
                       col_names[c]);
  /* A model without an operator (phi-2's parallel block has no
   * post-attention norm) has no column for it; one operator at least. */
  for (int k = 0; k < VOP_COUNT; k++)
    if (R->op_col[k] >= 0)
      return true;
  return diag_fail(R->d, R->path, (Loc){1, 1},
                   "no column 'time_stats.OP.median' for any operator "
                   "(expected Vidur's mlp.csv header)");
}

/* The column of field I on a line whose fields start at F. */
static int column_of(char **f, int i, const char *line) {
  return (int)(f[i] - line) + 1;
}

static bool number(const Reader *R, char **f, int i, const char *line,
                   int ln, double *out) {
  char *end;
  errno = 0;
  *out = strtod(f[i], &end);
  if (f[i][0] == 0 || *end != 0 || errno || !(*out >= 0) || *out > 1e15)
    return diag_fail(R->d, R->path, (Loc){ln, column_of(f, i, line)},
                     "expected a non-negative number, found '%s'", f[i]);
  return true;
}

static bool count(const Reader *R, char **f, int i, const char *line,
                  int ln, int *out) {
  double v;
  if (!number(R, f, i, line, ln, &v))
    return false;
  if (v < 1 || v > 1 << 30 || v != floor(v))
    return diag_fail(R->d, R->path, (Loc){ln, column_of(f, i, line)},
                     "expected a positive integer (at most 2^30), found '%s'",
                     f[i]);
  *out = (int)v;
  return true;
}

/* One data line LINE (number LN; its copy ORIG for columns) into ROW. */
static bool read_row(const Reader *R, char *line, int ln, VidurRow *row) {
  char *f[512];
  const char *start = line;
  int n = split(line, f, 512);
  if (n != R->nfields || n > 512)
    return diag_fail(R->d, R->path, (Loc){ln, 1},
                     "expected %d fields as the header has, found %d",
                     R->nfields, n);
  int *sizes[] = {&row->heads, &row->kv_heads, &row->embd, &row->expanded,
                  &row->vocab};
  for (int c = 0; c <= COL_VOCAB; c++)
    if (!count(R, f, R->col[c], start, ln, sizes[c]))
      return false;
  const char *g = f[R->col[COL_GATED]];
  if (strcmp(g, "True") != 0 && strcmp(g, "False") != 0)
    return diag_fail(R->d, R->path,
                     (Loc){ln, column_of(f, R->col[COL_GATED], start)},
                     "expected True or False, found '%s'", g);
  row->gated = g[0] == 'T';
  if (!count(R, f, R->col[COL_TOKENS], start, ln, &row->tokens) ||
      !count(R, f, R->col[COL_TP], start, ln, &row->tp))
    return false;
  for (int k = 0; k < VOP_COUNT; k++) {
    row->measured_ms[k] = NAN;
    if (R->op_col[k] >= 0 &&
        !number(R, f, R->op_col[k], start, ln, &row->measured_ms[k]))
      return false;
  }
  /* Vidur's block without a post-attention norm adds the attention's
   * and the MLP's outputs to the residual at once (mlp_impl.py). */
  row->add_inputs = R->op_col[VOP_POST_NORM] >= 0 ? 2 : 3;
  if (row->embd % row->heads || row->heads % row->tp ||
      row->kv_heads % row->tp || row->expanded % row->tp)
    return diag_fail(R->d, R->path, (Loc){ln, 1},
                     "sizes that %d GPUs cannot shard: n_embd %d over %d "
                     "heads, %d KV heads, n_expanded_embd %d",
                     row->tp, row->embd, row->heads, row->kv_heads,
                     row->expanded);
  row->line = ln;
  return true;
}

static char *dup_n(const char *s, size_t n) {
  char *p = xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

/* The folders naming PATH's GPU and model: .../GPU/ORG/MODEL/FILE. */
static void name_file(VidurFile *f) {
  const char *part[4] = {NULL};
  int n = 0;
  for (const char *p = f->path + strlen(f->path); p > f->path; p--)
    if (p[-1] == '/' && n < 4)
      part[n++] = p;
  if (n == 3 && f->path[0] != '/')
    part[n++] = f->path; /* GPU/ORG/MODEL/FILE, relative */
  /* part[0]: FILE, part[1]: MODEL/FILE, part[2]: ORG/..., part[3]: GPU/... */
  f->gpu = xstrdup("");
  f->model = xstrdup("");
  if (n < 4)
    return;
  free(f->gpu);
  free(f->model);
  f->gpu = dup_n(part[3], (size_t)(part[2] - part[3] - 1));
  f->model = dup_n(part[2], (size_t)(part[0] - part[2] - 1));
}

static bool read_one(const char *path, VidurFile *out, Diag *d) {
  size_t len;
  char *text = read_input(path, INPUT_TEXT_MAX, &len, d);
  if (!text)
    return false;
  *out = (VidurFile){.path = xstrdup(path)};
  name_file(out);
  Reader R = {.path = path, .d = d};
  int cap = 0, ln = 0;
  bool ok = true;
  char *save = text;
  for (char *line = text; ok && line && *line; ln++) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = 0;
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r')
      line[n - 1] = 0;
    if (ln == 0) {
      char *f[512];
      int nf = split(line, f, 512);
      ok = nf <= 512 ? read_header(&R, f, nf)
                     : diag_fail(d, path, (Loc){1, 1}, "too many columns");
    } else if (*line) {
      VidurRow row = {0};
      ok = read_row(&R, line, ln + 1, &row);
      if (ok)
        VEC_PUSH(out->rows, out->nrows, cap, row);
    }
    line = nl ? nl + 1 : NULL;
  }
  free(save);
  if (ok && ln == 0)
    ok = diag_fail(d, path, (Loc){1, 1}, "empty file: expected Vidur's "
                                         "mlp.csv header");
  return ok;
}

static int by_path(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every mlp.csv under DIR into PATHS (N of CAP). */
static void find_csv(const char *dir, char ***paths, int *n, int *cap) {
  DIR *dh = opendir(dir);
  if (!dh)
    return;
  struct dirent *de;
  while ((de = readdir(dh))) {
    if (de->d_name[0] == '.')
      continue;
    size_t len = strlen(dir) + strlen(de->d_name) + 2;
    char *p = xmalloc(len);
    snprintf(p, len, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      find_csv(p, paths, n, cap);
      free(p);
    } else if (strcmp(de->d_name, "mlp.csv") == 0) {
      VEC_PUSH(*paths, *n, *cap, p);
    } else {
      free(p);
    }
  }
  closedir(dh);
}

bool vidur_read(const char *path, VidurSet *out, Diag *d) {
  *out = (VidurSet){0};
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    out->files = xcalloc(1, sizeof *out->files);
    out->n = 1;
    return read_one(path, &out->files[0], d);
  }
  char **paths = NULL;
  int n = 0, cap = 0;
  size_t len = strlen(path);
  char *dir = dup_n(path, len > 1 && path[len - 1] == '/' ? len - 1 : len);
  find_csv(dir, &paths, &n, &cap);
  free(dir);
  qsort(paths, (size_t)n, sizeof *paths, by_path);
  bool ok = n > 0 || diag_fail(d, path, (Loc){0, 0},
                               "no file named mlp.csv under this folder");
  out->files = xcalloc((size_t)n + 1, sizeof *out->files);
  for (int i = 0; ok && i < n; i++) {
    ok = read_one(paths[i], &out->files[i], d);
    out->n = i + 1;
  }
  for (int i = 0; i < n; i++)
    free(paths[i]);
  free(paths);
  return ok;
}

void vidur_free(VidurSet *s) {
  for (int i = 0; i < s->n; i++) {
    free(s->files[i].path);
    free(s->files[i].gpu);
    free(s->files[i].model);
    free(s->files[i].rows);
  }
  free(s->files);
  *s = (VidurSet){0};
}
