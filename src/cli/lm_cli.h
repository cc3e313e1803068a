/* lm_cli.h — what `mambalaya run` and `generate` share (cmd_lm.c). */
#ifndef MAMBALAYA_LM_CLI_H
#define MAMBALAYA_LM_CLI_H

#include "cli.h"

#include "../lm/lm.h"

typedef struct LmArgs {
  const char *model, *spec, *tokens_text, *tokens_file, *out;
  const char *prompt, *tokenizer_file; /* --prompt, --tokenizer */
  Tokenizer *tokenizer;                /* with --prompt */
  bool json;
  double max_memory; /* --max-memory; 0: what the machine has */
  int batch;         /* --batch; 0: one sequence, or the rows given */
  int ssd;           /* --ssd: an SsdMode */
  int ssd_chunk;     /* --ssd-chunk; 0: the default */
  ExecutorOpts ex;
  char executor[320]; /* executor_name's, set by lm_start */
  char *file_text; /* --tokens-file's contents */
  /* The token ids, [nseq, len] row-major. */
  int *tokens;
  int nseq, len;
  InputSet *inputs; /* the run's (Parsed): what --out may not replace */
} LmArgs;

/* The options run and generate share (--model, --tokens, ...), into an
 * LmArgs; with executor_options at its ex. */
extern const OptTable lm_options;
#define USE_LM(Args) {&lm_options, offsetof(Args, lm), NULL}

void lm_args_init(LmArgs *o);
void lm_args_free(LmArgs *o);
/* The tokens and the model, once --out is known to be writable: 0, or
 * an exit status with O freed. */
int lm_start(const char *cmd, LmArgs *o, Lm **m);
/* lm_start's other end: the model M and O freed; returns STATUS. */
int lm_finish(Lm *m, LmArgs *o, int status);
/* The executor's options for a pass (LAST_ONLY: the last token's logits
 * only). */
LmOpts lm_pass_opts(const LmArgs *o, Pool *pool, bool last_only);
/* Refuse a run (WHAT, for the message) whose weights, first pass
 * (LAST_ONLY: logits of the last token only; RECORD: the mixer outputs
 * too) and RESULTS bytes of results held beside them exceed the budget. */
int check_run_memory(const char *cmd, const LmArgs *o, Lm *m,
                     const char *what, bool last_only, bool record,
                     double results);
/* NaN weights make NaN logits, and argmax then picks token 0: say so. */
void warn_nonfinite(const char *cmd, const Array *logits);
/* "1,2;3,4": NSEQ rows of LEN tokens. */
void tokens_meta(Buf *b, const int *tokens, int nseq, int len);
/* Print NSEQ rows of LEN tokens on stdout, a line each: "1,2\n3,4\n"
 * (what generate prints without --prompt). */
void print_token_rows(const int *tokens, int nseq, int len);
/* Write ARRAYS (logits first) and the model's decode state to PATH,
 * never over one of the run's inputs IN: an exit status. */
int save_results(const Lm *m, const char *path, const Tensors *arrays,
                 const char *tokens, const char *strategy,
                 const InputSet *in);

/* --json: the figures both commands report; ids as an array; the text of
 * ids as a string (null if not UTF-8); the object printed. */
void lm_json_common(json_t *j, const LmArgs *o, const Lm *m);
json_t *lm_json_ids(const int *ids, int n);
json_t *lm_json_text(const Tokenizer *t, const int *ids, int n);
void lm_print_json(json_t *j);

#endif
