/* figures_index.c — what goes beside the figures (figs.h): targets.csv,
 * every target of the paper with our value and the ratio, and index.html,
 * which shows the setup, the targets and every figure in every format
 * written, each with its caption. */
#include "figs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void csv_number_field(Buf *b, double v) {
  if (isfinite(v))
    buf_printf(b, "%.10g", v);
}

void figs_targets_csv(Figs *f) {
  Buf b = {0};
  buf_printf(&b, "key,where,what,paper,ours,ratio,unit,within\n");
  for (int i = 0; i < f->r->ntargets; i++) {
    const Target *t = &f->r->targets[i];
    csv_field(&b, t->key);
    buf_printf(&b, ",");
    csv_field(&b, t->where);
    buf_printf(&b, ",");
    csv_field(&b, t->what);
    buf_printf(&b, ",");
    csv_number_field(&b, t->paper);
    buf_printf(&b, ",");
    csv_number_field(&b, t->ours);
    buf_printf(&b, ",");
    csv_number_field(&b, target_ratio(t));
    buf_printf(&b, ",");
    csv_field(&b, t->unit);
    buf_printf(&b, ",%s\n", target_holds(t) ? "true" : "false");
  }
  figs_put_file(f, "targets.csv", &b);
  buf_free(&b);
}

/* Where docs/model.md is seen from DIR: DIR is taken to be relative to
 * the repository root the command runs in (the usual "out"), so a
 * relative DIR without ".." climbs back one level per component; any
 * other DIR gets the absolute path of the working directory's copy. */
static void doc_href(Buf *b, const char *dir) {
  bool relative = dir[0] != '/';
  int depth = 0;
  const char *p = dir;
  while (relative && *p) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      relative = false;
    else if (n > 0 && !(n == 1 && p[0] == '.'))
      depth++;
    p += n + (p[n] == '/');
  }
  if (relative) {
    for (int i = 0; i < depth; i++)
      buf_printf(b, "../");
    buf_printf(b, "docs/model.md");
    return;
  }
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd))
    buf_printf(b, "file://%s/docs/model.md", cwd);
  else
    buf_printf(b, "docs/model.md");
}

static const char STYLE[] =
    "body{font-family:sans-serif;max-width:1000px;margin:2em auto;"
    "padding:0 1em;color:#222;line-height:1.4}"
    "table{border-collapse:collapse;font-size:90%;width:100%}"
    "th,td{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.off{background:#fde8e0}"
    "figure{margin:2em 0;border-top:1px solid #ddd;padding-top:1em}"
    "img{max-width:100%;height:auto}"
    "figcaption{font-size:90%;color:#444}"
    ".setup{color:#444}";

/* The anchor of docs/model.md's paragraph (§7) that explains why a
 * target is off, by its key's prefix; the section itself for the rest. */
static const char *why_anchor(const char *key) {
  static const struct {
    const char *prefix, *anchor;
  } why[] = {{"speedup.prefill.", "why-sequential-e2e"},
             {"speedup.decode.ri", "why-decode-ri"},
             {"inter_reduction.", "why-inter-reduction"},
             {"vs_marca.decode", "why-marca-decode"}};
  for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
    if (strncmp(key, why[i].prefix, strlen(why[i].prefix)) == 0)
      return why[i].anchor;
  return "where-our-figures-differ";
}

static void html_targets(Buf *b, const Repro *r, const char *href) {
  int off = 0;
  buf_printf(b, "<h2 id=\"targets\">The paper's figures beside ours</h2>\n"
                "<table class=\"targets\">\n<thead><tr><th>where</th>"
                "<th>what</th><th>paper</th><th>ours</th><th>ratio</th>"
                "</tr></thead>\n<tbody>\n");
  for (int i = 0; i < r->ntargets; i++) {
    const Target *t = &r->targets[i];
    TargetRow w = target_row(t);
    off += !w.ok;
    buf_printf(b, "<tr id=\"t-");
    put_xml(b, t->key);
    buf_printf(b, "\"%s><td>", w.ok ? "" : " class=\"off\"");
    put_xml(b, t->where);
    buf_printf(b, "</td><td>");
    put_xml(b, t->what);
    buf_printf(b, "</td><td class=\"n\">");
    put_xml(b, w.paper);
    buf_printf(b, "</td><td class=\"n\">");
    put_xml(b, w.ours);
    buf_printf(b, "</td><td class=\"n\">%.3f", target_ratio(t));
    if (!w.ok) {
      buf_printf(b, " <a href=\"");
      put_xml(b, href);
      buf_printf(b, "#%s\">why?</a>", why_anchor(t->key));
    }
    buf_printf(b, "</td></tr>\n");
  }
  buf_printf(b,
             "</tbody>\n</table>\n<p>%d figures, %d within 0.85&ndash;1.15 "
             "of the paper's; the highlighted ones are explained in "
             "<a href=\"",
             r->ntargets, r->ntargets - off);
  put_xml(b, href);
  buf_printf(b, "#where-our-figures-differ\">docs/model.md, section "
                "7</a>.</p>\n");
}

static void html_formats(Buf *b, const Figs *f, const Entry *e) {
  for (int k = 0, n = 0; k < FMT_COUNT; k++) {
    if (!(f->formats & 1u << k))
      continue;
    buf_printf(b, "%s<a href=\"", n++ ? " &middot; " : "");
    put_xml(b, e->stem);
    buf_printf(b, ".%s\">", format_name((Format)k));
    put_xml(b, e->stem);
    buf_printf(b, ".%s</a>", format_name((Format)k));
  }
}

static void html_figure(Buf *b, const Figs *f, const Entry *e) {
  buf_printf(b, "<figure id=\"");
  put_xml(b, e->stem);
  buf_printf(b, "\">\n");
  /* Shown as SVG where there is one, else as PNG; PDF alone is linked. */
  Format shown = f->formats & 1u << FMT_SVG ? FMT_SVG : FMT_PNG;
  if (f->formats & 1u << shown) {
    buf_printf(b, "<img src=\"");
    put_xml(b, e->stem);
    buf_printf(b, ".%s\" alt=\"", format_name(shown));
    put_xml(b, e->alt);
    buf_printf(b, "\">\n");
  }
  buf_printf(b, "<figcaption>");
  html_formats(b, f, e);
  buf_printf(b, ": ");
  put_xml(b, e->caption);
  buf_printf(b, "</figcaption>\n</figure>\n");
}

void figs_index_html(Figs *f) {
  const Repro *r = f->r;
  Buf b = {0}, href = {0}, head = {0};
  doc_href(&href, outset_dir(f->out));
  if (r->paper_setup)
    buf_printf(&head, "Mambalaya: the paper's evaluation reproduced");
  else
    buf_printf(&head, "Mambalaya: the paper's evaluation, for %s on %s",
               repro_workload(r, 0), r->arch_label);
  buf_printf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                 "<meta charset=\"utf-8\">\n<title>mambalaya: ");
  put_xml(&b, head.s);
  buf_printf(&b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>",
             STYLE);
  put_xml(&b, head.s);
  buf_printf(&b, "</h1>\n<p class=\"setup\">");
  Buf setup = {0};
  report_repro_setup(&setup, r);
  put_xml(&b, setup.s);
  buf_free(&setup);
  buf_printf(&b, "</p>\n");
  if (r->ntargets > 0)
    html_targets(&b, r, href.s);
  buf_printf(&b, "<p>Data: <a href=\"targets.csv\">targets.csv</a> (the "
                 "paper's figures beside ours); every plotted series: "
                 "<a href=\"figures.csv\">figures.csv</a> (figure, series, "
                 "x, y, in the units of the figure's axes).</p>\n");
  buf_printf(&b, "<h2 id=\"figures\">Figures</h2>\n");
  for (int i = 0; i < f->n; i++)
    html_figure(&b, f, &f->e[i]);
  buf_printf(&b, "</body>\n</html>\n");
  figs_put_file(f, "index.html", &b);
  buf_free(&b);
  buf_free(&href);
  buf_free(&head);
}
