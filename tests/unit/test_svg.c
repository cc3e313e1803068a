/* test_svg.c — charts: one chart of each kind is rendered as SVG, written
 * to a file and checked in its text (escaping, ticks, legend, zero bars);
 * the same chart is also rendered as PDF and PNG and written beside it.
 *
 * The files go to a fresh directory under /tmp that is removed afterwards;
 * with MAMBALAYA_SVG_OUT=DIR they are left in DIR instead, for
 * tests/e2e/svg.sh to run tests/e2e/svg_check.py and
 * tests/e2e/render_check.py on (and for people to look at). */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/report/report.h"
#include "test.h"

/* The output directory: MAMBALAYA_SVG_OUT, or a fresh one that DONE
 * removes. */
static bool out_dir(char *dir, size_t cap) {
  const char *keep = getenv("MAMBALAYA_SVG_OUT");
  if (keep && *keep) {
    snprintf(dir, cap, "%s", keep);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
      test_fail(__FILE__, __LINE__, "mkdir %s: %s", dir, strerror(errno));
    return true;
  }
  snprintf(dir, cap, "/tmp/mambalaya-svg-XXXXXX");
  if (!mkdtemp(dir)) {
    test_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    return false;
  }
  return true;
}

/* Write B to NAME in DIR and read it back. */
static void save_in(const char *dir, const char *name, const Buf *b) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (!write_file_atomic(path, b->s, b->len))
    test_fail(__FILE__, __LINE__, "write %s: %s", path, strerror(errno));
  size_t len = 0;
  char *back = read_file(path, &len);
  CHECK(back != NULL && len == b->len && memcmp(back, b->s, len) == 0);
  free(back);
  const char *keep = getenv("MAMBALAYA_SVG_OUT");
  if (!(keep && *keep))
    unlink(path);
}

static void done(const char *dir) {
  const char *keep = getenv("MAMBALAYA_SVG_OUT");
  if (!(keep && *keep))
    rmdir(dir);
}

/* STEM.svg from B, and the same figure as STEM.pdf and STEM.png: chart C,
 * or with N > 0 the stack of N panels C under TITLE. */
static void save_figure(const char *stem, const Buf *svg, const char *title,
                        int n, const Chart *c) {
  char dir[512], name[256];
  if (!out_dir(dir, sizeof dir))
    return;
  snprintf(name, sizeof name, "%s.svg", stem);
  save_in(dir, name, svg);
  for (int f = FMT_PDF; f <= FMT_PNG; f++) {
    Buf b = {0};
    if (n > 0)
      stack_render(&b, title, NULL, n, c, (Format)f);
    else
      chart_render(&b, c, (Format)f);
    CHECK(b.len > 100);
    snprintf(name, sizeof name, "%s.%s", stem, format_name((Format)f));
    save_in(dir, name, &b);
    buf_free(&b);
  }
  done(dir);
}

static void save(const char *stem, const Buf *svg, const Chart *c) {
  save_figure(stem, svg, NULL, 0, c);
}

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* The labels of the ticks of the first axis group that opens with HEAD
 * (e.g. "<g class=\"axis x\""), joined with '|'. */
static void tick_labels(const char *svg, const char *head, char *out,
                        size_t cap) {
  out[0] = 0;
  const char *p = strstr(svg, head);
  const char *end = p ? strstr(p, "</g>") : NULL;
  size_t used = 0;
  while (p && end && (p = strstr(p, "<text class=\"tick\"")) && p < end) {
    const char *open = strchr(p, '>') + 1, *close = strchr(open, '<');
    used += (size_t)snprintf(out + used, used < cap ? cap - used : 0, "%s%.*s",
                             used ? "|" : "", (int)(close - open), open);
    p = close;
  }
}

/* Every document: an XML prolog, the SVG namespace, a viewBox, no script,
 * and no coordinate that printed as nan or inf. */
static void check_document(const Buf *b) {
  CHECK(b->s && strncmp(b->s, "<?xml version=\"1.0\"", 19) == 0);
  CHECK(strstr(b->s, "xmlns=\"http://www.w3.org/2000/svg\"") != NULL);
  CHECK(strstr(b->s, "viewBox=\"0 0 ") != NULL);
  CHECK(strstr(b->s, "<script") == NULL);
  CHECK(strstr(b->s, "nan") == NULL && strstr(b->s, "inf") == NULL);
  CHECK(b->len > 0 && b->s[b->len - 1] == '\n');
}

static const double DECADES[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};

TEST(svg_line_log_axes) {
  double y1[] = {1e-3, 1e-2, 0.1, 1, 10, 100, 1e3};
  /* A zero and a negative: a log axis cannot show them, so the line
   * breaks there. */
  double y2[] = {0.5, 2, 0, 8, -1, 30, 60};
  ChartSeries s[] = {
      {.name = "rising", .n = 7, .x = DECADES, .y = y1},
      {.name = "with gaps", .n = 7, .x = DECADES, .y = y2, .dashed = true},
  };
  Chart c = {.kind = CHART_LINE, .title = "Log-log", .xlabel = "size",
             .ylabel = "time (s)", .logx = true, .logy = true,
             .nseries = 2, .series = s};
  Buf b = {0};
  chart_render(&b, &c, FMT_SVG);
  check_document(&b);
  save("line_log", &b, &c);
  char ticks[512];
  tick_labels(b.s, "<g class=\"axis x\"", ticks, sizeof ticks);
  CHECK_STR(ticks, "1|10|100|1k|10k|100k|1M");
  tick_labels(b.s, "<g class=\"axis y\"", ticks, sizeof ticks);
  CHECK_STR(ticks, "1e-3|0.01|0.1|1|10|100|1k");
  CHECK(strstr(b.s, "data-scale=\"log\"") != NULL);
  /* "rising" is one polyline; "with gaps" has 0.5-2 and 30-60 (8 stands
   * alone, as a dot). */
  CHECK_INT(count(b.s, "<polyline class=\"line\""), 3);
  CHECK_INT(count(b.s, "<circle class=\"point\""), 1);
  CHECK(strstr(b.s, "stroke-dasharray=\"6 4\"") != NULL);
  CHECK_INT(count(b.s, "<g class=\"legend-entry\""), 2);
  buf_free(&b);
}

TEST(svg_escapes_text) {
  double y[] = {1, 2};
  const char *cats[] = {"a<b", "c&d"};
  ChartSeries s[] = {
      {.name = "R&D <new>", .n = 2, .y = y},
      {.name = "bad \xff byte", .n = 2, .y = y},
  };
  Chart c = {.kind = CHART_BARS, .title = "Traffic <intra> & \"inter\"",
             .xlabel = "x's", .ylabel = "1 < y > 0", .ncategories = 2,
             .categories = cats, .nseries = 2, .series = s};
  Buf b = {0};
  chart_render(&b, &c, FMT_SVG);
  check_document(&b);
  save("escapes", &b, &c);
  CHECK(strstr(b.s, ">Traffic &lt;intra&gt; &amp; &quot;inter&quot;</text>"));
  CHECK(strstr(b.s, "<intra>") == NULL);
  CHECK(strstr(b.s, "data-name=\"R&amp;D &lt;new&gt;\""));
  CHECK(strstr(b.s, ">a&lt;b</text>") && strstr(b.s, ">c&amp;d</text>"));
  CHECK(strstr(b.s, ">x&#39;s</text>") && strstr(b.s, ">1 &lt; y &gt; 0<"));
  /* Bytes that are not UTF-8 become U+FFFD: the document stays XML. */
  CHECK(strstr(b.s, "bad \xEF\xBF\xBD byte") != NULL);
  CHECK(strstr(b.s, "\xff") == NULL);
  buf_free(&b);
}

TEST(svg_scatter_roofline) {
  /* A roof (memory slope, then the compute peak) under labelled points. */
  double rx[] = {0.1, 112.3, 1e4}, ry[] = {0.2039, 229, 229};
  double ix[] = {0.5, 1, 2, 60, 300}, iy[] = {1, 2, 4, 100, 229};
  const char *names[] = {"TTX", "TΔ", "A&B", "NEX", "EY"};
  ChartSeries s[] = {
      {.name = "roof", .n = 3, .x = rx, .y = ry, .line = true,
       .color = "#999999"},
      {.name = "Einsums", .n = 5, .x = ix, .y = iy, .labels = names},
  };
  ChartLine peak[] = {{229, "peak 229 TOP/s"}};
  Chart c = {.kind = CHART_SCATTER, .title = "Roofline", .xlabel =
             "arithmetic intensity (ops/byte)", .ylabel = "TOP/s",
             .logx = true, .logy = true, .nseries = 2, .series = s,
             .nhlines = 1, .hlines = peak};
  Buf b = {0};
  chart_render(&b, &c, FMT_SVG);
  check_document(&b);
  save("roofline", &b, &c);
  CHECK_INT(count(b.s, "<g class=\"legend-entry\""), 2);
  CHECK_INT(count(b.s, "<g class=\"series\""), 2);
  CHECK_INT(count(b.s, "class=\"point-label\""), 5);
  CHECK(strstr(b.s, ">A&amp;B</text>") && strstr(b.s, ">TΔ</text>"));
  CHECK_INT(count(b.s, "<g class=\"hline\""), 1);
  CHECK(strstr(b.s, ">peak 229 TOP/s</text>") != NULL);
  CHECK(strstr(b.s, "stroke=\"#999999\"") != NULL); /* the given colour */
  CHECK_INT(count(b.s, "<polyline class=\"line\""), 1);
  buf_free(&b);
}

/* Utilization over time: 24 phases of uneven length, two designs. */
TEST(svg_step_area_stack) {
  double t[25], unfused[25], fused[25], t2[25];
  ChartLine phases[24];
  char names[24][16];
  double now = 0;
  for (int i = 0; i < 25; i++) {
    t[i] = now, t2[i] = now * 0.6;
    unfused[i] = i % 3 == 0 ? 0.9 : 0.15 + 0.02 * i;
    fused[i] = i % 4 == 0 ? 0.95 : 0.6;
    now += i % 5 == 0 ? 40 : 3;
    if (i < 24) {
      snprintf(names[i], sizeof names[i], "%d", i + 1);
      phases[i] = (ChartLine){t[i], names[i]};
    }
  }
  ChartSeries a[] = {{.name = "compute", .n = 25, .x = t, .y = unfused}};
  ChartSeries f[] = {{.name = "compute", .n = 25, .x = t2, .y = fused},
                     {.name = "memory", .n = 25, .x = t2, .y = unfused,
                      .dashed = true}};
  Chart panels[] = {
      {.kind = CHART_STEP_AREA, .title = "Unfused", .xlabel = "time (us)",
       .ylabel = "utilization", .nseries = 1, .series = a, .ymax = 1,
       .nvlines = 24, .vlines = phases, .height = 300},
      {.kind = CHART_STEP_AREA, .title = "Fused", .xlabel = "time (us)",
       .ylabel = "utilization", .nseries = 2, .series = f, .ymax = 1,
       .height = 300},
  };
  Buf b = {0};
  stack_render(&b, "Utilization over time", NULL, 2, panels, FMT_SVG);
  check_document(&b);
  save_figure("utilization_stack", &b, "Utilization over time", 2, panels);
  CHECK_INT(count(b.s, "<svg class=\"chart\""), 2);
  CHECK_INT(count(b.s, "class=\"stack-title\""), 1);
  CHECK_INT(count(b.s, "<g class=\"legend\""), 2);
  CHECK_INT(count(b.s, "<g class=\"legend-entry\""), 3);
  CHECK_INT(count(b.s, "<g class=\"vline\""), 24);
  CHECK_INT(count(b.s, "<polygon class=\"area\""), 3);
  /* The short phases crowd their labels: they stand upright. */
  CHECK(strstr(b.s, "class=\"vline-label\"") != NULL);
  CHECK(strstr(b.s, "rotate(-90") != NULL);
  char ticks[512];
  tick_labels(b.s, "<g class=\"axis y\"", ticks, sizeof ticks);
  CHECK_STR(ticks, "0|0.2|0.4|0.6|0.8|1");
  buf_free(&b);
}

/* Panels whose legends say the same share one, drawn under the last
 * panel; the stack is shorter by the legends it does not repeat. */
TEST(svg_stack_shares_one_legend) {
  double x[] = {1, 2, 3}, y[] = {3, 1, 2};
  ChartSeries s[] = {{.name = "RI on mambalaya", .n = 3, .x = x, .y = y},
                     {.name = "full on h100", .n = 3, .x = y, .y = x}};
  ChartSeries other[] = {{.name = "RI on mambalaya", .n = 3, .x = x, .y = y},
                         {.name = "full on h100", .n = 3, .x = y, .y = x,
                          .marker = 6}};
  Chart p[3];
  for (int i = 0; i < 3; i++)
    p[i] = (Chart){.kind = CHART_SCATTER, .title = "front", .xlabel = "s",
                   .ylabel = "J", .nseries = 2, .series = s, .width = 300};
  Buf b = {0};
  stack_render(&b, "Fronts", NULL, 3, p, FMT_SVG);
  check_document(&b);
  CHECK_INT(count(b.s, "<g class=\"legend\""), 1);
  CHECK_INT(count(b.s, "<g class=\"legend-entry\""), 2);
  /* The legend is the last panel's. */
  const char *last = b.s, *at;
  while ((at = strstr(last + 1, "<svg class=\"chart\"")))
    last = at;
  CHECK(strstr(last, "<g class=\"legend\"") != NULL);
  buf_free(&b);
  /* One marker differs: every panel keeps its own. */
  p[1].series = other;
  stack_render(&b, "Fronts", NULL, 3, p, FMT_SVG);
  CHECK_INT(count(b.s, "<g class=\"legend\""), 3);
  buf_free(&b);
}

TEST(svg_bars_zero_height) {
  const char *scen[] = {"short context, long generation", "similar lengths",
                        "long context, short generation"};
  double marca[] = {1, 1, 1}, geens[] = {1.2, 0, 3.35}, ours[] = {1.9, 2.5,
                                                                  -0.5};
  ChartSeries s[] = {{.name = "MARCA-like", .n = 3, .y = marca},
                     {.name = "Geens-like", .n = 3, .y = geens},
                     {.name = "Mambalaya", .n = 3, .y = ours}};
  ChartLine one[] = {{1, "baseline"}};
  Chart c = {.kind = CHART_BARS, .title = "Speedup per scenario",
             .xlabel = "scenario", .ylabel = "speedup over MARCA-like",
             .ncategories = 3, .categories = scen, .nseries = 3,
             .series = s, .nhlines = 1, .hlines = one};
  Buf b = {0};
  chart_render(&b, &c, FMT_SVG);
  check_document(&b);
  save("speedup_bars", &b, &c);
  CHECK_INT(count(b.s, "<rect class=\"bar\""), 9);
  const char *zero = strstr(b.s, "data-value=\"0\"");
  CHECK(zero != NULL);
  if (zero)
    CHECK(strncmp(strstr(zero, "height="), "height=\"0.00\"", 13) == 0);
  /* Long category names wrap onto two lines; the negative bar hangs from
   * a zero line. */
  CHECK(strstr(b.s, "<tspan") != NULL && strstr(b.s, ">generation</tspan>"));
  CHECK(strstr(b.s, "rotate(-40") == NULL);
  CHECK(strstr(b.s, "data-scale=\"category\"") != NULL);
  CHECK_INT(count(b.s, "<g class=\"zero\""), 1);
  buf_free(&b);
  /* Too narrow even for wrapped names: they are slanted, and the legend
   * moves below the plot. */
  c.width = 360;
  chart_render(&b, &c, FMT_SVG);
  check_document(&b);
  save("speedup_bars_narrow", &b, &c);
  CHECK(strstr(b.s, "rotate(-40") != NULL);
  CHECK(strstr(b.s, "<tspan") == NULL);
  CHECK_INT(count(b.s, "<g class=\"legend-entry\""), 3);
  buf_free(&b);
}

TEST(svg_stacked_bars_clamp_negative) {
  const char *variants[] = {"Unfused", "RI", "RI+RSb", "RI+RSb+RSp",
                            "Fully fused"};
  double intra[] = {0.9, 0.9, 0.9, 0.9, 0.9};
  double inter[] = {99.1, 25, 12, -3, 2.9};
  ChartSeries s[] = {{.name = "intra-Einsum", .n = 5, .y = intra},
                     {.name = "inter-Einsum", .n = 5, .y = inter}};
  Chart c = {.kind = CHART_STACKED_BARS, .title = "Off-chip traffic",
             .xlabel = "variant", .ylabel = "traffic (MB)",
             .ncategories = 5, .categories = variants, .nseries = 2,
             .series = s};
  Buf b = {0};
  chart_render(&b, &c, FMT_SVG);
  check_document(&b);
  save("traffic_stacked", &b, &c);
  CHECK_INT(count(b.s, "<rect class=\"bar\""), 10);
  /* -3 is clamped to 0: a segment of no height. */
  const char *zero = strstr(b.s, "data-value=\"0\"");
  CHECK(zero != NULL);
  if (zero)
    CHECK(strncmp(strstr(zero, "height="), "height=\"0.00\"", 13) == 0);
  CHECK(strstr(b.s, "data-value=\"-3\"") == NULL);
  CHECK(strstr(b.s, "rotate(-40") == NULL); /* short names stay level */
  buf_free(&b);
}

/* No data, empty series and all-zero data still give two axes, ticks and
 * a legend, and no division by zero. */
TEST(svg_empty_charts) {
  double zeros[] = {0, 0, 0}, xs[] = {0, 1, 2};
  ChartSeries s[] = {{.name = "empty", .n = 0},
                     {.name = "zeros", .n = 3, .x = xs, .y = zeros},
                     {.name = NULL, .n = 3, .x = zeros, .y = zeros}};
  ChartKind kinds[] = {CHART_LINE, CHART_SCATTER, CHART_STEP_AREA,
                       CHART_BARS, CHART_STACKED_BARS};
  for (int k = 0; k < 5; k++)
    for (int log = 0; log < 2; log++)
      for (int ns = 0; ns <= 3; ns += 3) {
        Chart c = {.kind = kinds[k], .title = "Empty", .xlabel = "x",
                   .ylabel = "y", .logx = log, .logy = log, .nseries = ns,
                   .series = s};
        Buf b = {0};
        chart_render(&b, &c, FMT_SVG);
        check_document(&b);
        char name[64];
        snprintf(name, sizeof name, "empty_%d%s%s", k, log ? "_log" : "",
                 ns ? "_series" : "");
        save(name, &b, &c);
        CHECK_INT(count(b.s, "<g class=\"legend-entry\""), ns);
        CHECK_INT(count(b.s, "<g class=\"series\""), ns);
        if (ns)
          CHECK(strstr(b.s, "data-name=\"series 3\"") != NULL);
        char ticks[512];
        tick_labels(b.s, "<g class=\"axis y\"", ticks, sizeof ticks);
        CHECK(strchr(ticks, '|') != NULL); /* at least two */
        buf_free(&b);
      }
}

TEST(svg_tick_formats) {
  double x[] = {0, 0.25}, y[] = {0, 2.5e6};
  ChartSeries s[] = {{.name = "s", .n = 2, .x = x, .y = y}};
  Chart c = {.kind = CHART_LINE, .title = "Ticks", .xlabel = "x",
             .ylabel = "y", .nseries = 1, .series = s};
  Buf b = {0};
  chart_render(&b, &c, FMT_SVG);
  save("ticks", &b, &c);
  char ticks[512];
  tick_labels(b.s, "<g class=\"axis x\"", ticks, sizeof ticks);
  CHECK_STR(ticks, "0|0.05|0.1|0.15|0.2|0.25");
  tick_labels(b.s, "<g class=\"axis y\"", ticks, sizeof ticks);
  CHECK_STR(ticks, "0|500k|1M|1.5M|2M|2.5M");
  buf_free(&b);
  /* A caller's range is kept as given; ticks inside it. */
  c.ymin = 0.001, c.ymax = 0.004;
  chart_render(&b, &c, FMT_SVG);
  tick_labels(b.s, "<g class=\"axis y\"", ticks, sizeof ticks);
  CHECK_STR(ticks, "1e-3|1.5e-3|2e-3|2.5e-3|3e-3|3.5e-3|4e-3");
  buf_free(&b);
}

TEST(svg_is_deterministic) {
  double y[] = {3, 1, 4, 1, 5};
  ChartSeries s[] = {{.name = "pi", .n = 5, .y = y}};
  Chart c = {.kind = CHART_LINE, .title = "Same", .xlabel = "k",
             .ylabel = "v", .nseries = 1, .series = s};
  Buf a = {0}, b = {0};
  chart_render(&a, &c, FMT_SVG);
  chart_render(&b, &c, FMT_SVG);
  CHECK(a.len == b.len && memcmp(a.s, b.s, a.len) == 0);
  CHECK(strstr(a.s, "-0.00") == NULL);
  buf_free(&a);
  buf_free(&b);
}

/* Reference values over bars: markers on the bar they belong to, one
 * legend entry for them all, drawn last; the subtitle under the title. */
TEST(svg_bar_marks) {
  const char *cats[] = {"short", "long"};
  double a[] = {2, 3}, b2[] = {4, 5};
  ChartSeries s[] = {{.name = "ours", .n = 2, .y = a},
                     {.name = "ideal", .n = 2, .y = b2}};
  ChartMark marks[] = {{1, 0, 2.72}, {1, 1, 4.9}, {0, 0, 1e9}, {7, 0, 1}};
  Chart c = {.kind = CHART_BARS, .title = "Speedup",
             .subtitle = "mamba2-370m on h100", .xlabel = "scenario",
             .ylabel = "x", .ncategories = 2, .categories = cats,
             .nseries = 2, .series = s, .nmarks = 4, .marks = marks,
             .marks_name = "paper", .ymin = 0, .ymax = 6};
  Buf b = {0};
  chart_render(&b, &c, FMT_SVG);
  check_document(&b);
  save("bar_marks", &b, &c);
  /* The two in range and in a category are drawn; 1e9 is above the axis,
   * category 7 does not exist. */
  CHECK_INT(count(b.s, "class=\"point mark\""), 2);
  CHECK(strstr(b.s, "class=\"point mark\" data-value=\"2.72\"") != NULL);
  CHECK(strstr(b.s, "<g class=\"series\" data-name=\"paper\"") != NULL);
  CHECK_INT(count(b.s, "<g class=\"legend-entry\""), 3);
  CHECK(strstr(b.s, "<g class=\"legend-entry\" data-name=\"paper\">") != NULL);
  CHECK(strstr(b.s, ">mamba2-370m on h100</text>") != NULL);
  CHECK_INT(count(b.s, "<rect class=\"bar\""), 4);
  /* The marks come after the bars they sit on. */
  const char *last_bar = strstr(b.s, "data-value=\"5\"");
  const char *mark = strstr(b.s, "class=\"point mark\"");
  CHECK(last_bar && mark && last_bar < mark);
  buf_free(&b);
}
