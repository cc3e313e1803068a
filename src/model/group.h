/* group.h — private to the group pricer's files (group.c, members.c,
 * extras.c): the group being priced (Grp), what it holds (Held), what a
 * group pricer keeps of it across its spill variants (Frame), and the
 * functions they share. group.c holds the tensors, chooses the tile and
 * the spills and runs the rest; members.c maps and bills each member;
 * extras.c adds the fully fused design's extra traffic. */
#ifndef MAMBALAYA_MODEL_GROUP_H
#define MAMBALAYA_MODEL_GROUP_H

#include "price.h"

typedef enum { HELD_MADE, HELD_SHARED, HELD_WEIGHT } HeldKind;

typedef struct Held {
  int tensor;
  HeldKind kind;
  int first, last; /* member positions it is live over */
  bool on;         /* held; else off chip */
  double charge;   /* elements the group moves for it once (its DRAM read,
                      or its write if it escapes) */
  double whole;    /* its elements */
  double nested;   /* nested_factor for the group's tile ranks (set by
                      shape_held: it does not change with the tile) */
  unsigned tiled;  /* bit k: it has the group's tile rank k (set with
                      nested) */
} Held;

typedef struct Nest Nest;

typedef struct Grp {
  Ctx *x;
  const Group *gr;
  EinsumEval *ev; /* its members' evaluations, in order */
  const EinsumEval *bound; /* the same as bound, their compute priced (a
                              trial composes them): EV before its
                              charges, or the pricer's (Ctx.base) */
  int n;          /* members */
  int nt;         /* tile ranks */
  int rank[IR_MAX_RANKS];
  double size[IR_MAX_RANKS], tile[IR_MAX_RANKS];
  int nheld;
  Held *held;     /* in order of first use (first ascending) */
  int *held_from; /* per member I: the first held tensor whose first use
                     is I or later (held_from[n]: nheld) */
  /* Per member K, the held tensors but weights live at K (first <= K <=
   * last), in held order: LIVE_AT[LIVE_FROM[K] .. LIVE_FROM[K + 1]); per
   * held tensor H, the members reading or writing it, in order:
   * USERS[USER_FROM[H] .. USER_FROM[H + 1]). Both the frame's where the
   * context keeps one (held_lists). */
  const int *live_from, *live_at, *user_from, *users;
  int *held_of;   /* per tensor: index into held, or -1 */
  int state_t, iter_rank;
  int shaped;     /* the tile ranks (nt) the held tensors' whole, nested
                     and tiled were set for (shape_held), or -1 */
  double budget;  /* reserve_share x buffer */
  double keep;    /* share of each held tensor's tile on chip, the rest
                     off chip (overbook): 1 unless the tile overbooks */
  double set_total, set_res; /* the tile set last (its elements) and its
                                reservation (-1: it does not fit) */
  bool overbook;  /* a tile may overbook (priced_by_dram) */
  bool whole;     /* MARCA-like: intermediates whole, for the whole group */
  int nspills;
  Spill *spills;
  Nest **nest;  /* per member: its loop nest (member_problem) */
  double *fp;          /* per held tensor: reservation's scratch */
  double *sum;         /* per member: the same */
  double *mem;         /* per member: a trial's scratch (try_tile) */
  bool *same;          /* the same */
} Grp;

/* The tiles a group tries: the smallest (1, or the whole with hold_whole)
 * doubled up to its whole, at most this many. */
enum { TILE_CANDIDATES = 80 };

/* A trial of one candidate tile as a group pricer last priced it: what
 * the group held then (ON, per held tensor), and per member its mapping
 * and the elements it moves (HAVE: mapped; a trial stops at the first
 * member that does not fit). A spill variant changes only the members
 * that read or write what it sends off chip, so another trial of the
 * tile at the same capacity maps only those (try_tile). */
typedef struct Kept {
  int room_members, room_held; /* the arrays' room (kept_room) */
  bool set;
  int nt, state_t;
  double total, cap;
  bool *on;
  bool *have;
  const Mapping **map; /* in the members' nests (member_map) */
  double *elems;
  double *cyc; /* per member: its cycles at ELEMS (-1: not composed) */
  /* The tile's reservation as last found (RES_SET: for RES_NT tile ranks
   * and a tile of RES_TOTAL): each held tensor's footprint (FOOT, whether
   * held or not), what was held then (RES_ON), the weights' (or, whole,
   * every tensor's) sum FIXED and per member the sum over the tensors
   * live there (SUM). A spill variant changes only the sums where what it
   * sends off chip is live (reservation). */
  bool res_set;
  int res_nt;
  double res_total, fixed;
  double *foot, *sum;
  bool *res_on;
} Kept;

/* What the design's extras read of a group, whatever it spills
 * (design_extras): the ranks its lagged reads iterate (ITER, per rank),
 * per held tensor its first RD hand-over (RD_EDGE: rd_edges) and its
 * readers (READER from READ_FROM: held_readers); the members that may
 * bear an extra charge (MEMBER, NCAND of them, in order: a made tensor
 * the group holds, with an RD hand-over or two readers or more), per such
 * candidate C whether it may write partial products (PARTIAL_OK) and the
 * ranks they split (SPLITS[SPLIT_FROM[C] .. SPLIT_FROM[C + 1])), whether
 * it may need two passes (TWO_OK) and its last reader's member (LAST);
 * the members that may bear a share of them (SHARER, NSHARER of them, in
 * order: the candidates and their last readers); per member its
 * candidate (CAND_OF, or -1); whether some candidate may need two passes
 * (ANY_TWO: else each member's share depends on its own output's holding
 * alone); per candidate that may need two passes, the members whose
 * reduction over a rank of its output one reader feeds and another waits
 * for (WAITER[WAITER_FROM[C] .. WAITER_FROM[C + 1]), as Einsums: facts of
 * the cascade, so a variant only asks whether its traversal splits the
 * rank: needs_two_passes); scratch: per rank SPLIT (false at rest). */
typedef struct PassFacts {
  bool *iter;
  int *rd_edge, *reader, *read_from;
  int ncand, nsharer;
  bool any_two;
  int *member, *split_from, *splits, *last, *sharer, *cand_of;
  int *waiter_from, *waiter;
  bool *partial_ok, *two_ok;
  bool *split;
} PassFacts;

/* price_group's scratch, room for MEMBERS members and HELD held tensors:
 * a group pricer's frame keeps it, grown as its groups grow, so a spill
 * variant allocates none (the Grp fields of the same names point into
 * it; MAPS is the chosen tile's mappings). */
typedef struct Scratch {
  int members, held;
  Held *copy; /* the frame's held tensors, as a variant holds them */
  Nest **nest;
  double *fp, *mem, *sum;
  bool *same;
  const Mapping **maps;
} Scratch;

/* What group G holds before any spill (each held tensor shaped:
 * shape_held; its weights resident where they fit: weight_residency),
 * its tile ranks and its recurrence: the same for every
 * spill variant of a group, so a group pricer keeps them (Ctx.frame) from
 * its first price of the group it bound last to the next bind; and its
 * trials per candidate tile (KEPT, each with its arrays' room). */
/* The Grp fields a frame keeps besides its held tensors: one list, for
 * the struct and the copies both ways (frame_of). */
#define FRAME_KEPT(X) X(nheld) X(nt) X(state_t) X(iter_rank) X(shaped)

struct Frame {
  bool set;
#define X(name) int name;
  FRAME_KEPT(X)
#undef X
  Held *held;
  int *held_from;
  int *live_from, *live_at, *user_from, *users; /* Grp's */
  int *held_of; /* the context's (Grp.held_of): set for HELD while the
                   frame is, so that a variant need not set it again */
  bool nests_set; /* the scratch's NEST holds the group's members' */
  Kept kept[TILE_CANDIDATES];
  /* The largest candidate tile whose reservation fits with every held
   * tensor held (-1: not found yet), for tile ranks FIT_NT and recurrence
   * FIT_STATE: a spill only lowers the reservation, so every variant's
   * fits up to it (reserved_up_to). */
  int fit_top, fit_nt, fit_state;
  /* Each member's bill at the group's last price (BILLED: room for
   * NBILLED; its share of the design's extras then among it), scratch for
   * as many (NEXT), and the design's extras now: a variant prices again
   * only the members whose bill it changes (charge_members). */
  int nbilled;
  Billed *billed, *next;
  Charges extras;
  /* The tile the bills were made at (BILL_SET: they were; BILL_ON: what
   * the group held then, room for BILL_ROOM held tensors): a variant at
   * the same tile and capacity, nothing overbooked, bills again only the
   * members reading or writing a tensor whose holding changed. */
  bool bill_set;
  int bill_nt, bill_state, bill_room;
  double bill_tile[IR_MAX_RANKS], bill_cap;
  bool *bill_on;
  /* The members a variant bills again (DIRTY_AT, NDIRTY of them; DIRTY:
   * per member, room for NBILLED, false between prices). */
  bool *dirty;
  int *dirty_at, ndirty;
  bool passes_set; /* PASSES found for the group bound */
  PassFacts passes;
  Scratch scratch;
};

struct Nest {
  MapProblem p;
  int tensor_of[MAP_MAX_TENSORS];
  int *read_at;
  int *out_var; /* per rank of the cascade: the first variable of the
                   output over it, or -1 (what a group's tile sets) */
  /* The text (mapping_text) of the mapping it was last charged with, and
   * that mapping's loops (NORDER, ORDER, their tiles in TILE): a spill
   * variant charges most members with the mapping they had before. */
  int norder;
  int order[MAP_MAX_VARS];
  double tile[MAP_MAX_VARS];
  char text[sizeof ((EinsumEval *)0)->mapping];
  /* The problems it has posed and their mappings (member_map), in
   * blocks (never moved: a block is ~50 KB), found by what member_problem
   * sets through SLOT (open addressing, a power of two of them). */
  struct Posed **posed;
  int nposed, nblocks;
  struct PosedSlot *slot;
  int nslots;
};

/* Record that T went off chip, and why (group.c's and extras.c's: here,
 * so that neither file calls the other). */
static inline void add_spill(Grp *G, int t, SpillReason why) {
  G->spills = xrealloc(G->spills, (size_t)(G->nspills + 1) * sizeof *G->spills);
  G->spills[G->nspills++] = (Spill){t, why};
}

/* ---- members.c ---- */

/* Member I's loop nest: kept across groups where the context keeps
 * them (member_problem sets every field a group changes); its end where
 * it does not. */
Nest *member_nest(const Grp *G, int i);
void nest_free(Nest *n);
/* Member I's problem with the group's current holdings and tile, and
 * CAPACITY elements of buffer. */
const MapProblem *member_problem(const Grp *G, int i, double capacity);
/* Member I's mapping with CAPACITY elements of buffer (the search of its
 * problem, through the context's memo), kept in its nest (Nest.posed):
 * read in place, not copied (a Mapping is ~600 bytes, and a search's
 * trials ask for millions), valid while the nest is. */
const Mapping *member_map(const Grp *G, int i, double capacity);
/* The elements member I moves when SHARE of held tensor H goes off chip
 * (*RD read, *WR written). */
void off_chip_moves(const Grp *G, const Held *h, int i, double share,
                    double *rd, double *wr);
/* The share of held tensor H's tile the current tile sends off chip. */
double overbooked_share(const Grp *G, const Held *h);
/* Elements the group moves once at member I. */
double held_charges(const Grp *G, int i);
/* Charge the members at the chosen tile (MAPS, RES reserved), each priced
 * again only where its bill changed since the group's last price. */
void bill_members(Grp *G, const Mapping *const *maps, double res);

/* ---- extras.c ---- */

/* The fully fused design's extra charges of G, in order, into EXTRAS. */
void design_extras(Grp *G, Charges *extras);
/* Does each member's share of G's extras depend on its own output's
 * holding alone (none with two passes possible; G's pricer keeps a
 * frame)? Then member_extras gives each. */
bool extras_per_member(Grp *G);
/* Member I's share of G's extras, where extras_per_member, into EXTRA
 * (emptied first). */
void member_extras(Grp *G, int i, Charges *extra);
/* PF's arrays freed, PF emptied. */
void pass_facts_free(PassFacts *pf);

#endif
