/* test_results.c — self-describing results: SHA-256 of inputs, energy and
 * area per component, eval's CSV, and the diff of two results. */
#include <stdlib.h>

#include "../../src/embed/embed.h"
#include "../../src/report/report.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
#include "test.h"

TEST(results_sha256_known_vectors) {
  char h[65];
  sha256_hex("", 0, h);
  CHECK_STR(h,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  sha256_hex("abc", 3, h);
  CHECK_STR(h,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  /* 56 bytes: the padding needs a second block. */
  const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  sha256_hex(m, strlen(m), h);
  CHECK_STR(h,
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* A shipped name resolves to the embedded file, named by its path. */
TEST(results_source_shipped) {
  Source s;
  Diag d = {0};
  CHECK(source_open("specs", "mamba1", &s, &d));
  CHECK_STR(s.path, "specs/mamba1.yaml");
  CHECK(s.shipped);
  const EmbeddedFile *f = embedded_file("specs/mamba1.yaml");
  char h[65];
  sha256_hex(f->data, f->len, h);
  CHECK_STR(s.sha256, h);
  source_free(&s);
  CHECK(!source_open("specs", "no-such-spec", &s, &d));
}

typedef struct Priced {
  Cascade *c;
  Arch *a;
  Shape *s;
  Pair *pairs;
  Eval *ev;
} Priced;

static Priced price(const char *arch, Design d) {
  Priced p = {0};
  Diag diag = {0};
  Source src;
  CHECK(source_open("specs", "mamba1", &src, &diag));
  p.c = spec_parse(src.path, src.text, src.len, &diag);
  source_free(&src);
  CHECK(source_open("archs", arch, &src, &diag));
  p.a = arch_parse(src.path, src.text, src.len, &diag);
  source_free(&src);
  Setting set[2] = {{"B", 2}, {"I", 64}};
  p.s = shape_bind(p.c, preset_sizes("mamba-130m"), set, 2, true, &diag);
  p.pairs = fusion_classify(p.c, p.s);
  ModelOpts o = model_default_opts(d);
  p.ev = model_eval(p.c, p.s, p.a, p.pairs, d, &o, &diag);
  CHECK(p.ev != NULL);
  return p;
}

static void release(Priced *p) {
  eval_free(p->ev);
  free(p->pairs);
  shape_free(p->s);
  cascade_free(p->c);
  arch_free(p->a);
}

/* The components' energies are the evaluation's, split: the levels'
 * add to DRAM + buffer + registers, the units' to the operations. */
TEST(results_components_sum) {
  const char *archs[] = {"mambalaya", "h100"};
  for (int k = 0; k < 2; k++) {
    Priced p = price(archs[k], DES_FULL);
    if (!p.ev)
      continue;
    Component cs[32];
    int n = report_components(p.a, p.ev, cs);
    CHECK_INT(n, p.a->nlevels + p.a->nunits);
    double mem = 0, ops = 0, area = 0;
    for (int i = 0; i < n; i++) {
      *(strcmp(cs[i].kind, "memory") == 0 ? &mem : &ops) += cs[i].energy_j;
      area += cs[i].area_mm2;
    }
    CHECK_NEAR(mem * 1e12,
               p.ev->energy_dram + p.ev->energy_glb + p.ev->energy_reg, 1e-12);
    CHECK_NEAR(ops * 1e12, p.ev->energy_ops, 1e-12);
    CHECK_NEAR(area, arch_area(p.a), 1e-12);
    CHECK_STR(cs[0].role, "dram");
    CHECK_NEAR(cs[0].area_mm2, 0, 0);
    release(&p);
  }
}

/* One header line, one row per Einsum, the same number of fields. */
TEST(results_eval_csv) {
  Priced p = price("mambalaya", DES_RI);
  if (!p.ev)
    return;
  Buf b = {0};
  report_eval_csv(&b, p.c, p.a, p.ev);
  int lines = 0, commas_first = -1;
  for (char *line = b.s; line && *line; lines++) {
    char *nl = strchr(line, '\n');
    int commas = 0;
    for (char *q = line; q < nl; q++)
      commas += *q == ',';
    if (commas_first < 0)
      commas_first = commas;
    CHECK_INT(commas, commas_first);
    line = nl + 1;
  }
  CHECK_INT(lines, 1 + p.c->neinsums);
  CHECK(strncmp(b.s, "design,einsum,group,unit,", 25) == 0);
  CHECK(strstr(b.s, "\nri,LEX,1,") != NULL);
  buf_free(&b);
  release(&p);
}

static json_t *parse(const char *text) {
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  CHECK(j != NULL);
  return j;
}

/* Inputs first, records matched by name (a reordering is no change),
 * numbers with their relative change. */
TEST(results_diff) {
  json_t *a = parse("{\"inputs\": {\"arch\": \"m\", \"sets\": {\"B\": 64}},"
                    " \"totals\": {\"latency_s\": 2.0, \"ops\": 5},"
                    " \"einsums\": [{\"einsum\": \"X\", \"unit\": \"u\"},"
                    "               {\"einsum\": \"Y\", \"unit\": \"u\"}]}");
  json_t *b = parse("{\"inputs\": {\"arch\": \"h\", \"sets\": {\"B\": 64}},"
                    " \"totals\": {\"latency_s\": 1.0, \"ops\": 5},"
                    " \"einsums\": [{\"einsum\": \"Y\", \"unit\": \"u\"},"
                    "               {\"einsum\": \"X\", \"unit\": \"v\"}]}");
  Buf out = {0};
  CHECK_INT(report_diff(&out, a, b, 0), 3);
  CHECK(strstr(out.s, "inputs (1):\n  inputs.arch: \"m\" -> \"h\"\n") != NULL);
  CHECK(strstr(out.s, "  totals.latency_s: 2.0 -> 1.0 (-50%)\n") != NULL);
  CHECK(strstr(out.s, "  einsums[X].unit: \"u\" -> \"v\"\n") != NULL);
  buf_free(&out);
  CHECK_INT(report_diff(&out, a, a, 0), 0);
  CHECK_STR(out.s, "no difference\n");
  buf_free(&out);
  json_t *c = parse("{\"totals\": {\"latency_s\": 2.000001}}");
  json_t *d = parse("{\"totals\": {\"latency_s\": 2.0}}");
  CHECK_INT(report_diff(&out, c, d, 1e-3), 0);
  buf_free(&out);
  json_decref(a);
  json_decref(b);
  json_decref(c);
  json_decref(d);
}

/* The human tables' totals in engineering units (issue 36: "2.263e+04 us"
 * beside "6810 MB"), values chosen by hand. */
TEST(fmt_unit_prefixes) {
  static const struct {
    double v;
    const char *unit, *want;
  } cases[] = {
      {22630e-6, "s", "22.63 ms"}, {6.81e9, "B", "6.81 GB"},
      {12.96e-6, "s", "12.96 us"}, {3.669, "J", "3.669 J"},
      {0, "B", "0 B"},             {131072, "B", "131.1 kB"},
      {1.5e-13, "J", "0.15 pJ"},   {2.5e21, "B", "2500 EB"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Buf b = {0};
    fmt_unit(&b, cases[i].v, cases[i].unit);
    CHECK_STR(b.s, cases[i].want);
    buf_free(&b);
  }
}
