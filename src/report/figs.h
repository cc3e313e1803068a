/* figs.h — what the figure files share (figures.c draws the evaluation's
 * figures, figures_index.c writes targets.csv and index.html): the set of
 * figures being written (Figs), and figs.c's helpers that stage a file,
 * emit a chart in every format with its CSV rows and index entry, and
 * word the titles, subtitles and captions. */
#ifndef FIGS_H
#define FIGS_H

#include "report.h"

enum {
  MAX_FIGURES = 32,
  SUBTITLE_LEN = 256,
};

/* The legend entry of the paper's values over our bars. */
#define PAPER_MARKS "paper"

typedef struct Entry {
  char *stem;    /* "roofline": written as roofline.svg, .pdf, .png */
  char *alt;     /* the chart's title */
  char *caption; /* which paper figure it follows, and how ours compares */
} Entry;

typedef struct Figs {
  const Repro *r;
  OutSet *out;
  unsigned formats; /* 1 << Format, for each format written */
  Diag *d;
  bool ok;  /* false after the first failure: nothing more is written */
  Buf csv;  /* figures.csv, a row per plotted point */
  int n;
  Entry e[MAX_FIGURES];
} Figs;

/* The fusion strategies, in table order, into OUT (DES_COUNT long). */
int figs_strategy_designs(Design *out);
/* The key of a per-strategy paper target: "speedup.prefill.ri_rsb". */
void figs_strategy_key(char *out, size_t cap, const char *prefix,
                         Design d);
void figs_put_file(Figs *f, const char *name, const Buf *b);
void figs_csv_num_row(Buf *b, const char *fig, const char *series, double x,
                        double y);
/* A chart whose data the caller writes to the CSV itself. */
void figs_emit_figure(Figs *f, const char *stem, const Chart *c,
                        const char *caption);
void figs_emit_chart(Figs *f, const char *stem, const Chart *c,
                       const char *caption);
void figs_emit_stack(Figs *f, const char *stem, const char *title,
                       const char *subtitle, int n, const Chart *charts,
                       const char *const *panels, const char *caption);
/* The paper's value of target KEY, or NaN when there is none (the setup
 * is not the paper's, or the paper gives none). */
double figs_paper_value(const Repro *r, const char *key);
double figs_ours_value(const Repro *r, const char *key);
/* " (paper: 5.79x)", or nothing when the paper gives no value. */
void figs_paper_note(Buf *b, const Repro *r, const char *key);
void figs_fmt_time(char *out, size_t cap, double seconds);
/* "114.7 T" ops/s and the like, for titles and captions. */
void figs_fmt_rate(char *out, size_t cap, double v, const char *unit);
double figs_safe_div(double a, double b);
/* The fastest of the fusion strategies (BY_DESIGN: latencies indexed by
 * Design): Mambalaya's design for that case. */
Design figs_best_strategy(const double *by_design);
/* A title: "Fig. 2a: WHAT" where the setup is the paper's (so the figure
 * is the paper's figure FIG), else WHAT with a capital. */
void figs_title_of(char *out, size_t cap, const Figs *f, const char *fig,
                     const char *what);
/* The subtitle: the setup of model M, and DETAIL (the phase and the
 * sequence length): "mamba-370m, specs/mamba1.yaml on mambalaya; B=64,
 * prefill I=2048"; without a model, the spec with its sizes. */
void figs_subtitle_of(char *out, size_t cap, const Repro *r, int m,
                        const char *detail);
void figs_phase_detail(char *out, size_t cap, const Repro *r, Phase ph);
/* How a caption starts: "Paper Fig. 2a: " for the paper's setup, else
 * which paper figure this one follows, for this setup (the page's header
 * says how the paper's differs). */
void figs_caption_head(Buf *b, const Figs *f, const char *fig);

/* targets.csv: the paper's targets, ours beside them (figures_index.c). */
void figs_targets_csv(Figs *f);
/* index.html: the setup, the targets and every figure staged so far. */
void figs_index_html(Figs *f);

#endif
