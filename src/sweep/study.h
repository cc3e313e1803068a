/* study.h — private to src/sweep: a loaded study, as the evaluation and
 * the outputs read it. Everything the points need is built once by
 * study_load (the cascades and their shapes, the architecture variants),
 * so that pricing a point only reads it. */
#ifndef MAMBALAYA_SWEEP_STUDY_H
#define MAMBALAYA_SWEEP_STUDY_H

#include "sweep.h"

#include "../embed/embed.h"
#include "../preset/preset.h"

/* A spec of the study, with its fixed settings. */
typedef struct StudyCascade {
  const char *spec; /* as written */
  Loc loc;
  Source src;
  Cascade *c;
  int nset;
  Setting *set;
} StudyCascade;

/* A cascade with one of its models: the outermost dimension. */
typedef struct CascadeModel {
  int cascade;
  const Preset *preset; /* NULL when the spec names none */
} CascadeModel;

/* A setting that varies (a column): its values. */
typedef struct SettingAxis {
  const char *name; /* a rank, a parameter, or "tokens" */
  Loc loc;
  int n;
  double *values;
} SettingAxis;

/* A field of the architecture files (a column), and the axis it is in. */
typedef struct ParamPath {
  const char *path; /* as written: "compute.array2d.shape", "memory[fusion].capacity" */
  Loc loc;
  const char **at;  /* per base architecture, canonical (path.c):
                       "compute[0].shape", "memory[1].capacity" */
} ParamPath;

/* A base architecture. */
typedef struct StudyArch {
  const char *name; /* as written */
  Loc loc;
  Source src;        /* an AccelForge file's text: its translation */
  const char *notes; /* the translation's notes, one a line ("": none) */
} StudyArch;

/* What a workload prices. */
typedef enum { WL_PREFILL, WL_DECODE, WL_SCENARIO } WorkloadKind;

typedef struct Workload {
  const char *name; /* "prefill", "decode", or the scenario's */
  WorkloadKind kind;
  Loc loc;
  double prompt;   /* scenario: I0, or NAN: the settings' tokens */
  double generate; /* scenario: G */
  int layers;      /* scenario: L; 0: the model's */
  int prompt_slot; /* the shape slot of its prefill (below) */
} Workload;

/* The design `best` of a study: the schedule `search` finds for latency
 * (src/search). Not a model design: the model is below the search. */
#define DESIGN_BEST ((Design)DES_COUNT)
/* "best", or the model design's name. */
const char *study_design_name(Design d);

/* A design, with the stitcher of the fused designs (-1: none applies). */
typedef struct DesignStitch {
  Design design;
  int stitch;
} DesignStitch;

/* A model option that varies (a column). */
typedef struct OptionAxis {
  const char *name; /* as in the study: reserve_share, pipelined, ... */
  Loc loc;
  int n;
  double *values; /* booleans as 0 and 1, named values by number */
  ModelOption option; /* its row of MODEL_OPTIONS */
} OptionAxis;

/* A cascade's shape for one settings tuple and one sequence length. */
typedef struct StudyShape {
  Shape *s;
  Pair *pairs;
} StudyShape;

/* Shape slots per (cascade-model, settings tuple): the settings as given,
 * the sequence rank at 1 (decode), then each scenario's prompt. */
enum { SLOT_GIVEN, SLOT_DECODE, SLOT_SCENARIOS };

/* The dimensions of the product, outermost first. */
typedef enum {
  DIM_CASCADE, /* cascade and model */
  DIM_COMBO,   /* settings and parameters */
  DIM_ARCH,
  DIM_DESIGN,  /* design and stitcher */
  DIM_OPTIONS,
  DIM_WORKLOAD,
  DIM_COUNT
} Dim;

struct Study {
  /* Every file a cascade's template read (its includes): inputs the
   * outputs may not replace, beside the study, its specs and archs. */
  InputSet read;
  Arena arena;
  const char *path;
  YamlDoc *doc; /* kept: parameter values are its nodes */
  char sha256[65];
  const char *name, *description;

  int ncascades;
  StudyCascade *cascades;
  int ncms;
  CascadeModel *cms;

  int nsettings;
  SettingAxis *settings;
  int nparams;
  ParamPath *params;
  /* The settings tuples and parameter tuples the points use, and each
   * combination of one of each (the product, or the listed points). */
  int nstuples, nptuples, ncombos;
  double *stuple;       /* nstuples x nsettings */
  YamlNode **ptuple;    /* nptuples x nparams */
  int *combo_s, *combo_p;
  bool listed;          /* the combinations are the study's points */

  int narchs;
  StudyArch *archs;
  Arch **variant;       /* narchs x nptuples */
  const char *reference; /* an architecture whose area is a reference */
  double reference_area;

  int nds;
  DesignStitch *ds;
  int noptions;
  OptionAxis *options;
  int nocombos;
  ModelOverrides *ocombo;
  int nworkloads;
  Workload *workloads;
  int nobjectives;
  Figure objectives[SWEEP_MAX_OBJECTIVES];
  int nfront_per;
  int *front_per;       /* input columns whose values split the fronts */

  int nslots;           /* SLOT_SCENARIOS + scenarios with a prompt */
  StudyShape *shapes;   /* ncms x nstuples x nslots; s NULL if unused */

  long dim[DIM_COUNT];  /* sizes of the dimensions */
  long npoints;
};

/* A point's inputs, one cell per column of the outputs: spec, model, each
 * setting, architecture, each parameter, design, stitch, each option,
 * workload (the last). */
typedef struct Cell {
  const char *name;
  char text[192];
  double num; /* the value when it is a number; NAN: TEXT */
} Cell;

int study_ncells(const Study *s);
int study_cells(const Study *s, long point, Cell *cells);
/* The groups whose fronts are apart: by workload and the study's
 * front_per columns, numbered in order of first appearance. GROUP_OF
 * gets each point's; *LABELS each group's ("prefill, tokens=512"; the
 * caller frees them and the array). Returns how many. */
int study_groups(const Study *s, int *group_of, char ***labels);

/* The parameter that is the fusion level's capacity on every
 * architecture (the ski slope's axis: output.c), or -1. */
int study_fusion_capacity(const Study *s);

/* ---- path.c ---- */

/* Is PATH keys joined by '.', none of them empty? */
bool study_path_valid(const char *path);
/* The node PATH names in architecture tree ROOT ("compute.array2d.pes",
 * "memory[1].capacity": keys, list items by their name or position): its
 * mapping and key into *PARENT, *KEY (the last key may be absent from its
 * mapping: the loader decides whether it belongs there). False with the
 * reason in WHY. */
bool study_path_node(const YamlNode *root, const char *path,
                     YamlNode **parent, const char **key, Buf *why);
/* PATH in the architecture tree ROOT (loaded from FILE) in its canonical
 * form, every list item by position, into CANON: items named by name,
 * position (memory[-1]: the innermost) or, in the memory and compute
 * lists, role (memory[fusion], memory[registers], compute[matrix]: the
 * roles of the loaded architecture). False with the reason in WHY: no such
 * field, or a role no item or several items have. */
bool study_path_resolve(const YamlNode *root, const char *file,
                        const char *path, Buf *canon, Buf *why);

/* ---- build.c ---- */
/* Build S's architecture variants and shapes; false, D set at the study's
 * place (with the file's own message), when one cannot be. */
bool study_build(Study *s, Diag *d);

/* A point's index along each dimension. */
void study_point(const Study *s, long point, long *at);
/* The shape of cascade-model CM, settings tuple ST, slot SLOT. */
const StudyShape *study_shape(const Study *s, int cm, int st, int slot);
/* The value of parameter P in tuple PT, as text for a column ("16 MiB";
 * a list as "256x256"). */
void study_param_text(Buf *b, const Study *s, int pt, int p);

#endif
