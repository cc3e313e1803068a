/* test_sweep.c — a study against the model it drives: a point's figures
 * are model_eval's (a scenario: layers x (prefill + G decodes)), an
 * architecture parameter is the edited file, the front is what dominance
 * says, and the results do not depend on the threads. */
#include <stdlib.h>
#include <unistd.h>

#include "../../src/embed/embed.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
#include "../../src/search/search.h"
#include "../../src/sweep/study.h"
#include "../../src/sweep/sweep.h"
#include "test.h"

static const char study_text[] =
    "study:\n"
    "  name: t\n"
    "  cascades: [{spec: mamba1, models: [mamba-130m]}]\n"
    "  settings: {B: 2, tokens: 64}\n"
    "  parameters:\n"
    "    buffer: {memory.GlobalBuffer.capacity: [1 MiB, 32 MiB]}\n"
    "  designs: [ri, full]\n"
    "  phases: [prefill]\n"
    "  scenarios: [{name: s, generate: 3, layers: 2}]\n";

static Study *load_text(const char *text) {
  char path[] = "/tmp/mambalaya-study-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return NULL;
  close(fd);
  Study *s = NULL;
  if (write_file_atomic(path, text, strlen(text))) {
    Diag d = {0};
    s = study_load(path, INFINITY, &d);
    if (!s)
      test_fail(__FILE__, __LINE__, "%s:%d:%d: %s", d.file, d.loc.line,
                d.loc.col, d.msg);
  }
  unlink(path);
  return s;
}

/* Design D of mamba1 (mamba-130m, B = 2, I = TOKENS) on the shipped
 * mambalaya, binding by BIND (-1: the design's default): seconds and
 * joules; a decode step (TOKENS = 1) counts its state, as sweep and eval
 * do. */
static void direct_bind(Design d, double tokens, int bind, double *sec,
                        double *joules) {
  Diag diag = {0};
  Source src;
  source_open("specs", "mamba1", &src, &diag);
  Cascade *c = spec_parse(src.path, src.text, src.len, &diag);
  source_free(&src);
  source_open("archs", "mambalaya", &src, &diag);
  Arch *a = arch_parse(src.path, src.text, src.len, &diag);
  source_free(&src);
  Setting set[2] = {{"B", 2}, {"I", tokens}};
  Shape *s = shape_bind(c, preset_sizes("mamba-130m"), set, 2, true, &diag);
  Pair *pairs = fusion_classify(c, s);
  ModelOpts o = model_default_opts(d);
  o.state_io = tokens == 1;
  if (bind >= 0)
    o.bind = (BindPolicy)bind;
  Eval *ev = model_eval(c, s, a, pairs, d, &o, &diag);
  *sec = ev ? ev->seconds : NAN;
  *joules = ev ? ev->energy_pj * 1e-12 : NAN;
  eval_free(ev);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(a);
}

static void direct(Design d, double tokens, double *sec, double *joules) {
  direct_bind(d, tokens, -1, sec, joules);
}

TEST(sweep_points_are_the_models) {
  Study *s = load_text(study_text);
  if (!s)
    return;
  /* buffer x design x workload, workload innermost */
  CHECK_INT(study_points(s), 2 * 2 * 2);
  PointResult res[8];
  sweep_eval(s, 0, 8, 1, res, NULL, NULL);
  for (int i = 0; i < 8; i++)
    CHECK_STR(res[i].error, "");
  /* Points 4..7: 32 MiB, the shipped file; 4, 5: ri; 6, 7: full. */
  const Design ds[2] = {DES_RI, DES_FULL};
  for (int k = 0; k < 2; k++) {
    double pre, pre_j, dec, dec_j;
    direct(ds[k], 64, &pre, &pre_j);
    direct(ds[k], 1, &dec, &dec_j);
    const PointResult *p = &res[4 + 2 * k], *sc = &res[5 + 2 * k];
    CHECK_NEAR(p->fig[FIG_LATENCY], pre, 0);
    CHECK_NEAR(p->fig[FIG_ENERGY], pre_j, 1e-12);
    CHECK_NEAR(p->fig[FIG_EDP], pre * pre_j, 1e-12);
    CHECK_NEAR(sc->fig[FIG_LATENCY], 2 * pre + 2 * 3 * dec, 1e-12);
    CHECK_NEAR(sc->fig[FIG_ENERGY], 2 * pre_j + 2 * 3 * dec_j, 1e-12);
    CHECK_NEAR(p->fig[FIG_AREA], 135.357124, 1e-9);
    /* The energy by role adds up to the energy. */
    double parts = 0;
    for (int f = FIG_E_DRAM; f <= FIG_E_FEEDER; f++)
      parts += p->fig[f];
    CHECK_NEAR(parts, p->fig[FIG_ENERGY], 1e-12);
  }
  /* A 1 MiB buffer: less area (31 MiB x 0.32 mm2/MiB), no faster. */
  CHECK_NEAR(res[0].fig[FIG_AREA], 135.357124 - 31 * 0.32, 1e-9);
  CHECK(res[0].fig[FIG_LATENCY] >= res[4].fig[FIG_LATENCY]);
  /* The same results on two threads, and the front by dominance. */
  PointResult two[8];
  sweep_eval(s, 0, 8, 2, two, NULL, NULL);
  CHECK(memcmp(res, two, sizeof res) == 0);
  bool on[8];
  sweep_front(s, res, on);
  for (int i = 0; i < 8; i++) {
    bool dominated = false;
    for (int j = i % 2; j < 8; j += 2) {
      bool le = res[j].fig[FIG_LATENCY] <= res[i].fig[FIG_LATENCY] &&
                res[j].fig[FIG_ENERGY] <= res[i].fig[FIG_ENERGY];
      bool lt = res[j].fig[FIG_LATENCY] < res[i].fig[FIG_LATENCY] ||
                res[j].fig[FIG_ENERGY] < res[i].fig[FIG_ENERGY];
      dominated = dominated || (le && lt);
    }
    CHECK(on[i] == !dominated);
  }
  study_free(s);
}

/* `best` of mamba1 (mamba-130m, B = 2, I = TOKENS) on the shipped
 * mambalaya, its global buffer BUFFER ("32 MiB": the file's), as the
 * search finds it for objective OBJ, alone (a decode step counts its
 * state, as sweep and eval do): seconds. */
static double searched_in(double tokens, SearchObjective obj,
                          const char *buffer) {
  Diag diag = {0};
  Source src;
  source_open("specs", "mamba1", &src, &diag);
  Cascade *c = spec_parse(src.path, src.text, src.len, &diag);
  source_free(&src);
  source_open("archs", "mambalaya", &src, &diag);
  const char *field = "capacity: 32 MiB";
  const char *at = strstr(src.text, field);
  Buf text = {0};
  buf_printf(&text, "%.*s", (int)(at - src.text), src.text);
  buf_printf(&text, "capacity: %s%s", buffer, at + strlen(field));
  Arch *a = arch_parse(src.path, text.s, text.len, &diag);
  buf_free(&text);
  source_free(&src);
  Setting set[2] = {{"B", 2}, {"I", tokens}};
  Shape *s = shape_bind(c, preset_sizes("mamba-130m"), set, 2, true, &diag);
  Pair *pairs = fusion_classify(c, s);
  ModelOverrides o = model_no_overrides();
  o.state_io = tokens == 1;
  SearchResult *r =
      a ? search_best(c, s, a, pairs, &o, obj, NULL, &diag) : NULL;
  double sec = r ? r->found : NAN;
  search_free(r);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(a);
  return sec;
}

static double searched(double tokens, SearchObjective obj) {
  return searched_in(tokens, obj, "32 MiB");
}

/* A study's design best is the search's schedule at each point: no
 * slower than full fusion, the same on two threads. */
TEST(sweep_best_is_the_search) {
  Study *s = load_text("study:\n"
                       "  name: b\n"
                       "  cascades: [{spec: mamba1, models: [mamba-130m]}]\n"
                       "  settings: {B: 2, tokens: 64}\n"
                       "  designs: [full, best]\n"
                       "  phases: [prefill, decode]\n");
  if (!s)
    return;
  CHECK_INT(study_points(s), 4); /* design x workload */
  PointResult res[4], two[4];
  sweep_eval(s, 0, 4, 1, res, NULL, NULL);
  for (int i = 0; i < 4; i++)
    CHECK_STR(res[i].error, "");
  CHECK_NEAR(res[2].fig[FIG_LATENCY], searched(64, SO_LATENCY), 0);
  CHECK_NEAR(res[3].fig[FIG_LATENCY], searched(1, SO_LATENCY), 0);
  CHECK(res[2].fig[FIG_LATENCY] <= res[0].fig[FIG_LATENCY]);
  CHECK(res[3].fig[FIG_LATENCY] <= res[1].fig[FIG_LATENCY]);
  sweep_eval(s, 0, 4, 2, two, NULL, NULL);
  CHECK(memcmp(res, two, sizeof res) == 0);
  study_free(s);
}

/* A sweep searches each shape of a point once: a decode phase and a
 * scenario at one point share the decode step's search (and no other:
 * a point with another buffer searches again, and its scenario finds a
 * slower schedule in the smaller buffer). Each figure is a fresh search's, alone, on the file with
 * that buffer; the scenario's is 3 x (prefill + 2 decode steps). */
TEST(sweep_best_searched_once_per_point_and_shape) {
  Study *s = load_text("study:\n"
                       "  name: b\n"
                       "  cascades: [{spec: mamba1, models: [mamba-130m]}]\n"
                       "  settings: {B: 2, tokens: 64}\n"
                       "  parameters:\n"
                       "    buffer: {memory.GlobalBuffer.capacity: "
                       "[256 KiB, 32 MiB]}\n"
                       "  designs: [best]\n"
                       "  phases: [decode]\n"
                       "  scenarios: [{name: s, generate: 2, layers: 3}]\n");
  if (!s)
    return;
  CHECK_INT(study_points(s), 4); /* buffer x workload */
  PointResult res[4];
  SweepStats st;
  sweep_eval_counted(s, 0, 4, 1, res, NULL, NULL, &st);
  CHECK_INT(st.searches, 4); /* per buffer: the decode step, the prefill */
  CHECK_INT(st.reused, 2);   /* per buffer: the scenario's decode step */
  const char *buffer[2] = {"256 KiB", "32 MiB"};
  for (int b = 0; b < 2; b++) {
    const PointResult *phase = &res[2 * b], *scenario = &res[2 * b + 1];
    CHECK_STR(phase->error, "");
    CHECK_STR(scenario->error, "");
    double pre = searched_in(64, SO_LATENCY, buffer[b]);
    double dec = searched_in(1, SO_LATENCY, buffer[b]);
    CHECK_NEAR(phase->fig[FIG_LATENCY], dec, 0);
    double whole = 3 * pre + 6 * dec;
    CHECK_NEAR(scenario->fig[FIG_LATENCY], whole, 1e-12 * whole);
  }
  /* (A decode step of B = 2 fits either buffer: the same time.) */
  CHECK(res[1].fig[FIG_LATENCY] > res[3].fig[FIG_LATENCY]);
  study_free(s);
}

/* Design best's searches are jobs the threads claim (a class's lead,
 * then its followers, served from the lead's bills): whatever the
 * threads and whichever points a rank prices, each point's figures are
 * the one-thread sweep's, and each block's slot is searched once. Here
 * 4 classes (2 buffers x 2 slots), each a lead and a follower at the
 * other bandwidth; points are buffer x bandwidth x (decode, scenario). */
TEST(sweep_best_jobs_any_threads_and_range) {
  Study *s = load_text("study:\n"
                       "  name: b\n"
                       "  cascades: [{spec: mamba1, models: [mamba-130m]}]\n"
                       "  settings: {B: 2, tokens: 64}\n"
                       "  parameters:\n"
                       "    buffer: {memory.GlobalBuffer.capacity: "
                       "[256 KiB, 32 MiB]}\n"
                       "    bandwidth: {memory.DRAM.bandwidth: "
                       "[1 TB/s, 2 TB/s]}\n"
                       "  designs: [best]\n"
                       "  phases: [decode]\n"
                       "  scenarios: [{name: s, generate: 2, layers: 3}]\n");
  if (!s)
    return;
  CHECK_INT(study_points(s), 8);
  PointResult one[8], three[8], part[4];
  SweepStats st;
  sweep_eval_counted(s, 0, 8, 1, one, NULL, NULL, &st);
  CHECK_INT(st.searches, 8); /* per block: the decode step, the prefill */
  CHECK_INT(st.reused, 4);   /* per block: the scenario's decode step */
  for (int i = 0; i < 8; i++)
    CHECK_STR(one[i].error, "");
  /* The follower's bandwidth moves the time, not the schedule's bytes. */
  CHECK(one[0].fig[FIG_LATENCY] != one[2].fig[FIG_LATENCY]);
  sweep_eval(s, 0, 8, 3, three, NULL, NULL);
  CHECK(memcmp(one, three, sizeof one) == 0);
  /* Points 3..6: block 1's scenario, block 2, block 3's decode phase. */
  sweep_eval_counted(s, 3, 7, 2, part, NULL, NULL, &st);
  CHECK_INT(st.searches, 5);
  CHECK_INT(st.reused, 1);
  CHECK(memcmp(part, &one[3], sizeof part) == 0);
  study_free(s);
}

/* A study that minimizes energy first searches for energy: its best is
 * the search's least-energy schedule. */
TEST(sweep_best_follows_the_first_objective) {
  Study *s = load_text("study:\n"
                       "  name: b\n"
                       "  cascades: [{spec: mamba1, models: [mamba-130m]}]\n"
                       "  settings: {B: 2, tokens: 64}\n"
                       "  designs: [best]\n"
                       "  phases: [prefill]\n"
                       "  objectives: [area, energy, latency]\n");
  if (!s)
    return;
  PointResult res[1];
  sweep_eval(s, 0, 1, 1, res, NULL, NULL);
  CHECK_STR(res[0].error, "");
  double j = searched(64, SO_ENERGY);
  CHECK_NEAR(res[0].fig[FIG_ENERGY], j, 1e-12 * j);
  study_free(s);
}

/* A study varies the binding (rule, cost) as `eval --bind` does; its
 * column names the policy. */
TEST(sweep_option_bind) {
  Study *s = load_text("study:\n"
                       "  name: b\n"
                       "  cascades: [{spec: mamba1, models: [mamba-130m]}]\n"
                       "  settings: {B: 2, tokens: 64}\n"
                       "  designs: [full]\n"
                       "  options: {bind: [rule, cost]}\n"
                       "  phases: [prefill]\n");
  if (!s)
    return;
  CHECK_INT(study_points(s), 2);
  PointResult res[2];
  sweep_eval(s, 0, 2, 1, res, NULL, NULL);
  for (int b = 0; b < BIND_COUNT; b++) {
    double sec, j;
    direct_bind(DES_FULL, 64, b, &sec, &j);
    CHECK_STR(res[b].error, "");
    CHECK_NEAR(res[b].fig[FIG_LATENCY], sec, 0);
    CHECK_NEAR(res[b].fig[FIG_ENERGY], j, 1e-12 * j);
    Cell *cells = xcalloc((size_t)study_ncells(s), sizeof *cells);
    int n = study_cells(s, b, cells);
    bool named = false;
    for (int k = 0; k < n; k++)
      named |= !strcmp(cells[k].name, "bind") &&
               !strcmp(cells[k].text, bind_policy_name((BindPolicy)b));
    CHECK(named);
    free(cells);
  }
  /* Binding by cost is the faster here (the feeder rule is the paper's). */
  CHECK(res[1].fig[FIG_LATENCY] < res[0].fig[FIG_LATENCY]);
  study_free(s);
}

/* A parameter set on the architecture's tree is checked by its loader,
 * and reported at the study's value. */
TEST(sweep_parameter_checked_by_the_loader) {
  static const char text[] =
      "study:\n"
      "  name: t\n"
      "  cascades: [{spec: mamba1}]\n"
      "  parameters:\n"
      "    clock: {clock: [1 GHz, 2 GB]}\n";
  char path[] = "/tmp/mambalaya-study-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return;
  close(fd);
  write_file_atomic(path, text, strlen(text));
  Diag d = {0};
  Study *s = study_load(path, INFINITY, &d);
  unlink(path);
  CHECK(s == NULL);
  CHECK_INT(d.loc.line, 5);
  CHECK_INT(d.loc.col, 28);
  CHECK(strstr(d.msg, "clock '2 GB' is a size in bytes, expected a "
                      "frequency") != NULL);
  study_free(s);
}
