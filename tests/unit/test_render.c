/* test_render.c — PDF and PNG: the cairo renderer draws what the scene
 * says (the SVG renderer's scene), at the size it says, the same bytes
 * every time.
 *
 * The PNG is decoded again (with cairo) and its pixels compared with the
 * scene: the inside of every bar has the bar's colour, the paper's marks
 * are black, the background white, the title inked. */
#include <cairo.h>
#include <math.h>
#include <stdlib.h>

#include "../../src/report/report.h"
#include "test.h"

static int count(const char *s, size_t len, const char *needle) {
  int n = 0;
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= len; i++)
    n += memcmp(s + i, needle, k) == 0;
  return n;
}

typedef struct Reader {
  const Buf *b;
  size_t at;
} Reader;

static cairo_status_t read_bytes(void *closure, unsigned char *data,
                                 unsigned int len) {
  Reader *r = closure;
  if (r->at + len > r->b->len)
    return CAIRO_STATUS_READ_ERROR;
  memcpy(data, r->b->s + r->at, len);
  r->at += len;
  return CAIRO_STATUS_SUCCESS;
}

/* The PNG in B, decoded; NULL (and a failure) when it is not one. */
static cairo_surface_t *decode_png(const Buf *b) {
  Reader r = {b, 0};
  cairo_surface_t *s = cairo_image_surface_create_from_png_stream(read_bytes,
                                                                  &r);
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
    test_fail(__FILE__, __LINE__, "not a PNG: %s",
              cairo_status_to_string(cairo_surface_status(s)));
    cairo_surface_destroy(s);
    return NULL;
  }
  return s;
}

/* The colour at device pixel (X, Y) as 0xRRGGBB. */
static unsigned pixel(cairo_surface_t *s, int x, int y) {
  cairo_surface_flush(s);
  const unsigned char *row =
      cairo_image_surface_get_data(s) + y * cairo_image_surface_get_stride(s);
  uint32_t v;
  memcpy(&v, row + 4 * x, 4);
  return v & 0xFFFFFF;
}

static unsigned hex(const char *color) {
  return (unsigned)strtoul(color + 1, NULL, 16);
}

static const char *CATS[] = {"short context", "long context"};
static const double OURS[] = {2.5, 4}, IDEAL[] = {3, 5};
static const ChartSeries SERIES[] = {
    {.name = "ours", .n = 2, .y = OURS, .color = "#0072B2"},
    {.name = "ideal", .n = 2, .y = IDEAL, .color = "#E69F00"},
};
static const ChartMark MARKS[] = {{1, 0, 3.5}};

static Chart bars(void) {
  return (Chart){.kind = CHART_BARS, .title = "Speedup",
                 .subtitle = "mamba2-370m, specs/mamba2.yaml on testchip",
                 .xlabel = "scenario", .ylabel = "speedup (x)",
                 .ncategories = 2, .categories = CATS, .nseries = 2,
                 .series = SERIES, .nmarks = 1, .marks = MARKS,
                 .marks_name = "paper"};
}

TEST(render_png_pixels_match_scene) {
  Chart c = bars();
  Scene sc = {0};
  chart_scene(&sc, &c);
  Buf b = {0};
  scene_render(&b, &sc, FMT_PNG);
  cairo_surface_t *img = decode_png(&b);
  if (!img) {
    scene_free(&sc);
    buf_free(&b);
    return;
  }
  /* Twice the scene's size, in both directions. */
  CHECK_INT(cairo_image_surface_get_width(img), (int)ceil(2 * sc.w));
  CHECK_INT(cairo_image_surface_get_height(img), (int)ceil(2 * sc.h));
  CHECK_INT(pixel(img, 1, 1), 0xFFFFFF);
  /* Every bar's middle in its series' colour; the mark's centre black. */
  const char *fill[16];
  int depth = 0, nbars = 0, nmarks = 0;
  for (int i = 0; i < sc.n; i++) {
    const ScItem *it = &sc.items[i];
    if (it->kind == SC_GROUP && depth < 16) {
      const char *outer = depth > 0 ? fill[depth - 1] : "#000000";
      fill[depth++] = it->paint.fill ? it->paint.fill : outer;
    } else if (it->kind == SC_END && depth > 0)
      depth--;
    else if (it->kind == SC_RECT && strcmp(it->cls, "bar") == 0) {
      int x = (int)(2 * (it->x + it->w / 2)), y = (int)(2 * (it->y + it->h / 2));
      CHECK_INT(pixel(img, x, y), hex(fill[depth - 1]));
      nbars++;
    } else if (it->kind == SC_POLYGON && strstr(it->cls, "mark")) {
      double x = 0, y = 0;
      for (int k = 0; k < it->npts; k++)
        x += it->pts[2 * k] / it->npts, y += it->pts[2 * k + 1] / it->npts;
      CHECK_INT(pixel(img, (int)(2 * x), (int)(2 * y)), 0x000000);
      nmarks++;
    }
  }
  CHECK_INT(nbars, 4);
  CHECK_INT(nmarks, 1);
  /* The title is inked: dark pixels in the band it sits in. */
  int dark = 0;
  for (int y = 2 * 10; y < 2 * 26; y++)
    for (int x = 0; x < cairo_image_surface_get_width(img); x++)
      dark += (pixel(img, x, y) & 0xFF) < 0x80;
  CHECK(dark > 100);
  cairo_surface_destroy(img);
  scene_free(&sc);
  buf_free(&b);
}

TEST(render_pdf_page) {
  Chart c = bars();
  c.width = 760, c.height = 420;
  Scene sc = {0};
  chart_scene(&sc, &c);
  Buf b = {0};
  scene_render(&b, &sc, FMT_PDF);
  CHECK(b.len > 1000 && memcmp(b.s, "%PDF-1.", 7) == 0);
  CHECK(b.len > 6 && memcmp(b.s + b.len - 6, "%%EOF\n", 6) == 0);
  /* One page, the scene's size at 0.75 pt per px, with text as text. */
  CHECK_INT(count(b.s, b.len, "/Type /Page") -
                count(b.s, b.len, "/Type /Pages"),
            1);
  char box[64];
  snprintf(box, sizeof box, "/MediaBox [ 0 0 %g %g ]", 0.75 * sc.w,
           0.75 * sc.h);
  CHECK(count(b.s, b.len, box) == 1);
  CHECK(count(b.s, b.len, "/FontFile") >= 1);
  CHECK_INT(count(b.s, b.len, "/CreationDate"), 0);
  scene_free(&sc);
  buf_free(&b);
}

TEST(render_is_deterministic) {
  Chart c = bars();
  for (int f = 0; f < FMT_COUNT; f++) {
    Buf a = {0}, b = {0};
    chart_render(&a, &c, (Format)f);
    chart_render(&b, &c, (Format)f);
    CHECK(a.len > 0 && a.len == b.len && memcmp(a.s, b.s, a.len) == 0);
    buf_free(&a);
    buf_free(&b);
  }
}

/* A stack is one page (one image) with every panel on it; a figure too
 * wide for a PNG at twice its size is drawn smaller, not refused. */
TEST(render_sizes) {
  Chart panels[3];
  for (int i = 0; i < 3; i++)
    panels[i] = bars();
  Scene sc = {0};
  stack_scene(&sc, "Three panels", "a subtitle", 3, panels);
  Buf b = {0};
  scene_render(&b, &sc, FMT_PDF);
  CHECK_INT(count(b.s, b.len, "/Type /Page") -
                count(b.s, b.len, "/Type /Pages"),
            1);
  buf_free(&b);
  scene_render(&b, &sc, FMT_PNG);
  cairo_surface_t *img = decode_png(&b);
  if (img) {
    CHECK_INT(cairo_image_surface_get_height(img), (int)ceil(2 * sc.h));
    cairo_surface_destroy(img);
  }
  buf_free(&b);
  scene_free(&sc);

  Chart wide = bars();
  wide.width = 20000, wide.height = 200;
  chart_render(&b, &wide, FMT_PNG);
  img = decode_png(&b);
  if (img) {
    CHECK_INT(cairo_image_surface_get_width(img), 32000);
    cairo_surface_destroy(img);
  }
  buf_free(&b);
}

TEST(render_format_names) {
  Format f;
  CHECK(format_from_name("pdf", &f) && f == FMT_PDF);
  CHECK(format_from_name("png", &f) && f == FMT_PNG);
  CHECK(format_from_name("svg", &f) && f == FMT_SVG);
  CHECK(!format_from_name("jpeg", &f) && !format_from_name("", &f));
  CHECK_STR(format_name(FMT_PNG), "png");
}

/* The top of the plot: the y axis' domain line. */
static double plot_top(const Scene *sc, double *bottom, double *left) {
  for (int i = 0; i < sc->n; i++)
    if (sc->items[i].kind == SC_LINE && sc->items[i].cls &&
        strcmp(sc->items[i].cls, "domain") == 0 &&
        sc->items[i].x == sc->items[i].x2) {
      *bottom = sc->items[i].y2, *left = sc->items[i].x;
      return sc->items[i].y;
    }
  return NAN;
}

/* Issue 17: no bar reaches the top of its plot (5 at the top of a 0..5
 * axis reads as clipped): the automatic range leaves room. */
TEST(render_bars_leave_room) {
  Chart c = bars();
  Scene sc = {0};
  chart_scene(&sc, &c);
  double bottom, left, top = plot_top(&sc, &bottom, &left), highest = 1e9;
  for (int i = 0; i < sc.n; i++)
    if (sc.items[i].kind == SC_RECT && strcmp(sc.items[i].cls, "bar") == 0)
      highest = fmin(highest, sc.items[i].y);
  CHECK(isfinite(top));
  CHECK(highest > top + 10);
  scene_free(&sc);
}

/* Scatter points never sit on an axis; a series may ask for a marker
 * (5: triangle down) and a ring series draws hollow rings. */
TEST(render_scatter_room_markers_rings) {
  static const double X[] = {1, 2, 4}, Y[] = {1, 3, 2};
  const ChartSeries s[] = {
      {.name = "RI on h100", .n = 3, .x = X, .y = Y, .marker = 5},
      {.name = "Pareto front", .n = 1, .x = X, .y = Y, .ring = true,
       .color = "#d62728"},
  };
  Chart c = {.kind = CHART_SCATTER, .title = "front", .xlabel = "latency",
             .ylabel = "energy", .nseries = 2, .series = s};
  Scene sc = {0};
  chart_scene(&sc, &c);
  double bottom, left, top = plot_top(&sc, &bottom, &left);
  int triangles = 0, rings = 0;
  for (int i = 0; i < sc.n; i++) {
    const ScItem *it = &sc.items[i];
    if (it->kind == SC_POLYGON && strcmp(it->cls, "point") == 0 &&
        it->npts == 3) {
      triangles++;
      CHECK(it->pts[1] > it->pts[3]); /* the apex below the base */
      for (int k = 0; k < 3; k++)
        CHECK(it->pts[2 * k] > left + 2 && it->pts[2 * k + 1] < bottom - 2);
    } else if (it->kind == SC_CIRCLE && it->r == 7) {
      rings++;
    }
  }
  CHECK(isfinite(top));
  CHECK_INT(triangles, 4); /* the three points and the legend's swatch */
  CHECK_INT(rings, 1);
  scene_free(&sc);
}
