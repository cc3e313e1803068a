/* test_safetensors.c — arrays, and safetensors files: writing, reading
 * back, reading files written byte by byte here, and strict rejection. */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../src/exec/exec.h"
#include "test.h"

/* A scratch file name unique to this process. */
static void scratch(char *out, size_t cap, const char *tag) {
  snprintf(out, cap, "/tmp/mambalaya-unit-%ld-%s.safetensors", (long)getpid(),
           tag);
}

static uint32_t bits32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static Array *vec(int n, const float *v) {
  int64_t shape[1] = {n};
  Array *a = array_new(1, shape);
  memcpy(a->data, v, (size_t)n * sizeof(float));
  return a;
}

/* The 16-bit words of tensor E as stored in F. */
static uint16_t word16(const StFile *f, const StEntry *e, int i) {
  const unsigned char *p = f->bytes + f->data_start + e->begin + 2 * i;
  return (uint16_t)(p[0] | p[1] << 8);
}

/* Write A as DT, read it back: the file and its one entry (named "t"). */
static StFile *through_file(const Array *a, DType dt, const char *tag) {
  char path[256];
  scratch(path, sizeof path, tag);
  StWriter *w = st_writer_new();
  st_writer_add(w, "t", a, dt);
  Diag d = {0};
  CHECK(st_writer_save(w, path, &d));
  st_writer_free(w);
  StFile *f = st_open(path, &d);
  remove(path);
  if (!f)
    test_fail(__FILE__, __LINE__, "cannot read back: %s", d.msg);
  return f;
}

/* ---- arrays ---- */

TEST(array_new_zeroed_clone_and_overflow) {
  int64_t shape[3] = {2, 3, 4};
  Array *a = array_new(3, shape);
  CHECK_INT(a->n, 24);
  CHECK_INT(a->ndim, 3);
  CHECK_INT(a->shape[2], 4);
  float sum = 0;
  for (int i = 0; i < 24; i++)
    sum += a->data[i] * a->data[i];
  CHECK(sum == 0);
  a->data[5] = 7;
  Array *b = array_clone(a);
  a->data[5] = 1;
  CHECK(b->data[5] == 7);
  CHECK_INT(b->n, 24);
  array_free(a);
  array_free(b);

  Array *s = array_new(0, NULL); /* a scalar */
  CHECK_INT(s->n, 1);
  CHECK(s->data[0] == 0);
  array_free(s);

  int64_t empty[2] = {0, 5};
  Array *e = array_new(2, empty);
  CHECK_INT(e->n, 0);
  array_free(e);

  int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
  CHECK(array_new(2, huge) == NULL);
  int64_t neg[1] = {-1};
  CHECK(array_new(1, neg) == NULL);
  array_free(NULL);
}

/* ---- writing and reading back ---- */

TEST(st_round_trip_f32_exact_with_metadata) {
  const float v[6] = {0.0f, -0.0f, 0x1p-149f, FLT_MAX, -1.5f, 3.14159274f};
  int64_t shape[2] = {2, 3};
  Array *a = array_new(2, shape);
  memcpy(a->data, v, sizeof v);
  Array *scalar = array_new(0, NULL);
  scalar->data[0] = 42;
  int64_t eshape[2] = {0, 4};
  Array *empty = array_new(2, eshape);

  char path[256];
  scratch(path, sizeof path, "f32");
  StWriter *w = st_writer_new();
  st_writer_add(w, "layers.0.weight", a, DT_F32);
  st_writer_add(w, "scalar", scalar, DT_F32);
  st_writer_add(w, "empty", empty, DT_F32);
  st_writer_meta(w, "format", "pt");
  st_writer_meta(w, "note", "d\xc3\xa9j\xc3\xa0 \"vu\"");
  a->data[0] = 99; /* the writer holds its own copy */
  Diag d = {0};
  CHECK(st_writer_save(w, path, &d));
  st_writer_free(w);

  StFile *f = st_open(path, &d);
  CHECK(f != NULL);
  if (f) {
    CHECK_INT(f->n, 3);
    CHECK_INT(f->data_start % 8, 0); /* the header is padded */
    CHECK_INT(f->len, f->data_start + 24 + 4);
    /* In the order of their data (here, the order they were added). */
    CHECK_STR(f->entries[0].name, "layers.0.weight");
    CHECK_STR(f->entries[1].name, "scalar");
    CHECK_STR(f->entries[2].name, "empty");
    CHECK_INT(f->entries[0].begin, 0);
    CHECK_INT(f->entries[0].end, 24);
    CHECK_INT(f->entries[1].begin, 24);
    CHECK_INT(f->entries[1].ndim, 0);
    CHECK_INT(f->entries[2].begin, 28);
    CHECK_INT(f->entries[2].end, 28);
    CHECK_INT(f->entries[2].shape[1], 4);
    CHECK_INT(f->nmeta, 2);
    CHECK_STR(f->meta_keys[0], "format");
    CHECK_STR(f->meta_values[0], "pt");
    CHECK_STR(f->meta_values[1], "d\xc3\xa9j\xc3\xa0 \"vu\"");
    /* The header's JSON is compact and in insertion order. */
    CHECK(memcmp(f->bytes + 8, "{\"__metadata__\":{\"format\":\"pt\"", 30) ==
          0);

    const StEntry *e = st_find(f, "layers.0.weight");
    CHECK(e == &f->entries[0]);
    CHECK(st_find(f, "layers.0") == NULL);
    CHECK(st_find(f, "missing") == NULL);
    Array *r = st_array(f, e);
    CHECK_INT(r->ndim, 2);
    CHECK_INT(r->shape[0], 2);
    CHECK_INT(r->shape[1], 3);
    for (int i = 0; i < 6; i++)
      CHECK_INT(bits32(r->data[i]), bits32(v[i])); /* -0 and subnormal too */
    array_free(r);
    Array *rs = st_array(f, st_find(f, "scalar"));
    CHECK_INT(rs->n, 1);
    CHECK(rs->data[0] == 42);
    array_free(rs);
    Array *re = st_array(f, st_find(f, "empty"));
    CHECK_INT(re->n, 0);
    array_free(re);
  }
  st_close(f);
  remove(path);
  array_free(a);
  array_free(scalar);
  array_free(empty);
}

TEST(st_f16_known_conversions) {
  /* value, its binary16 encoding, the value read back */
  static const struct {
    float in;
    uint16_t half;
    float out;
  } cases[] = {
      {1.0f, 0x3c00, 1.0f},
      {-2.5f, 0xc100, -2.5f},
      {65504.0f, 0x7bff, 65504.0f},         /* the largest half */
      {65519.0f, 0x7bff, 65504.0f},         /* below the tie: rounds down */
      {65520.0f, 0x7c00, INFINITY},         /* the tie rounds to even: inf */
      {0x1p-24f, 0x0001, 0x1p-24f},         /* the smallest subnormal */
      {0x1.ff8p-15f, 0x03ff, 0x1.ff8p-15f}, /* the largest subnormal */
      {0x1p-14f, 0x0400, 0x1p-14f},         /* the smallest normal */
      {0x1p-25f, 0x0000, 0.0f},             /* a tie between 0 and 2^-24: 0 */
      {0x1.8p-25f, 0x0001, 0x1p-24f},       /* above the tie */
      {0x1.8p-24f, 0x0002, 0x1p-23f},       /* 1.5 ulp: a tie, to even (2) */
      {0x1.002p0f, 0x3c00, 1.0f},           /* 1 + 2^-11: a tie, to even */
      {0x1.006p0f, 0x3c02, 0x1.008p0f},     /* 1 + 3*2^-11: a tie, up to even */
      {-0.0f, 0x8000, -0.0f},
      {INFINITY, 0x7c00, INFINITY},
      {-INFINITY, 0xfc00, -INFINITY},
      {1e-10f, 0x0000, 0.0f},
  };
  enum { N = sizeof cases / sizeof cases[0] };
  float v[N + 1];
  for (int i = 0; i < N; i++)
    v[i] = cases[i].in;
  v[N] = NAN;
  Array *a = vec(N + 1, v);
  StFile *f = through_file(a, DT_F16, "f16");
  if (f) {
    const StEntry *e = st_find(f, "t");
    CHECK_INT(e->dtype, DT_F16);
    CHECK_INT(e->end - e->begin, 2 * (N + 1));
    Array *r = st_array(f, e);
    for (int i = 0; i < N; i++) {
      if (word16(f, e, i) != cases[i].half)
        test_fail(__FILE__, __LINE__, "f16(%a) = 0x%04x, expected 0x%04x",
                  (double)cases[i].in, word16(f, e, i), cases[i].half);
      if (bits32(r->data[i]) != bits32(cases[i].out))
        test_fail(__FILE__, __LINE__, "f16 0x%04x read as %a, expected %a",
                  cases[i].half, (double)r->data[i], (double)cases[i].out);
    }
    CHECK_INT(word16(f, e, N) & 0x7e00, 0x7e00); /* a quiet NaN */
    CHECK(isnan(r->data[N]));
    array_free(r);
  }
  st_close(f);
  array_free(a);
}

TEST(st_bf16_rounds_to_nearest_even) {
  static const struct {
    float in;
    uint16_t bf;
  } cases[] = {
      {1.0f, 0x3f80},        {-2.5f, 0xc020},
      {0x1.01p0f, 0x3f80},   /* 1 + 2^-8: a tie, kept bit even: down */
      {0x1.03p0f, 0x3f82},   /* 1 + 3*2^-8: a tie, kept bit odd: up */
      {0x1.0101p0f, 0x3f81}, /* just above the tie: up */
      {0x1.00fep0f, 0x3f80}, /* just below the tie: down */
      {FLT_MAX, 0x7f80},     /* rounds past the largest bf16: inf */
      {INFINITY, 0x7f80},    {-0.0f, 0x8000},
      {0x1p-133f, 0x0001}, /* f32 subnormals keep their top bits */
  };
  enum { N = sizeof cases / sizeof cases[0] };
  float v[N + 1];
  for (int i = 0; i < N; i++)
    v[i] = cases[i].in;
  v[N] = NAN;
  Array *a = vec(N + 1, v);
  StFile *f = through_file(a, DT_BF16, "bf16");
  if (f) {
    const StEntry *e = st_find(f, "t");
    CHECK_INT(e->dtype, DT_BF16);
    Array *r = st_array(f, e);
    for (int i = 0; i < N; i++) {
      if (word16(f, e, i) != cases[i].bf)
        test_fail(__FILE__, __LINE__, "bf16(%a) = 0x%04x, expected 0x%04x",
                  (double)cases[i].in, word16(f, e, i), cases[i].bf);
      /* Reading widens exactly: the bits shifted up. */
      CHECK_INT(bits32(r->data[i]), (uint32_t)cases[i].bf << 16);
    }
    CHECK_INT(word16(f, e, N), 0x7fc0);
    CHECK(isnan(r->data[N]));
    array_free(r);
  }
  st_close(f);
  array_free(a);
}

TEST(st_writer_empty_file_and_dtype_names) {
  char path[256];
  scratch(path, sizeof path, "empty");
  StWriter *w = st_writer_new();
  Diag d = {0};
  CHECK(st_writer_save(w, path, &d));
  st_writer_free(w);
  size_t len;
  char *bytes = read_file(path, &len);
  remove(path);
  CHECK_INT(len, 16);
  if (bytes && len == 16)
    CHECK(memcmp(bytes, "\x08\0\0\0\0\0\0\0{}      ", 16) == 0);
  free(bytes);

  CHECK_STR(dtype_name(DT_F32), "F32");
  CHECK_STR(dtype_name(DT_BF16), "BF16");
  CHECK_INT(dtype_size(DT_F16), 2);
  CHECK_INT(dtype_size(DT_F64), 8);

  /* A failed save is a diagnostic naming the file. */
  w = st_writer_new();
  Diag e = {0};
  CHECK(!st_writer_save(w, "/nonexistent-dir/x.safetensors", &e));
  CHECK_STR(e.file, "/nonexistent-dir/x.safetensors");
  CHECK(strstr(e.msg, "cannot write") != NULL);
  st_writer_free(w);
}

/* ---- files written byte by byte, independently of the writer ---- */

/* A safetensors image: the header's length (little-endian), HEADER as
 * given (no padding), then DATA. */
static unsigned char *image(const char *header, const unsigned char *data,
                            size_t dlen, size_t *len) {
  size_t h = strlen(header);
  *len = 8 + h + dlen;
  unsigned char *b = malloc(*len ? *len : 1);
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)((uint64_t)h >> (8 * i));
  memcpy(b + 8, header, h);
  if (dlen)
    memcpy(b + 8 + h, data, dlen);
  return b;
}

static void put_le(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void put_f64(unsigned char *p, double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  put_le(p, u, 8);
}

TEST(st_reads_independently_written_file) {
  /* Entries out of data order, fields in any order, metadata in the
   * middle, an empty tensor sharing an offset, F32 data at an offset that
   * is not a multiple of 4, and a header that is not padded and ends in
   * JSON whitespace. */
  const char *good =
      "{\"b\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [24, "
      "28]},"
      " \"__metadata__\": {\"format\": \"pt\", \"empty\": \"\"},"
      " \"a\": {\"data_offsets\": [0, 24], \"shape\": [3], \"dtype\": \"F64\"},"
      " \"c\": {\"dtype\": \"BF16\", \"shape\": [1, 1], \"data_offsets\": "
      "[28, 30]},"
      " \"z\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [30, "
      "30]},"
      " \"d\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [30, 38]}"
      "}\n\t ";
  unsigned char data[38];
  put_f64(data, 0.1);
  put_f64(data + 8, 1e300);         /* beyond fp32: inf */
  put_f64(data + 16, -1e-300);      /* below fp32: -0 */
  put_le(data + 24, 0x3c00, 2);     /* F16 1.0 */
  put_le(data + 26, 0xc100, 2);     /* F16 -2.5 */
  put_le(data + 28, 0xc020, 2);     /* BF16 -2.5 */
  put_le(data + 30, 0x3f800000, 4); /* F32 1.0 */
  put_le(data + 34, 0xbf000000, 4); /* F32 -0.5 */
  size_t len;
  unsigned char *bytes = image(good, data, sizeof data, &len);
  Diag d = {0};
  StFile *f = st_parse("hand.safetensors", bytes, len, &d);
  free(bytes); /* st_parse copied them */
  CHECK(f != NULL);
  if (!f) {
    test_fail(__FILE__, __LINE__, "%s", d.msg);
    return;
  }
  CHECK_STR(f->path, "hand.safetensors");
  CHECK_INT(f->data_start, 8 + strlen(good));
  CHECK_INT(f->n, 5);
  /* Sorted by offset; the empty tensor before the one at the same offset. */
  const char *order[] = {"a", "b", "c", "z", "d"};
  for (int i = 0; i < 5; i++)
    CHECK_STR(f->entries[i].name, order[i]);
  CHECK_INT(f->nmeta, 2);
  CHECK_STR(f->meta_keys[1], "empty");
  CHECK_STR(f->meta_values[1], "");

  Array *a = st_array(f, st_find(f, "a"));
  CHECK(a->data[0] == (float)0.1);
  CHECK(isinf(a->data[1]) && a->data[1] > 0);
  CHECK(a->data[2] == 0 && signbit(a->data[2]));
  array_free(a);
  const StEntry *eb = st_find(f, "b");
  CHECK_INT(eb->dtype, DT_F16);
  Array *b = st_array(f, eb);
  CHECK(b->data[0] == 1.0f && b->data[1] == -2.5f);
  array_free(b);
  const StEntry *ec = st_find(f, "c");
  CHECK_INT(ec->ndim, 2);
  Array *c = st_array(f, ec);
  CHECK_INT(c->n, 1);
  CHECK(c->data[0] == -2.5f);
  array_free(c);
  Array *dd = st_array(f, st_find(f, "d"));
  CHECK(dd->data[0] == 1.0f && dd->data[1] == -0.5f);
  array_free(dd);
  st_close(f);

  /* No tensors at all: "{}" and an empty data section. */
  bytes = image("{}", NULL, 0, &len);
  f = st_parse("empty.safetensors", bytes, len, &d);
  free(bytes);
  CHECK(f != NULL);
  if (f)
    CHECK_INT(f->n, 0);
  st_close(f);
}

/* The message the image (HEADER, then DLEN zero bytes) is rejected with. */
static void expect_reject(int line, const char *header, size_t dlen,
                          const char *part) {
  unsigned char *zeros = calloc(dlen ? dlen : 1, 1);
  size_t len;
  unsigned char *bytes = image(header, zeros, dlen, &len);
  Diag d = {0};
  StFile *f = st_parse("bad.safetensors", bytes, len, &d);
  if (f)
    test_fail(__FILE__, line, "accepted, expected '%s'", part);
  else if (!strstr(d.msg, part))
    test_fail(__FILE__, line, "message '%s' lacks '%s'", d.msg, part);
  else if (strcmp(d.file, "bad.safetensors") != 0 || d.loc.line != 0)
    test_fail(__FILE__, line, "diagnostic at '%s' line %d", d.file, d.loc.line);
  st_close(f);
  free(bytes);
  free(zeros);
}

#define ENTRY(dt, shape, offs)                                                 \
  "{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":" offs "}"

TEST(st_rejects_malformed_headers) {
  expect_reject(__LINE__, "[]", 0, "the header is an array, not a JSON object");
  expect_reject(__LINE__, "\n{}", 0, "header must start with '{', found \\x0a");
  expect_reject(__LINE__, " {}", 0, "header must start with '{', found ' '");
  expect_reject(__LINE__, "{\"a\":", 0, "the header is not valid JSON");
  expect_reject(__LINE__, "{} x", 0, "the header is not valid JSON");
  expect_reject(__LINE__, "{\"\xff\":1}", 0, "the header is not valid JSON");
  expect_reject(__LINE__, "{\"a\":1,\"a\":2}", 0, "duplicate key");
  expect_reject(__LINE__,
                "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],"
                "\"data_offsets\":[0,4]}}",
                4, "duplicate key");
  expect_reject(__LINE__, "{\"__metadata__\":[]}", 0,
                "__metadata__ is an array, not an object of strings");
  expect_reject(__LINE__, "{\"__metadata__\":{\"k\":1}}", 0,
                "__metadata__ 'k' is a number, not a string");
  expect_reject(__LINE__, "{\"a\":[]}", 0,
                "tensor 'a': entry is an array, not an object");
  expect_reject(__LINE__, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
                "tensor 'a': missing \"data_offsets\"");
  expect_reject(
      __LINE__,
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
      "\"x\":1}}",
      4, "tensor 'a': unexpected field 'x'");
  expect_reject(__LINE__, "{\"a\":" ENTRY("I64", "[1]", "[0,8]") "}", 8,
                "tensor 'a': unsupported dtype 'I64'");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F17", "[1]", "[0,4]") "}", 4,
                "tensor 'a': unknown dtype 'F17'");
  expect_reject(__LINE__,
                "{\"a\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                "tensor 'a': dtype is a number, not a string");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[-1]", "[0,4]") "}", 4,
                "tensor 'a': shape[0] is not a non-negative integer");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[1.5]", "[0,4]") "}", 4,
                "shape[0] is not a non-negative integer");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "{}", "[0,4]") "}", 4,
                "shape is an object, not an array");
  expect_reject(__LINE__,
                "{\"a\":" ENTRY("F32", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
                                "[0,4]") "}",
                4, "shape has 17 dimensions (at most 16)");
  expect_reject(
      __LINE__,
      "{\"a\":" ENTRY("F32", "[4294967296,4294967296,4294967296]", "[0,4]") "}",
      4, "has too many elements");
  /* A zero does not hide a huge dimension, in either order. */
  expect_reject(__LINE__,
                "{\"a\":" ENTRY("F32", "[4611686018427387904,0]", "[0,0]") "}",
                0, "shape [4611686018427387904, 0] has too many elements");
  expect_reject(__LINE__,
                "{\"a\":" ENTRY("F32", "[0,4611686018427387904]", "[0,0]") "}",
                0, "shape [0, 4611686018427387904] has too many elements");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[1]", "[0]") "}", 4,
                "data_offsets must be an array [begin, end]");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[1]", "[0,-4]") "}", 4,
                "data_offsets must be two non-negative integers");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[0]", "[4,0]") "}", 4,
                "data_offsets [4, 0] end before they begin");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[3]", "[0,10]") "}", 10,
                "tensor 'a': data_offsets [0, 10] hold 10 bytes but F32 [3] "
                "needs 12");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F16", "[]", "[0,1]") "}", 1,
                "hold 1 bytes but F16 [] needs 2");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[2]", "[0,8]") "}", 4,
                "tensor 'a': data_offsets [0, 8] run past the end of the data "
                "section (4 bytes)");
  expect_reject(__LINE__,
                "{\"a\":" ENTRY("F32", "[2]", "[0,8]") ",\"b\":" ENTRY(
                    "F32", "[2]", "[4,12]") "}",
                12, "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  expect_reject(__LINE__,
                "{\"a\":" ENTRY("F32", "[1]", "[0,4]") ",\"b\":" ENTRY(
                    "F32", "[1]", "[8,12]") "}",
                12, "bytes [4, 8) of the data section belong to no tensor");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[1]", "[4,8]") "}", 8,
                "bytes [0, 4) of the data section belong to no tensor");
  expect_reject(__LINE__, "{\"a\":" ENTRY("F32", "[1]", "[0,4]") "}", 6,
                "2 trailing bytes");
  expect_reject(__LINE__, "{}", 3, "3 trailing bytes");
  /* Long names in messages are cut. */
  char longname[400];
  snprintf(longname, sizeof longname, "{\"%0300d\":[]}", 7);
  expect_reject(__LINE__, longname, 0,
                "0000...': entry is an array, not an object");
  /* Names in messages are made printable. */
  expect_reject(__LINE__, "{\"a\\nb\":" ENTRY("F32", "[1]", "[0,4]") "}", 0,
                "tensor 'a\\x0ab'");
}

TEST(st_rejects_bad_frames) {
  Diag d = {0};
  const unsigned char short_file[5] = {1, 0, 0, 0, 0};
  CHECK(st_parse("s.safetensors", short_file, 5, &d) == NULL);
  CHECK(strstr(d.msg, "file is 5 bytes, too short") != NULL);

  unsigned char past[12] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
  Diag d2 = {0};
  CHECK(st_parse("p.safetensors", past, 12, &d2) == NULL);
  CHECK_STR(d2.msg,
            "header length 100 runs past the end of the file (12 bytes)");

  unsigned char huge[10] = {0, 0, 0, 0, 0, 0, 0, 0x80, '{', '}'};
  Diag d3 = {0};
  CHECK(st_parse("h.safetensors", huge, 10, &d3) == NULL);
  CHECK(strstr(d3.msg, "header length 9223372036854775808 is absurdly large") !=
        NULL);

  unsigned char zero[8] = {0};
  Diag d4 = {0};
  CHECK(st_parse("z.safetensors", zero, 8, &d4) == NULL);
  CHECK(strstr(d4.msg, "header is empty") != NULL);

  Diag d5 = {0};
  CHECK(st_open("/nonexistent/m.safetensors", &d5) == NULL);
  CHECK_STR(d5.file, "/nonexistent/m.safetensors");
  CHECK(strstr(d5.msg, "cannot read") != NULL);
}

/* ---- tensors used where they lie ---- */

static bool inside(const StFile *f, const void *p) {
  const unsigned char *b = p;
  return b >= f->bytes && b < f->bytes + f->len;
}

/* A mapped file's aligned F32, F16 and BF16 tensors are arrays over the
 * file's own bytes (no copy), equal to st_array's fp32 values; parts of
 * them (array_part) share those bytes too, and array_f32 widens them. */
TEST(st_tensor_in_place) {
  char path[256];
  scratch(path, sizeof path, "inplace");
  const float v[5] = {1.5f, -2.25f, 0.125f, 1024.0f, -0.0f};
  Array *a = vec(5, v);
  StWriter *w = st_writer_new();
  st_writer_add(w, "h", a, DT_F16);
  st_writer_add(w, "b", a, DT_BF16);
  st_writer_add(w, "f", a, DT_F32);
  Diag d = {0};
  CHECK(st_writer_save(w, path, &d));
  st_writer_free(w);
  StFile *f = st_open(path, &d);
  remove(path); /* the mapping stays valid */
  CHECK(f && f->mapped);
  if (!f)
    return;
  const char *names[3] = {"h", "b", "f"};
  const DType types[3] = {DT_F16, DT_BF16, DT_F32};
  for (int k = 0; k < 3; k++) {
    const StEntry *e = st_find(f, names[k]);
    Array *t = st_tensor(f, e);
    CHECK_INT(t->dtype, types[k]);
    CHECK(t->own == NULL);
    CHECK(inside(f, types[k] == DT_F32 ? (const void *)t->data : t->half));
    CHECK(array_bytes(t) == 5.0 * dtype_size(types[k]));
    Array *wide = array_f32(t), *ref = st_array(f, e);
    for (int i = 0; i < 5; i++)
      CHECK(bits32(wide->data[i]) == bits32(ref->data[i]));
    Array *part = array_part(t, 2, 1, (int64_t[]){3});
    CHECK(part && part->own == NULL && part->dtype == types[k]);
    Array *pw = array_f32(part);
    CHECK(pw->data[0] == 0.125f && pw->data[1] == 1024.0f);
    CHECK(array_part(t, 3, 1, (int64_t[]){3}) == NULL); /* past the end */
    /* A clone owns a copy; a part of an owned array is copied. */
    Array *cl = array_clone(t);
    CHECK(cl->own != NULL && cl->dtype == types[k]);
    Array *cp = array_part(cl, 1, 1, (int64_t[]){2});
    CHECK(cp->own != NULL);
    Array *cw = array_f32(cp);
    CHECK(cw->data[0] == -2.25f && cw->data[1] == 0.125f);
    array_free(cw);
    array_free(cp);
    array_free(cl);
    array_free(pw);
    array_free(part);
    array_free(ref);
    array_free(wide);
    array_free(t);
  }
  st_close(f);
  array_free(a);
}

/* Values that are not aligned for their dtype (an F32 tensor after an odd
 * number of 16-bit values) are copied, in their dtype. */
TEST(st_tensor_copies_unaligned) {
  /* The header is padded to 24 bytes, so the data starts at byte 32. */
  const char *header = "{\"b\":{\"dtype\":\"F16\",\"shape\":[1],"
                       "\"data_offsets\":[0,2]},\"d\":{\"dtype\":\"F32\","
                       "\"shape\":[2],\"data_offsets\":[2,10]}}";
  char padded[256];
  size_t h = strlen(header), hp = (h + 7) / 8 * 8;
  memcpy(padded, header, h);
  memset(padded + h, ' ', hp - h);
  padded[hp] = 0;
  unsigned char data[10];
  put_le(data, 0xc100, 2);         /* F16 -2.5 */
  put_le(data + 2, 0x3f800000, 4); /* F32 1.0 */
  put_le(data + 6, 0xbf000000, 4); /* F32 -0.5 */
  size_t len;
  unsigned char *bytes = image(padded, data, sizeof data, &len);
  char path[256];
  scratch(path, sizeof path, "unaligned");
  CHECK(write_file_atomic(path, (const char *)bytes, len));
  free(bytes);
  Diag d = {0};
  StFile *f = st_open(path, &d);
  remove(path);
  CHECK(f != NULL);
  if (!f)
    return;
  Array *b = st_tensor(f, st_find(f, "b"));
  CHECK(b->own == NULL && b->dtype == DT_F16);
  CHECK(dtype_half_value(DT_F16, b->half[0]) == -2.5f);
  Array *t = st_tensor(f, st_find(f, "d"));
  CHECK(t->own != NULL && t->dtype == DT_F32);
  CHECK(t->data[0] == 1.0f && t->data[1] == -0.5f);
  array_free(t);
  array_free(b);
  st_close(f);
}
