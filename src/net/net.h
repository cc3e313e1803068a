/* net.h — whole models: a Hugging Face config.json as a sequence of
 * blocks, each a shipped cascade sized from the config, priced end to end.
 *
 * A decoder model is an embedding, L layers and a head. Each layer is one
 * or more blocks: a mixer (attention, multi-head latent attention, Mamba-1,
 * Mamba-2, Gated DeltaNet) and a feed-forward part (a gated or plain MLP, a
 * mixture of experts, its shared experts), each with its pre-norm and its
 * residual add. A block kind is one spec under specs/ (BLOCK_KINDS); a
 * block is a kind with the sizes the config gives it. Blocks with the same
 * kind and sizes are one block used several times: the model is priced
 * per distinct block, and its layers add the blocks' prices up.
 *
 *   config.json ──net_config_load──► Net (blocks, the layer schedule,
 *                                         notes on fields not modelled)
 *        Net ──net_block_cascade──► a block's cascade, bound for a phase
 *        Net ──net_params──► parameters, total and active, counted from
 *                            the cascades' weight tensors
 *        Net ──net_run──► prefill and decode position by position on an
 *                         architecture (net_price.c): time to first token,
 *                         time per output token, energy, traffic per
 *                         block kind, the memory the model needs
 *
 * What a block's cascade reads besides its config sizes is the phase:
 * batch B, the tokens of the pass (the spec's sequence rank), the tokens
 * already cached (T, attention's KV cache in decode) and, for a mixture
 * of experts, how many experts the pass touches and how many tokens each
 * receives (the routing model: docs/models.md). */
#ifndef MAMBALAYA_NET_H
#define MAMBALAYA_NET_H

#include "../model/model.h"
#include "../exec/exec.h"
#include "../workload/workload.h"

/* The block kinds, X(ID, name, prompt spec, decode spec, what): the
 * decode spec is the kind's block with a cache before the new tokens
 * (NULL: the prompt's spec serves both phases, its state carried as the
 * spec's initializations). What the executor runs is the same spec but
 * for a mixture of experts (block_kind_run_spec). */
#define BLOCK_KINDS(X)                                                      \
  X(EMBED, "embedding", "specs/layers/embedding.yaml", NULL,                \
    "the token embedding")                                                  \
  X(ATTN, "attention", "specs/layers/attention.yaml",                       \
    "specs/layers/attention_kv.yaml",                                       \
    "multi-head / grouped-query attention, RoPE, KV cache")                 \
  X(ATTN_GATED, "attention_gated", "specs/layers/attention_gated.yaml",      \
    "specs/layers/attention_gated_kv.yaml",                                 \
    "attention with an output gate (Qwen3-Next)")                           \
  X(MLA, "mla", "specs/layers/mla.yaml", "specs/layers/mla_kv.yaml",        \
    "multi-head latent attention, latent KV cache")                         \
  X(PARALLEL, "parallel", "specs/layers/parallel.yaml",                     \
    "specs/layers/parallel_kv.yaml",                                        \
    "attention and Mamba-2 side by side, summed (Falcon-H1)")               \
  X(MAMBA1, "mamba1", "specs/layers/mamba1.yaml", NULL, "a Mamba-1 mixer")  \
  X(MAMBA2, "mamba2", "specs/layers/mamba2.yaml", NULL,                     \
    "a Mamba-2 mixer with groups")                                          \
  X(GDN, "gated_deltanet", "specs/layers/gated_deltanet.yaml", NULL,        \
    "a Gated DeltaNet mixer")                                               \
  X(MLP, "mlp", "specs/layers/mlp.yaml", NULL, "a gated (SwiGLU) MLP")      \
  X(MLP_PLAIN, "mlp_plain", "specs/layers/mlp_plain.yaml", NULL,            \
    "a plain MLP (squared ReLU)")                                           \
  X(MOE, "moe", "specs/layers/moe.yaml", NULL,                              \
    "routed experts: router, dispatch, experts, combine")                   \
  X(MOE_SHARED, "moe_shared", "specs/layers/moe_shared.yaml", NULL,         \
    "routed experts and shared experts beside them")                        \
  X(LINEAR, "linear", "specs/layers/linear.yaml", NULL,                     \
    "one linear layer (a projection, an adapter)")                          \
  X(HEAD, "head", "specs/layers/head.yaml", NULL,                           \
    "the final norm and the LM head")

typedef enum {
#define X(id, ...) BK_##id,
  BLOCK_KINDS(X)
#undef X
  BK_COUNT
} BlockKind;

const char *block_kind_name(BlockKind k);
const char *block_kind_spec(BlockKind k, bool decode);
const char *block_kind_help(BlockKind k);
/* The spec the executor runs for kind K (forward.c): the priced one, but
 * moe_dense.yaml for a mixture (every expert over every token, weighed by
 * the top-K routing: the same numbers as routing them). */
const char *block_kind_run_spec(BlockKind k, bool decode);

enum { NET_MAX_SIZES = 24 };

/* A block: a kind with its sizes (settings the spec's names resolve to,
 * config.json's values under the spec's names: d_model, n_heads, ...). */
typedef struct Block {
  BlockKind kind;
  char label[48]; /* "attention", "attention (window 4096)", ... */
  int nsizes;
  char names[NET_MAX_SIZES][24]; /* "d_model", "n_heads", ... */
  double values[NET_MAX_SIZES];
  int uses;   /* times a token runs through it (its layers) */
  int copies; /* sets of its weights the model holds: one per use, or
                 one for all (Zamba2's shared blocks) */
  /* A mixture of experts: E routed experts, K per token. */
  int experts, top_k;
  /* Attention: the tokens a query sees (a sliding window), 0: all. */
  long window;
  /* Why the executor cannot run it (its input is not the residual stream
   * alone: Zamba2's shared block reads it beside the embeddings), or
   * "": it runs. */
  char not_run[96];
} Block;

/* How a decode step's tokens reach the experts (docs/models.md). */
typedef enum { ROUTE_UNIFORM, ROUTE_WORST, ROUTE_COUNT } Routing;
const char *routing_name(Routing r);

enum { NET_MAX_BLOCKS = 32, NET_MAX_LAYERS = 1024, NET_MAX_NOTES = 32,
       NET_LAYER_BLOCKS = 8 };

typedef struct Net {
  char path[512];      /* the config.json read */
  char model_type[32];
  char name[96];       /* _name_or_path, or the file's folder */
  int nlayers;
  int nblocks;
  Block blocks[NET_MAX_BLOCKS];
  /* The schedule: layer i runs blocks layer[i][0 .. nlayer[i]) in order;
   * the embedding before the first, the head after the last. */
  unsigned char nlayer[NET_MAX_LAYERS];
  unsigned char layer[NET_MAX_LAYERS][NET_LAYER_BLOCKS];
  int embed, head; /* their blocks */
  bool tied;       /* the head's weights are the embedding's */
  double rope_theta; /* RoPE's base (rope_theta; 0: 10000) */
  int nnotes;
  char notes[NET_MAX_NOTES][200]; /* fields read but not modelled */
} Net;

/* Read PATH, a config.json or a folder holding one. Hugging Face's field
 * names for the model types of docs/models.md, `text_config` nesting
 * included. An unknown model_type, a missing or malformed size is an
 * error naming the field; a field the tool does not model is a note. */
bool net_config_load(const char *path, Net *net, Diag *d);
/* The same from TEXT (LEN bytes), named PATH in messages. */
bool net_config_parse(const char *path, const char *text, size_t len,
                      Net *net, Diag *d);
/* The model types read, comma-separated, into BUF. */
const char *net_model_types(char *buf, size_t n);

/* ---- a block's cascade ---- */

/* What one pass of a block sees. */
typedef struct Pass {
  bool decode;  /* a cache before the pass (the decode spec) */
  long batch;   /* B */
  long tokens;  /* the pass's tokens per sequence: the sequence rank */
  long cached;  /* tokens before them (decode: the context) */
  Routing routing;
  double capacity_factor; /* a prompt's tokens per expert, times this */
  long experts; /* experts the pass touches; 0: as the routing says */
  bool run;     /* for the executor: block_kind_run_spec's cascade */
} Pass;


/* Block B of NET as a cascade bound for PH: *C and *S (free with
 * shape_free then cascade_free). False with D set when the spec does not
 * load or bind. */
bool net_block_cascade(const Net *net, int b, const Pass *ph, Cascade **c,
                       Shape **s, Diag *d);

/* The model's vocabulary: its embedding's rows. */
long net_vocab(const Net *net);
/* Does block B read a cache that grows with the context (attention's)? */
bool net_block_caches(const Net *net, int b);

/* ---- parameters ---- */

/* The weights of a block: the inputs of its cascade whose size does not
 * depend on the tokens (neither batch, prompt, cache nor routing: a
 * tensor that changes size when they double is an activation), and no
 * decode state. Elements, at X experts touched (the block's E for its
 * total, its K for what one token reads). */
bool net_block_weights(const Net *net, int b, bool active, double *elems,
                       Diag *d);

typedef struct NetParams {
  double total, active;      /* the model's parameters */
  double block_total[NET_MAX_BLOCKS], block_active[NET_MAX_BLOCKS];
} NetParams;

/* Count NET's parameters from its blocks' cascades: each distinct set of
 * weights once per layer that owns it, the embedding once when tied. */
bool net_params(const Net *net, NetParams *p, Diag *d);

/* ---- end to end ---- */

typedef struct NetOpts {
  Design design;     /* what each block is priced as */
  bool best;         /* the search's schedule per block instead */
  ModelOverrides mf; /* the model's options over the design's */
  long batch;        /* B */
  long prompt;       /* P: the prefill's tokens */
  long generate;     /* G: decode steps after it */
  long context;      /* the context the memory is sized for (0: P + G) */
  Routing routing;
  double capacity_factor;
  int samples;       /* decode contexts priced exactly (the rest
                        interpolated); 0: every step */
} NetOpts;

NetOpts net_default_opts(void);

/* A block's share of a phase. */
typedef struct BlockCost {
  double seconds, energy_j, dram_bytes; /* per use */
} BlockCost;

enum { NET_MAX_SAMPLES = 64 };

typedef struct NetRun {
  NetOpts opts;
  /* Prefill: the prompt through every layer, and the head for the last
   * position. */
  BlockCost prefill[NET_MAX_BLOCKS];
  double ttft, prefill_energy_j, prefill_dram;
  /* Decode: step s at context P + s. */
  int nsamples;
  long sample_context[NET_MAX_SAMPLES];
  double sample_seconds[NET_MAX_SAMPLES]; /* a whole step at that context */
  BlockCost decode_first[NET_MAX_BLOCKS], decode_last[NET_MAX_BLOCKS];
  BlockCost decode_mean[NET_MAX_BLOCKS]; /* over the G steps */
  double tpot_first, tpot_mean, tpot_last; /* seconds per step */
  double decode_energy_j, decode_dram;     /* all G steps */
  double tokens_per_s;     /* B / tpot_mean */
  double energy_per_token; /* decode joules per generated token */
  /* Memory at batch B and the context opts.context. */
  double weight_bytes, kv_bytes, state_bytes, need_bytes;
  double capacity_bytes; /* the off-chip level's (INFINITY: not given) */
  bool fits;
} NetRun;

/* Price NET on A end to end under O (progress lines to PROGRESS, or
 * NULL). False with D set when a block cannot be priced. */
bool net_run(const Net *net, const Arch *a, const NetOpts *o, NetRun *r,
             FILE *progress, Diag *d);

/* ---- running a model (forward.c) ---- */

/* Random weights for NET under SEED, keyed as net_model_forward reads
 * them (forward.c's head comment); *PARAMS gets their count. NULL and D
 * set when a block cannot be built. */
StWriter *net_random_weights(const Net *net, uint64_t seed, double *params,
                             Diag *d);

/* A model with its weights (WEIGHTS outlives it) and the decode state of
 * every block use: a prompt, then one token at a time. */
typedef struct NetModel NetModel;
NetModel *net_model_new(const Net *net, const StFile *weights);
void net_model_free(NetModel *m);
/* Run TOKENS ([NSEQ, LEN], row-major) after what ran before: *LOGITS gets
 * [NSEQ, LEN, vocab]. */
bool net_model_forward(NetModel *m, const int *tokens, int nseq, long len,
                       Array **logits, Diag *d);

#endif
