/* test_lm.c — the weights: section (row slicing, views, maps, errors with
 * their locations), the decode state's export layout, model sizes with
 * overrides, random weights, and a whole tiny model: prefill + steps equal
 * one pass, and last-token logits equal the full logits' last rows. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/lm/lm.h"
#include "../../src/workload/workload.h"
#include "test.h"

/* A one-layer cascade small enough to check by hand: a residual add, a
 * recurrence over I with a decaying state, and a read-out. */
static const char head_text[] =
    "shape: {B: 1, I: 2, N: 2, M: 3}\n"
    "outputs: [Y, R]\n"
    "einsum:\n"
    "  declaration:\n"
    "    X: [B, I, M]\n"
    "    PR: [B, I, M]\n"
    "    R: [B, I, M]\n"
    "    WA: [N, M]\n"
    "    WC: [N, M]\n"
    "    A: [N]\n"
    "    S: [B, N]\n"
    "    H: [B, I, N]\n"
    "    Y: [B, I, M]\n"
    "  expressions:\n"
    "    - H[b, i<0, n] = S[b, n]\n"
    "    - R[b,i,m] = X[b,i,m] + PR[b,i,m]\n"
    "    - H[b,i,n] = A[n] * H[b,i-1,n] + WA[n,m] * R[b,i,m]\n"
    "    - Y[b,i,m] = WC[n,m] * H[b,i,n]\n";

static const char good_weights[] =
    "weights:\n"
    "  layer: l.{i}.\n"
    "  tensors:\n"
    "    WA: {key: w, rows: [N, 2*N]}\n"
    "    WC: {key: c, shape: [N, 1, M]}\n"
    "    A: {key: a, map: neg_exp}\n"
    "  model: {embedding: [emb, embedding], norm_f: nf}\n"
    "  stream: {hidden: X, residual: PR, hidden_out: Y, residual_out: R}\n"
    "  state:\n"
    "    s: S\n";

typedef struct Fixture {
  Spec *spec;
  Cascade *c;
  WeightMap *m;
  Shape *s;
  Diag d;
} Fixture;

/* Parse the cascade with WEIGHTS as its weights: section. */
static Fixture load(const char *weights) {
  Fixture f = {0};
  Buf text = {0};
  buf_printf(&text, "%s%s", head_text, weights);
  f.spec = spec_open_text("t.yaml", text.s, text.len, &f.d);
  f.c = f.spec ? f.spec->cascade : NULL;
  buf_free(&text);
  if (!f.c) {
    test_fail(__FILE__, __LINE__, "spec: %d:%d %s", f.d.loc.line,
              f.d.loc.col, f.d.msg);
    return f;
  }
  f.m = weights_parse(f.spec, &f.d);
  if (f.m)
    f.s = shape_bind(f.c, NULL, NULL, 0, true, &f.d);
  return f;
}

static void unload(Fixture *f) {
  shape_free(f->s);
  weights_free(f->m);
  spec_close(f->spec);
}

static Array *filled(int ndim, const int64_t *shape, float start) {
  Array *a = array_new(ndim, shape);
  for (int64_t i = 0; i < a->n; i++)
    a->data[i] = start + (float)i;
  return a;
}

/* A checkpoint for layers 0 and 1 of the fixture. */
static void checkpoint(Tensors *ck) {
  for (int l = 0; l < 2; l++) {
    char key[32];
    snprintf(key, sizeof key, "l.%d.w", l);
    tensors_put(ck, key, filled(2, (int64_t[]){6, 3}, 100.0f * l), true);
    snprintf(key, sizeof key, "l.%d.c", l);
    tensors_put(ck, key, filled(3, (int64_t[]){2, 1, 3}, 0), true);
    snprintf(key, sizeof key, "l.%d.a", l);
    tensors_put(ck, key, filled(1, (int64_t[]){2}, 0), true);
  }
  tensors_put(ck, "embedding", filled(2, (int64_t[]){5, 3}, 0), true);
  tensors_put(ck, "nf", filled(1, (int64_t[]){3}, 1), true);
}

TEST(weights_rows_views_and_maps) {
  Fixture f = load(good_weights);
  CHECK(f.m && f.s);
  if (!f.m || !f.s) {
    unload(&f);
    return;
  }
  Tensors ck = {0}, out = {0};
  checkpoint(&ck);
  Checkpoint src = checkpoint_of_tensors(&ck, "mem");
  CHECK(weights_load_layer(f.m, f.s, &src, 1, &out, &f.d));
  /* rows [N, 2N) = [2, 4) of l.1.w: elements 6..11, plus 100. */
  Array *wa = tensors_get(&out, "WA");
  CHECK(wa && wa->ndim == 2 && wa->shape[0] == 2 && wa->shape[1] == 3);
  for (int i = 0; wa && i < 6; i++)
    CHECK_NEAR(wa->data[i], 106 + i, 0);
  /* [2, 1, 3] viewed as [N, M]. */
  Array *wc = tensors_get(&out, "WC");
  CHECK(wc && wc->ndim == 2 && wc->shape[1] == 3);
  for (int i = 0; wc && i < 6; i++)
    CHECK_NEAR(wc->data[i], i, 0);
  /* A = -exp(A_log). */
  Array *a = tensors_get(&out, "A");
  CHECK(a && a->n == 2);
  if (a) {
    CHECK_NEAR(a->data[0], -1, 1e-7);
    CHECK_NEAR(a->data[1], -2.718281828, 1e-6);
  }
  /* The first embedding key present wins ("emb" is absent). */
  Array *e = weights_load_model(f.m, &src, "embedding", &f.d);
  CHECK(e && e->n == 15);
  array_free(e);
  LayerStream io = weights_stream(f.m);
  CHECK_STR(f.c->tensors[io.hidden_in].name, "X");
  CHECK_STR(f.c->tensors[io.residual_out].name, "R");
  CHECK(weights_is_state(f.c, cascade_tensor(f.c, "S")));
  CHECK(!weights_is_state(f.c, cascade_tensor(f.c, "A")));
  tensors_free(&out);
  tensors_free(&ck);
  unload(&f);
}

/* A load error names the checkpoint, the key and where the mapping is. */
static void check_load_error(Tensors *ck, int layer, const char *want) {
  Fixture f = load(good_weights);
  if (!f.m || !f.s) {
    test_fail(__FILE__, __LINE__, "fixture: %s", f.d.msg);
    unload(&f);
    return;
  }
  Tensors out = {0};
  Checkpoint src = checkpoint_of_tensors(ck, "mem.safetensors");
  Diag d = {0};
  CHECK(!weights_load_layer(f.m, f.s, &src, layer, &out, &d));
  CHECK_STR(d.file, "mem.safetensors");
  if (!strstr(d.msg, want))
    test_fail(__FILE__, __LINE__, "message '%s' lacks '%s'", d.msg, want);
  tensors_free(&out);
  unload(&f);
}

TEST(weights_load_errors) {
  Tensors ck = {0};
  checkpoint(&ck);
  check_load_error(&ck, 2, "the checkpoint has no tensor l.2.w (WA, mapped "
                           "at t.yaml:22:5)");
  /* Too few rows for [N, 2N). */
  tensors_put(&ck, "l.0.w", filled(2, (int64_t[]){3, 3}, 0), true);
  check_load_error(&ck, 0, "l.0.w has shape [3, 3]: rows [2, 4) are out of "
                           "range (WA");
  /* A stored shape other than the one the entry states. */
  tensors_put(&ck, "l.0.w", filled(2, (int64_t[]){6, 3}, 0), true);
  tensors_put(&ck, "l.0.c", filled(2, (int64_t[]){2, 3}, 0), true);
  check_load_error(&ck, 0, "l.0.c has shape [2, 3], but the spec expects "
                           "[2, 1, 3] (WC, mapped at t.yaml:23:5)");
  /* Without a stated shape, only dimensions of 1 may differ. */
  tensors_put(&ck, "l.0.c", filled(3, (int64_t[]){2, 1, 3}, 0), true);
  tensors_put(&ck, "l.0.a", filled(2, (int64_t[]){2, 2}, 0), true);
  check_load_error(&ck, 0, "l.0.a has shape [2, 2], but the spec expects [2]");
  tensors_free(&ck);
  /* A stated shape whose element count overflows 64 bits. */
  Tensors ck2 = {0};
  checkpoint(&ck2);
  const char *huge = strstr(good_weights, "shape: [N, 1, M]");
  Buf w = {0};
  buf_printf(&w, "%.*sshape: [9e15, 9e15, 9e15]%s", (int)(huge - good_weights),
             good_weights, huge + strlen("shape: [N, 1, M]"));
  Fixture hf = load(w.s);
  Checkpoint hsrc = checkpoint_of_tensors(&ck2, "ck");
  Tensors hout = {0};
  Diag hd = {0};
  CHECK(hf.m && !weights_load_layer(hf.m, hf.s, &hsrc, 0, &hout, &hd));
  CHECK(strstr(hd.msg, "l.0.c has shape [2, 1, 3], but the spec expects "
                       "[9000000000000000, 9000000000000000, "
                       "9000000000000000]") != NULL);
  tensors_free(&hout);
  unload(&hf);
  buf_free(&w);
  tensors_free(&ck2);
  Fixture f = load(good_weights);
  Tensors empty = {0};
  Checkpoint src = checkpoint_of_tensors(&empty, "none");
  Diag d = {0};
  CHECK(weights_load_model(f.m, &src, "embedding", &d) == NULL);
  CHECK(strstr(d.msg, "no tensor of emb or embedding (embedding, mapped at "
                      "t.yaml:25:22)") != NULL);
  unload(&f);
}

/* A malformed section: the error and its FILE:LINE:COL. */
static void check_parse_error(const char *weights, int line, int col,
                              const char *want) {
  Fixture f = load(weights);
  CHECK(f.c && !f.m);
  if (f.d.loc.line != line || f.d.loc.col != col || !strstr(f.d.msg, want))
    test_fail(__FILE__, __LINE__, "got %s:%d:%d: %s; expected %d:%d: ...%s",
              f.d.file, f.d.loc.line, f.d.loc.col, f.d.msg, line, col, want);
  unload(&f);
}

TEST(weights_parse_errors) {
  /* Line 19 is the first line after the fixture's cascade. */
  check_parse_error("weights:\n  layer: l.{i}.\n  tensor: {}\n", 21, 3,
                    "unknown key 'tensor' in weights (did you mean "
                    "'tensors'? expected layer, tensors, model, stream or "
                    "state)");
  check_parse_error("weights:\n  layer: l.\n", 20, 10,
                    "must contain {i}");
  /* A missing section is named at the weights mapping (its first key). */
  check_parse_error("weights:\n  tensors: {}\n", 20, 3,
                    "weights needs layer: the prefix of a layer's keys");
  check_parse_error("weights:\n  layer: l.{i}.\n", 20, 3,
                    "weights needs tensors: the source of each weight");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n    WA: w\n",
                    20, 3, "weights needs a model section (embedding, "
                    "norm_f)");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    WZ: w\n",
                    22, 5, "'WZ' is not a tensor of the cascade");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    H: w\n",
                    22, 5, "H is computed by the cascade, not a weight");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    WA: {key: w, row: [0, N]}\n",
                    22, 18, "unknown key 'row' in a weights.tensors entry");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    WA: {key: w, rows: [0, N+]}\n",
                    22, 30, "expected a value");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    WA: {key: w, rows: [0]}\n",
                    22, 24, "rows must be [FIRST, END)");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    A: {key: a, map: log}\n",
                    22, 22, "unknown map 'log'");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    WA: w\n    WC: c\n"
                    "  model: {embedding: e, norm_f: n}\n"
                    "  stream: {hidden: X, residual: PR, hidden_out: Y, "
                    "residual_out: R}\n",
                    22, 5, "input A has no source");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    WA: w\n    WC: c\n    A: a\n"
                    "  model: {embedding: e, norm_f: n}\n"
                    "  stream: {hidden: X, residual: PR, hidden_out: Y, "
                    "residual_out: PR}\n",
                    26, 66, "PR must be an output of the cascade");
  check_parse_error("weights:\n  layer: l.{i}.\n  tensors:\n"
                    "    WA: w\n    WC: c\n    A: a\n"
                    "  model: {embedding: e, norm_f: n}\n"
                    "  stream: {hidden: X, residual: PR, hidden_out: Y, "
                    "residual_out: R}\n"
                    "  state: {s: A}\n",
                    27, 14, "A is not a decode state");
  /* An unknown name in a size: reported where it is written, when the
   * shape is bound. */
  Fixture f = load("weights:\n  layer: l.{i}.\n  tensors:\n"
                   "    WA: {key: w, rows: [0, Z]}\n    WC: c\n    A: a\n"
                   "  model: {embedding: e, norm_f: n}\n"
                   "  stream: {hidden: X, residual: PR, hidden_out: Y, "
                   "residual_out: R}\n");
  CHECK(f.m && !f.s);
  CHECK_INT(f.d.loc.line, 22);
  CHECK_INT(f.d.loc.col, 28);
  CHECK(strstr(f.d.msg, "unknown name 'Z'") != NULL);
  unload(&f);
  /* No section at all. */
  Diag d = {0};
  Spec *sp = spec_open_text("t.yaml", head_text, strlen(head_text), &d);
  CHECK(sp && !weights_parse(sp, &d) && strstr(d.msg, "no weights section"));
  spec_close(sp);
}

TEST(weights_shipped_specs_parse) {
  const char *specs[] = {"specs/mamba1.yaml", "specs/mamba2.yaml"};
  for (int i = 0; i < 2; i++) {
    Diag d = {0};
    Spec *sp = spec_open(specs[i], &d);
    WeightMap *m = sp ? weights_parse(sp, &d) : NULL;
    if (!m)
      test_fail(__FILE__, __LINE__, "%s: %d:%d %s", specs[i], d.loc.line,
                d.loc.col, d.msg);
    weights_free(m);
    spec_close(sp);
  }
}

/* Mamba-2's convolution histories [B, K, ...] become one [B, D+2N, K]
 * conv_state, channels x, B, C, oldest step first. */
TEST(weights_export_state_layout) {
  Diag d = {0};
  Spec *sp = spec_open("specs/mamba2.yaml", &d);
  WeightMap *m = sp ? weights_parse(sp, &d) : NULL;
  CHECK(m != NULL);
  if (!m) {
    spec_close(sp);
    return;
  }
  Tensors st = {0}, out = {0};
  /* B = 1, K = 3, P = 2, Q = 2, N = 1: value = 100*k + channel. */
  Array *x = array_new(4, (int64_t[]){1, 3, 2, 2});
  Array *b = array_new(3, (int64_t[]){1, 3, 1});
  Array *cc = array_new(3, (int64_t[]){1, 3, 1});
  for (int k = 0; k < 3; k++) {
    for (int ch = 0; ch < 4; ch++)
      x->data[k * 4 + ch] = (float)(100 * k + ch);
    b->data[k] = (float)(100 * k + 4);
    cc->data[k] = (float)(100 * k + 5);
  }
  tensors_put(&st, "CSX", x, true);
  tensors_put(&st, "CSB", b, true);
  tensors_put(&st, "CSC", cc, true);
  tensors_put(&st, "H0", array_new(4, (int64_t[]){1, 2, 2, 1}), true);
  weights_export_state(m, &st, "layers.3.", &out);
  Array *cs = tensors_get(&out, "layers.3.conv_state");
  CHECK(cs && cs->ndim == 3 && cs->shape[1] == 6 && cs->shape[2] == 3);
  for (int ch = 0; cs && ch < 6; ch++)
    for (int k = 0; k < 3; k++)
      CHECK_NEAR(cs->data[ch * 3 + k], 100 * k + ch, 0);
  Array *ss = tensors_get(&out, "layers.3.ssm_state");
  CHECK(ss && ss->ndim == 4 && ss->n == 4);
  tensors_free(&out);
  tensors_free(&st);
  weights_free(m);
  spec_close(sp);
}

TEST(lm_config_overrides) {
  ModelConfig c;
  Diag d = {0};
  Setting tiny[] = {{"d_model", 64}, {"n_layer", 2}, {"vocab", 128}};
  CHECK(lm_config_resolve("mamba-130m", tiny, 3, &c, &d));
  CHECK_INT(c.version, 1);
  CHECK_INT(c.d_inner, 128);
  CHECK_INT(c.dt_rank, 4);
  CHECK_INT(c.vocab, 128);
  CHECK(lm_config_resolve("mamba2-130m", tiny, 3, &c, &d));
  CHECK_INT(c.version, 2);
  CHECK_INT(c.n_heads, 2);
  CHECK_INT(c.head_dim, 64);
  CHECK_INT(c.d_state, 128);
  Setting heads[] = {{"d_model", 64}, {"n_heads", 8}};
  CHECK(lm_config_resolve("mamba2-130m", heads, 2, &c, &d));
  CHECK_INT(c.head_dim, 16);
  Setting bad[] = {{"width", 3}};
  CHECK(!lm_config_resolve("mamba-130m", bad, 1, &c, &d));
  CHECK(strstr(d.msg, "not a model size") != NULL);
  Diag d2 = {0};
  Setting frac[] = {{"d_model", 64.5}};
  CHECK(!lm_config_resolve("mamba-130m", frac, 1, &c, &d2));
  Diag d3 = {0};
  CHECK(!lm_config_resolve("no-such-model", NULL, 0, &c, &d3));
  CHECK(strstr(d3.msg, "not a model preset") != NULL);
}

TEST(lm_random_weights) {
  ModelConfig c;
  Diag d = {0};
  Setting tiny[] = {{"d_model", 32}, {"n_layer", 2}, {"vocab", 50}};
  CHECK(lm_config_resolve("mamba-130m", tiny, 3, &c, &d));
  CkptKey *keys;
  int n = lm_checkpoint_keys(&c, &keys);
  CHECK_INT(n, 2 + 2 * 10);
  CHECK_STR(keys[0].name, "backbone.embeddings.weight");
  CHECK_STR(keys[2].name, "backbone.layers.0.mixer.in_proj.weight");
  CHECK_INT(keys[2].shape[0], 128);
  free(keys);
  Checkpoint a = lm_random_checkpoint(&c, 1), b = lm_random_checkpoint(&c, 2);
  const char *k = "backbone.layers.1.mixer.A_log";
  Array *x = a.get(&a, k), *y = a.get(&a, k), *z = b.get(&b, k);
  CHECK(x && x->n == 64 * 16);
  if (x) {
    CHECK_NEAR(x->data[17], log(2.0), 1e-6); /* channel 1, n = 1 */
    CHECK(memcmp(x->data, y->data, sizeof(float) * (size_t)x->n) == 0);
  }
  array_free(x);
  array_free(y);
  array_free(z);
  Array *p = a.get(&a, "backbone.layers.0.mixer.in_proj.weight");
  Array *q = b.get(&b, "backbone.layers.0.mixer.in_proj.weight");
  CHECK(p && q && memcmp(p->data, q->data, sizeof(float) * (size_t)p->n));
  array_free(p);
  array_free(q);
  CHECK(a.get(&a, "backbone.layers.2.norm.weight") == NULL);
}

static double max_diff(const float *a, const float *b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++)
    m = fmax(m, fabs((double)a[i] - b[i]));
  return m;
}

/* A tiny model of version V: one pass over 5 tokens equals a prefill of 3
 * and two steps, with and without worker threads, and last-token logits
 * are the full logits' last rows. */
static void check_model(int version) {
  ModelConfig c;
  Diag d = {0};
  Setting tiny[] = {{"d_model", 16}, {"n_layer", 2}, {"vocab", 20},
                    {"d_state", 4},  {"head_dim", 8}};
  CHECK(lm_config_resolve(version == 1 ? "mamba-130m" : "mamba2-130m", tiny,
                          5, &c, &d));
  Checkpoint ck = lm_random_checkpoint(&c, 5);
  Lm *m = lm_new(&c, &ck, NULL, &d);
  if (!m) {
    test_fail(__FILE__, __LINE__, "lm_new: %s: %s", d.file, d.msg);
    return;
  }
  const int tokens[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  Pool *pool = pool_new(2);
  for (int threads = 1; threads <= 2; threads++) {
    LmOpts o = {.pool = threads > 1 ? pool : NULL};
    Array *full, *part, *last;
    lm_reset(m);
    CHECK(lm_forward(m, tokens, 2, 5, &o, &full, NULL, &d));
    Tensors s1 = {0}, s2 = {0};
    CHECK(lm_export_state(m, &s1));
    lm_reset(m);
    int prompt[] = {3, 1, 4, 9, 2, 6};
    CHECK(lm_forward(m, prompt, 2, 3, &o, &part, NULL, &d));
    int64_t V = c.vocab;
    for (int step = 0; step < 2 && full && part; step++) {
      int next[] = {tokens[3 + step], tokens[8 + step]};
      o.last_only = step == 1; /* I = 1: the same logits either way */
      CHECK(lm_forward(m, next, 2, 1, &o, &last, NULL, &d));
      for (int s = 0; last && s < 2; s++)
        CHECK(max_diff(last->data + s * V,
                       full->data + (s * 5 + 3 + step) * V, V) < 1e-5);
      array_free(last);
    }
    CHECK(lm_export_state(m, &s2));
    /* The state's bytes, kept as the steps replace its arrays: 2 layers
     * of, per sequence, Mamba-1's H0 (32 x 4) and CS (3 x 32); Mamba-2's
     * H0 (4 x 8 x 4), CSX (3 x 4 x 8), CSB and CSC (3 x 4 each). */
    CHECK_NEAR(lm_state_bytes(m),
               version == 1 ? 2 * 2 * 4 * (32 * 4 + 3 * 32)
                            : 2 * 2 * 4 * (4 * 8 * 4 + 3 * 4 * 8 + 2 * 3 * 4),
               0);
    for (int i = 0; i < s1.n; i++) {
      Array *x = s1.arrays[i], *y = tensors_get(&s2, s1.names[i]);
      CHECK(y && y->n == x->n && max_diff(x->data, y->data, x->n) < 1e-5);
    }
    /* Last-token logits from a fresh pass: the full pass's last rows. */
    lm_reset(m);
    CHECK_NEAR(lm_state_bytes(m), 0, 0);
    o.last_only = true;
    CHECK(lm_forward(m, tokens, 2, 5, &o, &last, NULL, &d));
    for (int s = 0; last && full && s < 2; s++)
      CHECK(max_diff(last->data + s * V, full->data + (s * 5 + 4) * V, V) ==
            0);
    /* A different batch needs a reset; a token outside the vocabulary is
     * refused. */
    Array *none;
    Diag e = {0};
    CHECK(!lm_forward(m, tokens, 1, 5, &o, &none, NULL, &e));
    CHECK(strstr(e.msg, "reset it first") != NULL);
    lm_reset(m);
    int bad[] = {20};
    Diag e2 = {0};
    CHECK(!lm_forward(m, bad, 1, 1, &o, &none, NULL, &e2));
    CHECK(strstr(e2.msg, "outside the vocabulary [0, 20)") != NULL);
    array_free(last);
    array_free(full);
    array_free(part);
    tensors_free(&s1);
    tensors_free(&s2);
  }
  /* The weights read where they lie: every array, in the sanitizer
   * build within its bounds. */
  double secs = lm_read_weights(m, pool);
  CHECK(isfinite(secs) && secs >= 0);
  pool_free(pool);
  CHECK(lm_weight_bytes(m) > 4.0 * 20 * 16);
  lm_free(m);
}

TEST(lm_mamba1_prefill_steps_equal_one_pass) { check_model(1); }
TEST(lm_mamba2_prefill_steps_equal_one_pass) { check_model(2); }

/* A fused plan gives the interpreter's logits. */
TEST(lm_fused_equals_interpreter) {
  ModelConfig c;
  Diag d = {0};
  Setting tiny[] = {{"d_model", 16}, {"n_layer", 1}, {"vocab", 12},
                    {"d_state", 4}};
  CHECK(lm_config_resolve("mamba-130m", tiny, 4, &c, &d));
  Checkpoint ck = lm_random_checkpoint(&c, 9);
  Lm *m = lm_new(&c, &ck, NULL, &d);
  CHECK(m != NULL);
  if (!m)
    return;
  const int tokens[] = {1, 2, 3, 4, 5, 6};
  Array *ref, *got;
  LmOpts o = {0};
  CHECK(lm_forward(m, tokens, 1, 6, &o, &ref, NULL, &d));
  for (int st = 0; st < ST_COUNT && ref; st++) {
    lm_reset(m);
    LmOpts f = {.fused = true, .strategy = (Strategy)st,
                .buffer_bytes = 1 << 16};
    CHECK(lm_forward(m, tokens, 1, 6, &f, &got, NULL, &d));
    if (got && max_diff(got->data, ref->data, ref->n) > 1e-6)
      test_fail(__FILE__, __LINE__, "%s differs by %g", strategy_name(st),
                max_diff(got->data, ref->data, ref->n));
    array_free(got);
  }
  array_free(ref);
  lm_free(m);
}

/* A model directory with 16-bit weights (F16 or BF16, as init-weights
 * writes it) runs with its weights held as stored, 2 bytes each (norm_f
 * and the mapped A, computed at load, in fp32): its logits equal those of
 * the same values loaded into fp32 arrays. */
static void check_16bit_model(DType t) {
  ModelConfig c;
  Diag d = {0};
  Setting tiny[] = {{"d_model", 32}, {"n_layer", 2}, {"vocab", 40},
                    {"d_state", 4}};
  CHECK(lm_config_resolve("mamba-130m", tiny, 4, &c, &d));
  char dir[128], path[160];
  snprintf(dir, sizeof dir, "/tmp/mambalaya-unit-%ld-lm16", (long)getpid());
  mkdir(dir, 0777);
  Checkpoint ck = lm_random_checkpoint(&c, 4);
  CkptKey *keys;
  int nkeys = lm_checkpoint_keys(&c, &keys);
  StWriter *w = st_writer_new();
  double values = 0;
  for (int i = 0; i < nkeys; i++) {
    Array *a = ck.get(&ck, keys[i].name);
    values += (double)a->n;
    st_writer_add(w, keys[i].name, a, t);
    array_free(a);
  }
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  CHECK(st_writer_save(w, path, &d));
  st_writer_free(w);
  snprintf(path, sizeof path, "%s/config.json", dir);
  CHECK(model_config_save(&c, path, &d));
  Lm *m = lm_open(dir, NULL, &d);
  if (!m) {
    test_fail(__FILE__, __LINE__, "lm_open: %s", d.msg);
    free(keys);
    return;
  }
  /* As stored, but norm_f and each layer's A in fp32. */
  double fp32 = c.d_model + (double)c.n_layer * c.d_inner * c.d_state;
  CHECK_NEAR(lm_weight_bytes(m), 2 * values + 2 * fp32, 0);
  /* The same values, loaded from fp32 arrays. */
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  StFile *f = st_open(path, &d);
  Tensors wide = {0};
  for (int i = 0; f && i < f->n; i++)
    tensors_put(&wide, f->entries[i].name, st_array(f, &f->entries[i]), true);
  st_close(f);
  Checkpoint ckw = checkpoint_of_tensors(&wide, "fp32 copy");
  Lm *mw = lm_new(&c, &ckw, NULL, &d);
  CHECK(mw && lm_weight_bytes(mw) == 4 * values);
  const int tokens[] = {1, 7, 3, 39, 0, 12, 5, 5};
  Pool *pool = pool_new(2);
  for (int st = -1; mw && st < ST_COUNT; st += 3) {
    LmOpts o = {.fused = st >= 0, .strategy = st < 0 ? ST_UNFUSED : st,
                .buffer_bytes = 1 << 14, .pool = pool};
    Array *a = NULL, *b = NULL;
    lm_reset(m);
    lm_reset(mw);
    CHECK(lm_forward(m, tokens, 1, 8, &o, &a, NULL, &d));
    CHECK(lm_forward(mw, tokens, 1, 8, &o, &b, NULL, &d));
    if (a && b)
      CHECK(max_diff(a->data, b->data, a->n) < 1e-6);
    array_free(a);
    array_free(b);
  }
  pool_free(pool);
  lm_free(mw);
  lm_free(m);
  tensors_free(&wide);
  free(keys);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  remove(path);
  snprintf(path, sizeof path, "%s/config.json", dir);
  remove(path);
  rmdir(dir);
}

TEST(lm_f16_weights_stay_16bit) { check_16bit_model(DT_F16); }
TEST(lm_bf16_weights_stay_16bit) { check_16bit_model(DT_BF16); }

/* ---- Mamba-2's chunked prefill ---- */

/* max |a - b| / max |b|: the executor tests' relative difference. */
static double rel_diff(const Array *a, const Array *b) {
  double scale = 0;
  for (int64_t i = 0; i < b->n; i++)
    scale = fmax(scale, fabs(b->data[i]));
  return max_diff(a->data, b->data, b->n) / scale;
}

/* A tiny Mamba-2 (8 heads of 8 channels, d_state 8) whose weights are
 * held in dtype T: a checkpoint image parsed in memory (*F keeps the
 * values; close it after the model). */
static Lm *tiny_mamba2(DType t, StFile **f) {
  ModelConfig c;
  Diag d = {0};
  Setting tiny[] = {{"d_model", 32}, {"n_layer", 2}, {"vocab", 24},
                    {"d_state", 8},  {"head_dim", 8}};
  CHECK(lm_config_resolve("mamba2-130m", tiny, 5, &c, &d));
  Checkpoint ck = lm_random_checkpoint(&c, 11);
  CkptKey *keys;
  int nkeys = lm_checkpoint_keys(&c, &keys);
  StWriter *w = st_writer_new();
  for (int i = 0; i < nkeys; i++) {
    Array *a = ck.get(&ck, keys[i].name);
    st_writer_add(w, keys[i].name, a, t);
    array_free(a);
  }
  free(keys);
  size_t len;
  unsigned char *image = st_writer_image(w, &len);
  st_writer_free(w);
  *f = st_parse("tiny2.safetensors", image, len, &d);
  free(image);
  Checkpoint file = checkpoint_of_file(*f);
  Lm *m = *f ? lm_new(&c, &file, NULL, &d) : NULL;
  if (!m)
    test_fail(__FILE__, __LINE__, "tiny Mamba-2: %s", d.msg);
  return m;
}

/* Which passes run chunked: when asked for, Mamba-2 prompts of a chunk or
 * more (128 tokens unless told), under the interpreter, not recording. */
TEST(lm_ssd_chunk_rule) {
  StFile *f;
  Lm *m = tiny_mamba2(DT_F32, &f);
  if (!m)
    return;
  LmOpts scan = {0}, chunked = {.ssd = SSD_CHUNKED, .ssd_chunk = 4},
         dflt = {.ssd = SSD_CHUNKED},
         fused = {.ssd = SSD_CHUNKED, .fused = true};
  CHECK_INT(lm_ssd_chunk(m, &scan, 1000, false), 0);
  CHECK_INT(lm_ssd_chunk(m, &chunked, 3, false), 0);
  CHECK_INT(lm_ssd_chunk(m, &chunked, 4, false), 4);
  CHECK_INT(lm_ssd_chunk(m, &chunked, 11, false), 4);
  CHECK_INT(lm_ssd_chunk(m, &chunked, 11, true), 0);
  CHECK_INT(lm_ssd_chunk(m, &dflt, 200, false), SSD_CHUNK_DEFAULT);
  CHECK_INT(lm_ssd_chunk(m, &fused, 200, false), 0);
  CHECK_INT(lm_ssd_chunk(m, &dflt, 127, false), 0);
  CHECK_STR(ssd_mode_name(SSD_CHUNKED), "chunked");
  lm_free(m);
  st_close(f);
}

/* A prefill of LEN tokens (2 sequences) under O, then two decode steps:
 * the prefill's logits, each step's and the final state. WHOLE: the
 * prefill in one pass (recording the mixer outputs keeps a long prompt
 * whole and the scan's). */
typedef struct Passes {
  Array *prefill, *step[2];
  Tensors state;
} Passes;

static Passes run_passes(Lm *m, const int *tokens, int len, const LmOpts *o,
                         bool whole) {
  Passes p = {0};
  Diag d = {0};
  Tensors record = {0};
  lm_reset(m);
  CHECK(lm_forward(m, tokens, 2, len, o, &p.prefill, whole ? &record : NULL,
                   &d));
  tensors_free(&record);
  LmOpts step = *o; /* one token: the scan, whatever the mode */
  for (int k = 0; k < 2; k++) {
    int next[] = {(7 + 5 * k) % 24, (3 + 11 * k) % 24};
    CHECK(lm_forward(m, next, 2, 1, &step, &p.step[k], NULL, &d));
  }
  CHECK(lm_export_state(m, &p.state));
  return p;
}

static void passes_free(Passes *p) {
  array_free(p->prefill);
  array_free(p->step[0]);
  array_free(p->step[1]);
  tensors_free(&p->state);
}

/* The worst relative difference of GOT from REF over every tensor. */
static double passes_diff(const Passes *got, const Passes *ref) {
  double worst = fmax(rel_diff(got->prefill, ref->prefill),
                      fmax(rel_diff(got->step[0], ref->step[0]),
                           rel_diff(got->step[1], ref->step[1])));
  for (int i = 0; i < ref->state.n; i++) {
    Array *x = tensors_get(&got->state, ref->state.names[i]);
    CHECK(x && x->n == ref->state.arrays[i]->n);
    if (x)
      worst = fmax(worst, rel_diff(x, ref->state.arrays[i]));
  }
  return worst;
}

/* Chunked prefill (chunks of 4: 11 tokens are two chunks and a tail of 3
 * by scan; 8 tokens two chunks; 12 three; 1030 tokens two passes of 512,
 * one of 4 and a tail of 2) equals the scan's prefill in one pass within
 * the executor's 1e-5 relative: logits, the carried SSM and convolution
 * state, and the decode steps that continue from it. So does the scan's
 * prefill of 1030 tokens in passes of 512, 512 and 6. */
static void check_chunked_equals_scan(DType t) {
  StFile *f;
  Lm *m = tiny_mamba2(t, &f);
  if (!m)
    return;
  const int tokens[] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8,
                        9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4};
  int *many = xmalloc(2 * 1030 * sizeof *many);
  for (int i = 0; i < 2 * 1030; i++)
    many[i] = (i * 7 + i / 5) % 24;
  Pool *pool = pool_new(2);
  const int lens[] = {11, 8, 12, 1030};
  for (int k = 0; k < 4; k++) {
    LmOpts scan = {.pool = pool};
    LmOpts chunked = {.pool = pool, .ssd = SSD_CHUNKED, .ssd_chunk = 4};
    CHECK_INT(lm_ssd_chunk(m, &chunked, lens[k], false), 4);
    const int *ids = lens[k] > 12 ? many : tokens;
    Passes ref = run_passes(m, ids, lens[k], &scan, true);
    Passes got = run_passes(m, ids, lens[k], &chunked, false);
    if (ref.prefill && got.prefill) {
      CHECK_INT(got.prefill->shape[1], lens[k]);
      CHECK_INT(got.state.n, 4); /* 2 layers: conv_state and ssm_state */
      double diff = passes_diff(&got, &ref);
      if (!(diff < 1e-5))
        test_fail(__FILE__, __LINE__, "%s, %d tokens: %g", dtype_name(t),
                  lens[k], diff);
    }
    if (lens[k] > 512) { /* the scan in passes */
      Passes seg = run_passes(m, ids, lens[k], &scan, false);
      double diff = seg.prefill ? passes_diff(&seg, &ref) : 1;
      if (!(diff < 1e-5))
        test_fail(__FILE__, __LINE__, "%s, scan in passes: %g",
                  dtype_name(t), diff);
      passes_free(&seg);
    }
    passes_free(&ref);
    passes_free(&got);
  }
  /* Last-token logits of a chunked prefill with a tail, and without: the
   * full logits' last rows (the head's product may round otherwise for
   * 2 rows than for 22). */
  for (int len = 11; len <= 12; len++) {
    LmOpts last = {.ssd = SSD_CHUNKED, .ssd_chunk = 4, .last_only = true};
    LmOpts full = {.ssd = SSD_CHUNKED, .ssd_chunk = 4};
    Array *a = NULL, *b = NULL;
    Diag d = {0};
    lm_reset(m);
    CHECK(lm_forward(m, tokens, 2, len, &last, &a, NULL, &d));
    lm_reset(m);
    CHECK(lm_forward(m, tokens, 2, len, &full, &b, NULL, &d));
    for (int s = 0; a && b && s < 2; s++)
      CHECK(max_diff(a->data + s * 24, b->data + (s * len + len - 1) * 24,
                     24) < 1e-6);
    array_free(a);
    array_free(b);
  }
  free(many);
  pool_free(pool);
  lm_free(m);
  st_close(f);
}

TEST(lm_ssd_chunked_prefill_equals_scan_f32) {
  check_chunked_equals_scan(DT_F32);
}
TEST(lm_ssd_chunked_prefill_equals_scan_f16) {
  check_chunked_equals_scan(DT_F16);
}
TEST(lm_ssd_chunked_prefill_equals_scan_bf16) {
  check_chunked_equals_scan(DT_BF16);
}
