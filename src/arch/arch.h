/* arch.h — an accelerator: compute units, the memory hierarchy, the clock
 * and the energy of each access and operation (paper §V, Table II).
 *
 * Architectures are YAML files (the archs directory; docs/architecture.md) with
 * explicit units: "32 MiB", "2039 GB/s", "1.75 GHz", "2 B", "20 pJ/B",
 * "0.9 pJ", "177 um2", "0.34 mm2/MiB". Every quantity the model uses is a
 * field here; nothing about Mambalaya is hard-wired in the model.
 *
 * Compute units may be modes of one another: Mambalaya's 256x256 array
 * (2D mode) can be reconfigured into 8192 PEs wired to the global buffer
 * (1D mode); a mode shares its parent's PEs, so the two never run at
 * once. Each unit has a role the binding rules (§V-B) refer to. */
#ifndef MAMBALAYA_ARCH_H
#define MAMBALAYA_ARCH_H

#include "../util/util.h"
#include "../ydoc/ydoc.h"

/* Operation classes a PE may implement, each at its own rate. */
typedef enum {
  OPC_MACC, /* multiply-accumulate: the inner step of a contraction */
  OPC_ADD,  /* add, subtract, negate, the step of a sum */
  OPC_MUL,  /* multiply */
  OPC_DIV,  /* divide, reciprocal */
  OPC_EXP,
  OPC_LOG,
  OPC_SQRT, /* sqrt, rsqrt */
  OPC_SILU, /* SiLU and sigmoid (MARCA's nonlinear unit) */
  OPC_MAX,  /* max, min, and their reductions */
  OPC_COUNT
} OpClass;

const char *opclass_name(OpClass k); /* "macc", "add", ... as in YAML */

typedef enum {
  ROLE_MATRIX, /* a 2D array for GEMMs (Mambalaya's 2D mode) */
  ROLE_VECTOR, /* a wide 1D array on the global buffer (the 1D mode) */
  ROLE_FEEDER, /* a small 1D array that broadcasts into the 2D array */
  ROLE_COUNT
} UnitRole;

const char *role_name(UnitRole r); /* "matrix", "vector", "feeder" */

/* How a unit's PEs combine the partial results of one reduction spread
 * over several of them (docs/model.md §2). */
typedef enum {
  REDNET_CHAIN, /* neighbour links: p PEs combine in p - 1 steps (a 1D
                   array's linear connections; the default) */
  REDNET_TREE,  /* a tree (a GPU warp's shuffles): ceil(log2 p) steps */
  REDNET_NONE,  /* none: one output per PE */
  REDNET_COUNT
} RedNet;



/* An architecture's choice of unit for one Einsum, by its output's name
 * (the `binding:` section; a spec's `units:` section chooses by role). */
typedef struct ArchBinding {
  const char *tensor;
  int unit;
  Loc loc;
} ArchBinding;

/* What a memory level is to the model (docs/architecture.md, "Memory
 * levels"), from its place relative to the fusion level, never from its
 * index alone:
 *   off-chip  the outermost level: every figure's DRAM;
 *   staging   between off-chip memory and the fusion level (a GPU's L2
 *             when shared memory is the fusion level): every byte the
 *             fusion level exchanges with off-chip memory passes through
 *             it; it keeps nothing the fusion level's mapping does not;
 *   fusion    where a fusion group keeps its intermediates and which its
 *             tile and reservation are sized against (`fusion: true`);
 *   inner     inside the fusion level, towards the PEs: each Einsum maps
 *             its own tile onto it (per instance, after the spatial
 *             split); the innermost such level is the registers. */
typedef enum {
  LEVEL_OFFCHIP,
  LEVEL_STAGING,
  LEVEL_FUSION,
  LEVEL_INNER,
  LEVEL_REGISTERS, /* the innermost level, inside the fusion level */
  LEVEL_ROLE_COUNT
} LevelRole;

/* "dram", "staging", "buffer", "level", "registers": the roles the
 * reports and the sweep's by-role figures name. */
const char *level_role_name(LevelRole r);

/* MEM_LEVEL_FIELDS(X): a memory level's fields after its name, one row
 * each, declared once: the loader reads them by this table (arch.c), the
 * reports echo them by it and the per-field test changes each (a field
 * added is one row here, and its line in docs/architecture.md).
 *
 * X(key, member, KIND, dim, default, NEED, hint, json)
 *   key      the YAML key; MEMBER the MemLevel field that holds it
 *   KIND     POSITIVE or NON_NEGATIVE (a double: a quantity of dimension
 *            DIM), COUNT (an int >= 1), FLAG (a bool), SHARE (a double in
 *            (0, 1])
 *   default  its value when not given
 *   NEED     OPTIONAL, REQUIRED, ON_CHIP (required but for the outermost
 *            level) or OFF_CHIP (required for the outermost); HINT the
 *            parenthesis of the error when it is missing
 *   json     its key in eval --json's architecture echo, or NULL */
#define MEM_LEVEL_FIELDS(X)                                                  \
  /* bytes per instance; INFINITY for off-chip memory */                     \
  X("capacity", capacity, POSITIVE, "bytes", INFINITY, ON_CHIP,              \
    "only the outermost level, off-chip memory, may omit it",                \
    "capacity_bytes")                                                        \
  /* bytes per second per instance, reads and writes together; INFINITY if  \
   * never a bottleneck */                                                   \
  X("bandwidth", bandwidth, POSITIVE, "bytes/s", INFINITY, OFF_CHIP,         \
    "the outermost level needs one, e.g. '2039 GB/s'",                       \
    "bandwidth_bytes_per_s")                                                 \
  /* the same for reads alone and writes alone */                            \
  X("read_bandwidth", read_bandwidth, POSITIVE, "bytes/s", INFINITY,         \
    OPTIONAL, NULL, "read_bandwidth_bytes_per_s")                            \
  X("write_bandwidth", write_bandwidth, POSITIVE, "bytes/s", INFINITY,       \
    OPTIONAL, NULL, "write_bandwidth_bytes_per_s")                           \
  /* The share of the bandwidths above that a kernel achieves: the loader   \
   * has already multiplied the three bandwidths by it, so the model reads  \
   * achievable figures. */                                                  \
  X("efficiency", efficiency, SHARE, NULL, 1, OPTIONAL, NULL, NULL)          \
  /* off-chip memory's round trip a GPU kernel's dependent access waits     \
   * (seconds; 0: none): a GPU's field (arch.c, check_gpu_waits) */          \
  X("latency", latency, POSITIVE, "s", 0, OPTIONAL, NULL, NULL)              \
  /* copies (per-PE or per-core stores): an Einsum's iteration space is     \
   * split over them */                                                      \
  X("instances", instances, COUNT, NULL, 1, OPTIONAL, NULL, "instances")     \
  /* the fusion level (given, or by the default rule) */                     \
  X("fusion", fusion, FLAG, NULL, false, OPTIONAL, NULL, NULL)               \
  /* energy per byte read / written */                                       \
  X("read_energy", read_pj, NON_NEGATIVE, "pJ/B", 0, REQUIRED,               \
    "e.g. '1.25 pJ/B'", NULL)                                                \
  X("write_energy", write_pj, NON_NEGATIVE, "pJ/B", 0, REQUIRED,             \
    "e.g. '1.25 pJ/B'", NULL)                                                \
  /* Area (on-chip levels of an architecture with an area section): mm2    \
   * per byte of capacity with one port (NAN: not given), the read/write    \
   * ports, mm2 per byte for each port past the first. */                   \
  X("area", area_per_byte, NON_NEGATIVE, "mm2/B", NAN, OPTIONAL, NULL,       \
    NULL)                                                                    \
  X("ports", ports, COUNT, NULL, 1, OPTIONAL, NULL, NULL)                    \
  X("port_area", port_area_per_byte, NON_NEGATIVE, "mm2/B", 0, OPTIONAL,     \
    NULL, NULL)

/* A KIND's C type. */
#define LF_TYPE_POSITIVE double
#define LF_TYPE_NON_NEGATIVE double
#define LF_TYPE_SHARE double
#define LF_TYPE_COUNT int
#define LF_TYPE_FLAG bool
/* What a row of either table makes: its struct member, and +1 (its
 * table's length is 0 plus one per row). */
#define ARCH_FIELD_MEMBER(key, member, KIND, ...) LF_TYPE_##KIND member;
#define ARCH_FIELD_ONE(...) +1

typedef struct MemLevel {
  const char *name;
  Loc loc;
  MEM_LEVEL_FIELDS(ARCH_FIELD_MEMBER)
} MemLevel;

/* The tables as data (a level's, a unit's), for the loader, the reports
 * and the tests that iterate them. */
typedef enum {
  LF_POSITIVE,
  LF_NON_NEGATIVE,
  LF_SHARE,
  LF_COUNT,
  LF_FLAG
} LevelFieldKind;
typedef enum { LF_OPTIONAL, LF_REQUIRED, LF_ON_CHIP, LF_OFF_CHIP } LevelNeed;
typedef struct ArchField {
  const char *key;
  LevelFieldKind kind;
  const char *dim; /* a quantity's dimension ("bytes/s"), or NULL */
  double dflt;
  LevelNeed need;
  const char *hint;
  const char *json;
  size_t offset; /* of its member in MemLevel or Unit */
} ArchField;
enum { MEM_LEVEL_NFIELDS = 0 MEM_LEVEL_FIELDS(ARCH_FIELD_ONE) };
extern const ArchField mem_level_fields[MEM_LEVEL_NFIELDS];

/* COMPUTE_UNIT_FIELDS(X): a compute unit's scalar fields, one row each in
 * MEM_LEVEL_FIELDS's columns (below), declared once: the loader reads
 * them by this table (arch.c, load_fields), and the per-field test
 * (test_levels.c) changes each on every shipped unit that gives it. The
 * unit's structured fields keep their own code in Unit and arch.c, since
 * a row holds one scalar: role and reduction (names), shape and pes (one
 * geometry, two spellings that must agree), ops (a rate per operation
 * class), tile ([M, N]), mode_of and epilogue (other units, resolved once
 * all are loaded). Each row is echoed in eval --json's `units` under its
 * JSON key. The rules between rows (a mode's pipeline is its array's
 * unless given; threads need sms; tile and sms come together) follow the
 * read. */
#define COMPUTE_UNIT_FIELDS(X)                                               \
  /* pipeline stages of a PE (fill latency in cycles) */                     \
  X("pipeline", pipeline, COUNT, NULL, 1, OPTIONAL, NULL, "pipeline")        \
  /* A GPU's kernels (docs/architecture.md, "GPU kernels"; src/model/gpu.c): \
   * the share of its peak the unit reaches */                               \
  X("efficiency", efficiency, SHARE, NULL, 1, OPTIONAL, NULL, "efficiency")  \
  /* the SMs a matrix unit's PEs are spread over (0: no waves); a GEMM's     \
   * output tiles run in waves of `sms`, a last partial wave a whole one */  \
  X("sms", sms, COUNT, NULL, 0, OPTIONAL, NULL, "sms")                       \
  /* threads resident per SM (with `sms`): a kernel's blocks run in waves   \
   * of sms x threads / block (0: none) */                                   \
  X("threads", threads, COUNT, NULL, 0, OPTIONAL, NULL, "threads")

typedef struct Unit {
  const char *name;
  Loc loc;
  UnitRole role;
  int pes;        /* processing elements (rows * cols for a 2D array) */
  int rows, cols; /* geometry of a 2D array; rows = pes, cols = 1 for 1D */
  int mode_of;    /* index of the unit whose PEs this mode reuses, or -1 */
  double rate[OPC_COUNT]; /* operations per PE per cycle; 0: unsupported */
  int epilogue;   /* the unit that runs the operations this one cannot, in
                     the same Einsum (a GPU's CUDA cores beside its tensor
                     cores), or -1 */
  RedNet reduction; /* how a reduction spreads over its PEs */
  int tile_m, tile_n; /* the output tile one SM computes (0, 0: none) */
  COMPUTE_UNIT_FIELDS(ARCH_FIELD_MEMBER)
} Unit;
enum { COMPUTE_UNIT_NFIELDS = 0 COMPUTE_UNIT_FIELDS(ARCH_FIELD_ONE) };
extern const ArchField compute_unit_fields[COMPUTE_UNIT_NFIELDS];

/* Field F of REC (the MemLevel or Unit of F's table) as a double (a
 * count, 0 or 1 for a flag). */
double arch_field_value(const void *rec, const ArchField *f);
/* Set field F of REC to V (a count rounded, a flag V != 0). */
void arch_field_set(void *rec, const ArchField *f, double v);

/* A functional unit a PE may contain, for the area model: the operation
 * classes it performs and its area for one operation per cycle. A PE has
 * every functional unit one of its classes needs, as many as the fastest
 * of those classes' rates (a rate of 2: two; 0.125: an eighth, shared). */
typedef struct FuncUnit {
  const char *name;
  Loc loc;
  bool ops[OPC_COUNT];
  double area;    /* mm2 */
  bool nonlinear; /* it performs only div, exp, log, sqrt, silu */
} FuncUnit;

/* What a PE's nonlinear functional units are (docs/architecture.md,
 * "Area"): the reading of the paper's "MARCA's nonlinear unit" decides
 * the area of every PE that performs exp or SiLU. */
typedef enum {
  NONLINEAR_SEPARATE, /* stages of their own, each its `area` */
  NONLINEAR_MARCA,    /* MARCA's reusable unit: built from the PE's FMA
                         (the functional unit performing macc), no area
                         of its own; the PE has as many FMAs as the
                         fastest of its FMA and nonlinear rates */
  NONLINEAR_COUNT
} NonlinearHw;

const char *nonlinear_hw_name(NonlinearHw h); /* "separate", "marca" */

/* The classes area is counted in, the same for every architecture, so
 * that two architectures' totals compare like for like. Off-chip memory
 * interfaces (PHYs), control (schedulers, instruction issue, a
 * controller) and the on-chip network between the memories and the PE
 * arrays are counted on no architecture (docs/architecture.md). */
typedef enum {
  AREA_COMPUTE,      /* functional units other than the nonlinear ones */
  AREA_NONLINEAR,    /* the nonlinear functional units (div, exp, ...) */
  AREA_INTERCONNECT, /* per PE: links, operand forwarding */
  AREA_MEMORY,       /* every on-chip memory level, register files too */
  AREA_CLASS_COUNT
} AreaClass;

/* "compute", "nonlinear", "interconnect", "memory". */
const char *area_class_name(AreaClass c);

/* The area section: every figure scaled to one technology node. */
typedef struct ArchArea {
  bool given;        /* the file has an area section */
  double node_nm;
  int nfus;
  FuncUnit *fus;
  double interconnect; /* mm2 per PE: links, operand forwarding */
  NonlinearHw nonlinear;
} ArchArea;

typedef struct Arch {
  Arena arena;
  const char *path;
  const char *name;
  double clock_hz;
  int word_bytes; /* bytes per tensor element (2: 16-bit data) */
  double kernel_s; /* a GPU's fixed cost per kernel (`kernel`): every
                      group of a plan is one kernel (0: none) */
  int nlevels;
  MemLevel *levels; /* outermost first: off-chip memory, ..., registers */
  int fusion_level; /* index of the level with .fusion */
  int nunits;
  Unit *units;
  double op_pj[OPC_COUNT]; /* energy per operation */
  int nbindings;
  ArchBinding *bindings;
  ArchArea area;
  /* What loading assumed or read without modelling, one line each
   * without a prefix ("" for a file of ours; an AccelForge file's notes,
   * docs/compat.md); the caller prints them. */
  const char *notes;
} Arch;

/* Load an architecture from a YAML file, or parse TEXT. Unknown keys,
 * missing fields, values without (or with the wrong) units, a mode_of
 * naming no unit, a level without capacity (other than the outermost),
 * two fusion levels, instances outside the fusion level's inside, a
 * staging level smaller than the fusion level are errors with
 * FILE:LINE:COL. */
Arch *arch_load(const char *path, Diag *d);
Arch *arch_parse(const char *path, const char *text, size_t len, Diag *d);
/* The same from a YAML tree (ROOT may be NULL: an empty file), e.g. one a
 * sweep has edited; errors name PATH and the nodes' locations. */
Arch *arch_from_yaml(const char *path, const YamlNode *root, Diag *d);
void arch_free(Arch *a);
/* An AccelForge architecture (a top-level `arch:` section; arch_parse and
 * arch_load take one as it is): translated into one of ours
 * (src/workload/accelforge_arch.c), which is loaded, its errors pointing into
 * PATH (or its rendering, for a Jinja template). VARS (NAME=VALUE) are its
 * template's variables, READ collects the files the template reads (may
 * be NULL), and OUT (may be NULL) gets the translation, its notes as
 * comments. */
Arch *arch_parse_accelforge(const char *path, const char *text, size_t len,
                            const char *const *vars, int nvars,
                            InputSet *read, Buf *out, Diag *d);

/* Level L's role (LEVEL_OFFCHIP ... LEVEL_REGISTERS). */
LevelRole arch_level_role(const Arch *a, int l);
/* Does level M bound its traffic by a bandwidth (any of its three)? */
bool arch_level_has_bandwidth(const MemLevel *m);

/* ---- the fusion level ----
 *
 * One rule says which levels can be the fusion level; the loader applies
 * it to the level a file marks, the search to every level (docs/search.md,
 * "The fusion level"). Level L can be when it is on chip, it is not the
 * innermost level of a file with several on-chip levels (the registers,
 * where each Einsum's operands meet the PEs), no level from off-chip
 * memory down to it has instances (instances split one Einsum's iteration
 * space; a group's tile is held in one store), and every staging level
 * between them holds at least what it holds (it passes the fusion level's
 * off-chip traffic through). */
typedef enum {
  FUSION_OK,
  FUSION_OFFCHIP,   /* level 0 */
  FUSION_REGISTERS, /* the innermost, below other on-chip levels */
  FUSION_INSTANCES, /* a level at or above it has instances */
  FUSION_STAGING,   /* a staging level smaller than it */
  FUSION_PROBLEM_COUNT
} FusionProblem;

/* Why level L cannot be A's fusion level; *AT gets the level at fault. */
FusionProblem arch_fusion_problem(const Arch *a, int l, int *at);
/* The problem's message into B (nothing for FUSION_OK). */
void arch_fusion_why(const Arch *a, int l, Buf *b);
/* The levels that can be A's fusion level, outermost first, into OUT
 * (room for a->nlevels; may be NULL); their number. */
int arch_fusion_candidates(const Arch *a, int *out);
/* A copy of A whose fusion level is LEVEL, or NULL where it cannot be.
 * Only the levels are its own; the rest is A's (A must outlive it).
 * Free it with arch_free. */
Arch *arch_with_fusion_level(const Arch *a, int level);
/* The index of the level named NAME, or -1. */
int arch_level_named(const Arch *a, const char *name);
/* arch_with_fusion_level at the level named NAME (a plan file's
 * "fusion_level", read at FILE:AT), or NULL with D set: the level does
 * not exist or cannot be a fusion level, and the candidates listed. */
/* The level named NAME if it can be A's fusion level, or -1 with D set at
 * FILE:AT, FIELD naming what wrote it (a plan file's "fusion_level", its
 * "group_levels"), the candidates listed. */
int arch_fusion_named(const Arch *a, const char *name, const char *field,
                      const char *file, Loc at, Diag *d);
Arch *arch_with_fusion_named(const Arch *a, const char *name,
                             const char *file, Loc at, Diag *d);

/* The first unit with role R, or -1. */
int arch_unit(const Arch *a, UnitRole r);
/* The unit whose PEs unit U uses (U itself, or the array U is a mode
 * of): modes of one array never run at once, so their busy time adds
 * up on it. */
int arch_array_of(const Arch *a, int u);
/* Peak operations per second of unit U for op class K (pes * rate * clock). */
double arch_peak(const Arch *a, int unit, OpClass k);

/* ---- area (area.c) ----
 *
 * On-die area in mm2 at the file's technology node, from its area section
 * (NAN without one): a compute unit's PEs times the functional units its
 * operation classes need plus the interconnect per PE (a mode's PEs are
 * its array's: 0); an on-chip memory level's capacity times its area per
 * byte (and per extra port). Off-chip memory has no area on the die. */
double arch_unit_area(const Arch *a, int unit);
double arch_level_area(const Arch *a, int level);
double arch_area(const Arch *a); /* the sum over units and levels */
/* The area of class C of unit UNIT (levels are AREA_MEMORY); of each
 * class summed over the architecture into OUT (NAN without an area
 * section). They add up to arch_area. */
double arch_unit_area_class(const Arch *a, int unit, AreaClass c);
void arch_area_by_class(const Arch *a, double out[AREA_CLASS_COUNT]);
/* The total if the file's nonlinear hardware were H instead (NAN without
 * an area section): the other reading's figure, reported beside it. */
double arch_area_as(const Arch *a, NonlinearHw h);

/* Parse a quantity with a unit: "32 MiB" -> bytes, "2039 GB/s" -> bytes/s,
 * "1.75 GHz" -> Hz, "20 pJ/B" -> pJ per byte, "0.9 pJ" -> pJ, "177 um2"
 * -> mm2, "0.34 mm2/MiB" -> mm2 per byte, "7 nm" -> nm. DIM names the
 * expected dimension ("bytes", "bytes/s", "Hz", "pJ/B", "pJ", "mm2",
 * "mm2/B", "nm");
 * false if TEXT is not a number followed by a unit of that dimension.
 * Binary prefixes (KiB, MiB, GiB) are powers of 1024, decimal ones (kB,
 * MB, GB) powers of 1000. */
bool parse_quantity(const char *text, const char *dim, double *value);
/* A quantity of whatever dimension its unit names ("4 MiB", "100 GB/s"):
 * the value in that dimension's base unit, and the base unit's symbol
 * ("B", "B/s", "Hz", "pJ/B", ...), or NULL when TEXT is no quantity. */
const char *parse_any_quantity(const char *text, double *value);

#endif
