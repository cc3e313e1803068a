/* cmd_tensors.c — `mambalaya tensors FILE`: what a safetensors file holds. */
#include "cli.h"

#include "../exec/exec.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct TensorsArgs {
  const char *path;
  bool json;
} TensorsArgs;

static const Opt tensors_opts[] = {
    {"FILE", OPT_PATH, offsetof(TensorsArgs, path), NULL,
     .flags = OPT_POSITIONAL},
    {"--json", OPT_FLAG, offsetof(TensorsArgs, json), NULL,
     .help = "print JSON: {\"file\", \"header_bytes\", \"data_bytes\", "
             "\"metadata\": {KEY: VALUE}, \"tensors\": [{\"name\", \"dtype\", "
             "\"shape\", \"data_offsets\"}]}"},
};
static const OptTable tensors_table = OPT_TABLE(tensors_opts);

static void shape_str(Buf *b, const StEntry *e) {
  buf_printf(b, "[");
  for (int k = 0; k < e->ndim; k++)
    buf_printf(b, "%s%lld", k ? ", " : "", (long long)e->shape[k]);
  buf_printf(b, "]");
}

/* Names and metadata come from the file: control characters in them are
 * escaped (\xNN), so that a crafted file cannot drive the terminal. */
static void list_text(Buf *b, const StFile *f) {
  buf_escaped(b, f->path);
  buf_printf(b, ": %d tensor%s, %zu data bytes, header %zu bytes\n", f->n,
             f->n == 1 ? "" : "s", f->len - f->data_start, f->data_start - 8);
  if (f->nmeta) {
    buf_printf(b, "metadata:\n");
    for (int i = 0; i < f->nmeta; i++) {
      buf_printf(b, "  ");
      buf_escaped(b, f->meta_keys[i]);
      buf_printf(b, ": ");
      buf_escaped(b, f->meta_values[i]);
      buf_printf(b, "\n");
    }
  }
  if (!f->n)
    return;
  /* Column widths: the shapes are rendered first to measure them. */
  Buf *shapes = xcalloc((size_t)f->n, sizeof *shapes);
  int wname = (int)strlen("name"), wshape = (int)strlen("shape");
  for (int i = 0; i < f->n; i++) {
    shape_str(&shapes[i], &f->entries[i]);
    int n = (int)escaped_len(f->entries[i].name);
    wname = n > wname ? n : wname;
    wshape = (int)shapes[i].len > wshape ? (int)shapes[i].len : wshape;
  }
  buf_printf(b, "%-*s  %-5s  %-*s  bytes\n", wname, "name", "dtype", wshape,
             "shape");
  for (int i = 0; i < f->n; i++) {
    const StEntry *e = &f->entries[i];
    buf_escaped(b, e->name);
    buf_printf(b, "%*s  %-5s  %-*s  [%llu, %llu)\n",
               wname - (int)escaped_len(e->name), "", dtype_name(e->dtype),
               wshape, shapes[i].s,
               (unsigned long long)e->begin, (unsigned long long)e->end);
    buf_free(&shapes[i]);
  }
  free(shapes);
}

static json_t *list_json(const StFile *f) {
  json_t *meta = json_object();
  for (int i = 0; i < f->nmeta; i++)
    json_object_set_new(meta, f->meta_keys[i], json_string(f->meta_values[i]));
  json_t *tensors = json_array();
  for (int i = 0; i < f->n; i++) {
    const StEntry *e = &f->entries[i];
    json_t *shape = json_array();
    for (int k = 0; k < e->ndim; k++)
      json_array_append_new(shape, json_integer((json_int_t)e->shape[k]));
    json_array_append_new(
        tensors, json_pack("{s:s, s:s, s:o, s:[II]}", "name", e->name, "dtype",
                           dtype_name(e->dtype), "shape", shape, "data_offsets",
                           (json_int_t)e->begin, (json_int_t)e->end));
  }
  return json_pack("{s:s, s:I, s:I, s:o, s:o}", "file", f->path, "header_bytes",
                   (json_int_t)(f->data_start - 8), "data_bytes",
                   (json_int_t)(f->len - f->data_start), "metadata", meta,
                   "tensors", tensors);
}

static int tensors(const Parsed *p, void *opts) {
  const TensorsArgs *o = opts;
  /* The file is read whole: it must fit the memory available. */
  struct stat st;
  int err;
  if (stat(o->path, &st) == 0 && S_ISREG(st.st_mode) &&
      (err = check_memory(p->cmd, "reading the file", (double)st.st_size,
                          memory_budget(0), false)))
    return err;
  Diag d = {0};
  StFile *f = st_open(o->path, &d);
  if (!f)
    return input_failed(&d);
  Buf b = {0};
  if (o->json) {
    json_t *j = list_json(f);
    report_json(&b, j);
    json_decref(j);
  } else {
    list_text(&b, f);
  }
  emit(&b);
  buf_free(&b);
  st_close(f);
  return 0;
}

const Command tensors_command = {
    "tensors", "list the tensors of a safetensors file",
    .about =
        "List the tensors of the safetensors file FILE, in the order of their\n"
        "data: name, dtype, shape and byte range [begin, end) in the data\n"
        "section, and the file's __metadata__. The file is checked strictly\n"
        "(the tensors must tile the data section exactly); a malformed file\n"
        "is reported as FILE: error: MESSAGE with exit status 2.\n",
    .opts = &tensors_table,
    .notes = "Names and metadata are printed with control characters escaped "
             "as\n\\xNN (JSON escapes them its own way).\n",
    .example = "mambalaya tensors m/model.safetensors\n",
    .size = sizeof(TensorsArgs), .run = tensors,
};
