/* exec.h — running cascades on real tensors.
 *
 * Arrays are dense fp32 tensors. Weights and results travel as
 * safetensors files (8-byte little-endian header length, a JSON header of
 * {name: {dtype, shape, data_offsets}}, raw little-endian data), read
 * strictly: a malformed file is rejected with a message, never half-read.
 * A model directory holds config.json (state-spaces or Hugging Face keys)
 * and model.safetensors, as Mamba checkpoints are distributed. */
#ifndef MAMBALAYA_EXEC_H
#define MAMBALAYA_EXEC_H

#include "../fusion/fusion.h"
#include "../ir/ir.h"

/* ---- arrays ---- */

typedef struct Array {
  int ndim;
  int64_t shape[IR_MAX_RANKS];
  int64_t n;   /* number of elements: the product of shape */
  float *data; /* row-major, owned */
} Array;

/* A zero-filled array; NULL if the size overflows. */
Array *array_new(int ndim, const int64_t *shape);
Array *array_clone(const Array *a);
void array_free(Array *a);

/* ---- safetensors ---- */

typedef enum { DT_F32, DT_F16, DT_BF16, DT_F64, DT_COUNT } DType;

const char *dtype_name(DType t); /* "F32", ... */
int dtype_size(DType t);         /* bytes per element */

typedef struct StEntry {
  const char *name;
  DType dtype;
  int ndim;
  int64_t shape[IR_MAX_RANKS];
  uint64_t begin, end; /* byte offsets into the data section */
} StEntry;

typedef struct StFile {
  const char *path;
  unsigned char *bytes; /* the whole file, owned */
  size_t len;
  size_t data_start; /* 8 + the header's length */
  int n;
  StEntry *entries; /* in the order of their data */
  int nmeta;
  const char **meta_keys, **meta_values; /* __metadata__ */
  Arena arena;
} StFile;

/* Parse a safetensors image (BYTES is copied). Rejects, with a message
 * naming the file and the problem: a file shorter than 8 bytes, a header
 * length past the end, a header that is not a JSON object (or has
 * duplicate keys), an entry without dtype/shape/data_offsets or with
 * extra fields, an unknown dtype, a negative or huge dimension, offsets
 * out of range, overlapping, or leaving holes, and a byte size that does
 * not match dtype x shape. */
StFile *st_parse(const char *path, const unsigned char *bytes, size_t len,
                 Diag *d);
StFile *st_open(const char *path, Diag *d);
void st_close(StFile *f);
const StEntry *st_find(const StFile *f, const char *name);
/* The tensor converted to fp32 (F16, BF16 and F64 are converted). */
Array *st_array(const StFile *f, const StEntry *e);

/* Writing: add arrays (stored as F32, or converted to F16/BF16), then
 * save atomically (a temporary file renamed into place). */
typedef struct StWriter StWriter;
StWriter *st_writer_new(void);
/* The array is copied. Names must be unique. */
void st_writer_add(StWriter *w, const char *name, const Array *a, DType as);
void st_writer_meta(StWriter *w, const char *key, const char *value);
bool st_writer_save(const StWriter *w, const char *path, Diag *d);
void st_writer_free(StWriter *w);

/* ---- model configurations ---- */

typedef struct ModelConfig {
  int version; /* 1 (Mamba) or 2 (Mamba-2) */
  int d_model, n_layer, vocab;
  int d_state, d_conv, expand, d_inner;
  int dt_rank;           /* Mamba-1 */
  int headdim, nheads, ngroups; /* Mamba-2 */
} ModelConfig;

/* Read config.json in either published form: state-spaces
 * ({"d_model", "n_layer", "vocab_size", "ssm_cfg": {"layer": "Mamba2",
 * ...}}) or Hugging Face ({"model_type": "mamba"|"mamba2",
 * "hidden_size", "num_hidden_layers", "state_size", ...}). Defaults are
 * the published ones (d_state 16 / 128, d_conv 4, expand 2, headdim 64,
 * ngroups 1, dt_rank ceil(d_model/16)). */
bool model_config_load(const char *path, ModelConfig *cfg, Diag *d);
void model_config_from_preset(const Preset *p, ModelConfig *cfg);
/* Write config.json in the state-spaces form. */
bool model_config_save(const ModelConfig *cfg, const char *path, Diag *d);

#endif
